"""`gridlab data list | check | fetch`: what datasets are under the data directory, are they intact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from gridlab.cli.grid_commands import JsonOption
from gridlab.cli.output import console, echo, user_errors
from gridlab.data.catalog import DATASETS
from gridlab.data.fetch import fetch_dataset, fetch_vectors, mirror_from_env
from gridlab.data.files import verify_files
from gridlab.data.inventory import default_cache_dir, inventory
from gridlab.data.vectors import VECTOR_SETS, VectorSet, vector_source, vectors_folder
from gridlab.errors import ChecksumError, DataError
from gridlab.grid.expand import data_dir_source, resolve_data_dir
from gridlab.grid.suggest import unknown

app = typer.Typer(
    help="Datasets: what is there, whether it is intact, and fetching it.", no_args_is_help=True, rich_markup_mode=None
)

DataDirOption = Annotated[
    Optional[Path],
    typer.Option(
        "--data-dir",
        help="Default: $GRIDLAB_DATA, else `gridlab config set data_dir`, else ./data, else (reading) the SST "
        "files shipped with gridlab.",
        show_default=False,
    ),
]


def _known(dataset_id: str) -> str:
    if dataset_id not in DATASETS:
        raise DataError(unknown("dataset", dataset_id, list(DATASETS)))
    return dataset_id


def _known_source(name: str) -> str:
    """A dataset id or a named word-vector set (both are fetched the same way)."""
    if name not in DATASETS and name not in VECTOR_SETS:
        raise DataError(unknown("dataset or vector set", name, [*DATASETS, *VECTOR_SETS]))
    return name


@app.command("list")
@user_errors
def list_datasets(data_dir: DataDirOption = None, as_json: JsonOption = False) -> None:
    """Every dataset id, whether its files are present (or partial), and rows per split."""
    root = resolve_data_dir(data_dir)
    datasets: list[dict[str, Any]] = []
    for status in inventory(root, default_cache_dir()):
        spec = status.spec
        carved = status.present and "dev" not in spec.official_splits
        rows = {s: status.rows.get(s, "carved" if s == "dev" and carved else None) for s in ("train", "dev", "test")}
        state = status.state if status.state != "partial" else f"partial: no {'/'.join(status.missing)}"
        datasets.append(
            {"id": spec.id, "task": spec.task, "status": state, "rows": rows, "description": spec.description}
        )
    vectors: list[dict[str, Any]] = [
        {"name": name, "dim": v.dim, "status": _vectors_status(name, root), "description": v.description}
        for name, v in VECTOR_SETS.items()
    ]
    if as_json:
        for record in [*({"dataset": d} for d in datasets), *({"vectors": v} for v in vectors)]:
            echo(json.dumps(record, sort_keys=True))
        return
    table = Table(title=f"datasets under {root}", title_justify="left")
    for column in ("id", "task", "status", "train", "dev", "test", "description"):
        table.add_column(column, no_wrap=column != "description")
    for d in datasets:
        counts = ["-" if d["rows"][s] is None else str(d["rows"][s]) for s in ("train", "dev", "test")]
        table.add_row(d["id"], d["task"], d["status"], *counts, d["description"])
    console.print(table)
    table = Table(title=f"word vectors (model.embeddings) under {vectors_folder(root)}", title_justify="left")
    for column in ("name", "dim", "status", "description"):
        table.add_column(column, no_wrap=column != "description")
    for v in vectors:
        table.add_row(v["name"], str(v["dim"]), v["status"], v["description"])
    console.print(table)
    source = data_dir_source(data_dir)[1]
    echo(
        f"looked in {root} ({source}); read another folder with --data-dir PATH, GRIDLAB_DATA=PATH, or for good "
        "with `gridlab config set data_dir PATH`"
    )


def _vectors_status(name: str, root: Path) -> str:
    try:
        source = vector_source(name, root)
    except DataError:
        return "missing"
    return f"package {source.packaged.module}" if source.packaged else "present"


@app.command("check")
@user_errors
def check(
    dataset_id: Annotated[Optional[str], typer.Argument(help="One dataset id; default: every one present.")] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Verify files against the sha256 of the known releases."""
    root = resolve_data_dir(data_dir)
    ids = [_known(dataset_id)] if dataset_id else [i for i, s in DATASETS.items() if s.files]
    failures, checked = [], 0
    for i in ids:
        checks = verify_files(DATASETS[i], root)
        if dataset_id is None and all(c.verdict == "missing" for c in checks):
            continue
        for c in checks:
            checked += 1
            where = c.found or root / DATASETS[i].folder / c.path
            echo(f"{i}: {where}: {c.verdict}" + (f" ({c.detail})" if c.detail else ""))
            if c.verdict in ("mismatch", "missing"):
                failures.append(f"{i}: {c.path}: {c.verdict}")
    if failures:
        missing_only = all(f.endswith("missing") for f in failures)
        hint = f"; run `gridlab data fetch {dataset_id}`" if dataset_id and missing_only else ""
        raise ChecksumError(f"{len(failures)} of {checked} files failed the check{hint}")
    echo(f"{checked} files checked, all match a known release or are unverified copies")


@app.command("fetch")
@user_errors
def fetch(
    dataset_id: Annotated[
        str, typer.Argument(help="A dataset id or a word-vector set name (see `gridlab data list`).")
    ],
    data_dir: DataDirOption = None,
    mirror: Annotated[
        Optional[str], typer.Option(help="Base URL laid out as <mirror>/<folder>/<file>; default $GRIDLAB_DATA_MIRROR.")
    ] = None,
) -> None:
    """Download a dataset's release files (or a named word-vector set's) and verify them."""
    if _known_source(dataset_id) in VECTOR_SETS:
        _fetch_vectors(VECTOR_SETS[dataset_id], resolve_data_dir(data_dir, shipped=False), mirror or mirror_from_env())
        return
    spec = DATASETS[dataset_id]
    fetched = fetch_dataset(spec, resolve_data_dir(data_dir, shipped=False), mirror or mirror_from_env(), progress=echo)
    downloaded = sum(f.downloaded for f in fetched)
    echo(f"{dataset_id}: {downloaded} downloaded, {len(fetched) - downloaded} already present; checksums ok")


def _fetch_vectors(vector_set: VectorSet, root: Path, mirror: str | None) -> None:
    packaged = vector_set.packaged
    if packaged is not None and packaged.folder() is not None and mirror is None:
        echo(f"{vector_set.name}: installed with the package {packaged.module}; nothing to fetch")
        return
    fetched = fetch_vectors(vector_set, root, mirror, progress=echo)
    echo(f"{vector_set.name}: {'downloaded' if fetched.downloaded else 'already present'} ({fetched.path})")
