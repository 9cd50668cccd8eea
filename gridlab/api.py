"""gridlab's Python API: one grid's results for a notebook, on this machine or in object storage.

    >>> import gridlab
    >>> results = gridlab.open("grids/quick.yaml")   # or its results: "runs/quick", "s3://bucket/runs/quick"
    >>> results.cells()                    # one row per cell: id, axes, trained / failed / pending, test metrics
    >>> results.rows("permutation")        # pandas: every part of the current cells, columns united by name
    >>> results.summary()                  # summary.parquet's rows of the current cells
    >>> results.runs()                     # their MLflow runs; a retrained cell's earlier run left out
    >>> duckdb.sql("select dataset, median(tvd_median) from rows group by 1")   # rows = results.arrow("permutation")

The current cells are the grid file's: rows of cells that an edit of the grid dropped stay on disk and are left
out. Opened from its results alone, they are the cells with a model folder there. Parts of one analysis may
differ in schema (a column added to an analysis later); their columns are united by name, null where a part
lacks one, and the hive folder name (`cell=`) never becomes a column beside `cell_id`. An object store is read
where it is, through pyarrow's filesystem: nothing is mirrored or downloaded whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from gridlab.errors import BadInput, GridlabError
from gridlab.grid.expand import ExpandedGrid, expand
from gridlab.grid.load import load_grid_file
from gridlab.results.parts import AXES
from gridlab.store.layout import CellFiles, GridWorkspace, Results, cell_of, is_part
from gridlab.store.models import ModelStore, state_of
from gridlab.store.store import Store
from gridlab.tracking.runs import cell_runs, sqlite_path

GRID_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Cell:
    """A current cell of the grid: its id and the values of its axes (`results.parts.AXES`)."""

    id: str
    axes: dict[str, Any]


class GridResults:
    """What one grid has produced, read where it lies (`filesystem` and `workspace`, whose path is inside it)."""

    def __init__(
        self,
        location: str,
        filesystem: pafs.FileSystem,
        workspace: GridWorkspace,
        tracking_uri: str | None,
        cells: list[Cell] | None = None,
    ):
        self.location = location  # as given to `open`, for messages
        self.filesystem = filesystem
        self.workspace = workspace
        self.tracking_uri = tracking_uri
        self._cells = cells  # the grid file's; None: the cells with a model folder

    @property
    def name(self) -> str:
        return self.workspace.path.name

    def __repr__(self) -> str:
        return f"GridResults({self.name!r} at {self.location})"

    def cells(self) -> pd.DataFrame:
        """One row per current cell: `cell_id`, the axes, `state` (trained / failed / pending) and, for a trained
        cell, its test metrics (`test_*`; NaN where a cell did not measure one)."""
        files = self._model_files()
        records = []
        for cell in self._current():
            state = state_of(files.get(cell.id, set()))
            metrics = self._read_json(self._model_file(cell.id, CellFiles.METRICS)) if state == "trained" else {}
            records.append(
                {
                    "cell_id": cell.id,
                    **cell.axes,
                    "state": state,
                    **{k: v for k, v in metrics.items() if k.startswith("test_")},
                }
            )
        return pd.DataFrame.from_records(records, columns=None if records else ["cell_id", *AXES, "state"])

    def arrow(self, analysis: str) -> ds.Dataset:
        """The rows of one analysis as a pyarrow dataset over the current cells' parts, schemas united by name
        (DuckDB queries it as a table; nothing is read until it is scanned)."""
        parts = self._parts(analysis)
        with self._reading():
            found = ds.dataset(parts, format="parquet", filesystem=self.filesystem)
            schemas = [fragment.physical_schema for fragment in found.get_fragments()]
        try:
            schema = pa.unify_schemas(schemas, promote_options="permissive").remove_metadata()
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise GridlabError(f"{self.location}: the parts of {analysis!r} disagree on a column: {error}") from None
        return ds.dataset(parts, schema=schema, format="parquet", filesystem=self.filesystem)

    def rows(self, analysis: str) -> pd.DataFrame:
        """The rows of one analysis for the current cells (`arrow`, read into pandas)."""
        with self._reading():
            return self.arrow(analysis).to_table().to_pandas()

    def summary(self) -> pd.DataFrame:
        """summary.parquet's rows of the current cells: one per cell, its axes and `<analysis>.<metric>` columns."""
        path = self.workspace.summary.as_posix()
        with self._reading():
            if self.filesystem.get_file_info(path).type != pafs.FileType.File:
                raise GridlabError(f"{self.location}: no summary yet ({path} is written as cells are analysed)")
            frame = pq.read_table(path, filesystem=self.filesystem).to_pandas()
        return frame[frame["cell_id"].isin(self._current_ids())].reset_index(drop=True)

    def runs(self) -> pd.DataFrame:
        """The MLflow run of each current cell, in `mlflow.search_runs`'s columns; a cell retrained with
        `--force` keeps only its new run (the old one is tagged superseded), launches' runs are left out."""
        uri = self.tracking_uri
        if uri is None:
            raise GridlabError(f"{self.location}: which MLflow store tracks this grid is unknown: pass tracking_uri=")
        db = sqlite_path(uri)
        if db is not None and not db.is_file():
            raise GridlabError(
                f"{self.location}: no MLflow store at {db} (a store in object storage stays on the machine that "
                "launched): pass tracking_uri= (the grid's `tracking_uri`)"
            )
        records = cell_runs(uri, self.name, self._current_ids())
        return pd.DataFrame.from_records(records, columns=None if records else ["run_id", "status"])

    # Where things are --------------------------------------------------------------------------------------
    def _current(self) -> list[Cell]:
        """The grid file's cells; opened from results alone, the cells whose model folder records a config."""
        if self._cells is None:
            self._cells = [
                Cell(cell_id, {axis: config.get(axis) for axis in AXES})
                for cell_id, names in sorted(self._model_files().items())
                if CellFiles.CONFIG in names
                for config in [self._read_json(self._model_file(cell_id, CellFiles.CONFIG))]
            ]
        return self._cells

    def _current_ids(self) -> set[str]:
        return {cell.id for cell in self._current()}

    def _model_files(self) -> dict[str, set[str]]:
        """Cell id -> the file names in its model folder (hidden staging folders left out), in one listing."""
        root = PurePosixPath(self.workspace.models.as_posix())
        files: dict[str, set[str]] = {}
        for info in self._listing(self.workspace.models):
            relative = PurePosixPath(info.path).relative_to(root).parts
            if len(relative) == 2 and not relative[0].startswith("."):
                files.setdefault(relative[0], set()).add(relative[1])
        return files

    def _parts(self, analysis: str) -> list[str]:
        """The parts of one analysis written for the current cells, sorted (by cell, then shard)."""
        current = self._current_ids()
        files = [PurePosixPath(info.path) for info in self._listing(self.workspace.analysis(analysis))]
        parts = sorted(str(f) for f in files if is_part(f) and cell_of(f.parent) in current)
        if not parts:
            written = sorted(
                i.base_name
                for i in self._listing(self.workspace.analyses, recursive=False)
                if i.type == pafs.FileType.Directory
            )
            raise GridlabError(
                f"{self.location}: no rows of {analysis!r} for the current cells "
                f"(analyses with rows here: {', '.join(written) or 'none'})"
            )
        return parts

    def _listing(self, folder: Path, recursive: bool = True) -> list[pafs.FileInfo]:
        selector = pafs.FileSelector(folder.as_posix(), recursive=recursive, allow_not_found=True)
        with self._reading():
            infos = self.filesystem.get_file_info(selector)
        return [i for i in infos if i.type == pafs.FileType.File or not recursive]

    def _model_file(self, cell_id: str, name: str) -> str:
        return (ModelStore(self.workspace.models).cell(cell_id).path / name).as_posix()

    def _read_json(self, path: str) -> dict[str, Any]:
        with self._reading(), self.filesystem.open_input_stream(path) as stream:
            return json.loads(stream.read())

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """An unreachable store or an unreadable file is one line (`GridlabError`), not pyarrow's traceback."""
        try:
            yield
        except OSError as error:
            raise GridlabError(f"{self.location}: {str(error).splitlines()[0]}") from None


def open_results(location: str | os.PathLike[str], tracking_uri: str | None = None) -> GridResults:
    """A grid's results from its grid file (`.yaml`), its results folder (`results_dir/<grid>`) or that folder
    in object storage (`s3://bucket/prefix/<grid>`). `tracking_uri` names the MLflow store where the grid file
    does not say (its default: `mlflow.db` beside the grid's folder)."""
    text = str(location)
    if Store.names_object_store(text):
        return _in_object_store(text.rstrip("/"), tracking_uri)
    path = Path(text)
    if path.is_file() and path.suffix in GRID_SUFFIXES:
        return _of_grid(expand(load_grid_file(path), text, check_data=False), text, tracking_uri)
    if path.is_dir():
        return _in_folder(path, text, tracking_uri)
    raise BadInput(f"{text}: expected a grid file (.yaml) or a grid's results folder (results_dir/<grid>)")


def _of_grid(grid: ExpandedGrid, location: str, tracking_uri: str | None) -> GridResults:
    cells = [Cell(c.id, {axis: getattr(c.config, axis) for axis in AXES}) for c in grid.cells]
    uri = tracking_uri or grid.tracking_uri
    filesystem, workspace = grid.store.in_place(grid.spec.name)
    return GridResults(location, filesystem, workspace, uri, cells)


def _in_folder(path: Path, location: str, tracking_uri: str | None) -> GridResults:
    folder = path.resolve()
    workspace = GridWorkspace(folder)
    if not _is_grid_folder(pafs.LocalFileSystem(), workspace):
        local = pafs.LocalFileSystem()
        grids = sorted(p.name for p in folder.iterdir() if p.is_dir() and _is_grid_folder(local, GridWorkspace(p)))
        raise BadInput(
            f"{location}: not a grid's results folder (no models/ or analyses/)"
            + (f"; the grids here: {', '.join(grids)}" if grids else "")
        )
    uri = tracking_uri or f"sqlite:///{Results(folder.parent).tracking_db}"
    return GridResults(location, pafs.LocalFileSystem(), workspace, uri)


def _in_object_store(uri: str, tracking_uri: str | None) -> GridResults:
    parent, name = uri.rsplit("/", 1)
    store = Store.of(parent)
    filesystem, workspace = store.in_place(name)
    try:
        found = _is_grid_folder(filesystem, workspace)
    except OSError as error:
        raise GridlabError(f"{uri}: {str(error).splitlines()[0]}") from None
    if not found:
        raise BadInput(f"{uri}: not a grid's results folder (no models/ or analyses/ under it)")
    # the default sqlite store never travels to the bucket: it is the one beside this machine's mirror
    default = f"sqlite:///{store.results.tracking_db}"
    return GridResults(uri, filesystem, workspace, tracking_uri or default)


def _is_grid_folder(filesystem: pafs.FileSystem, workspace: GridWorkspace) -> bool:
    infos = filesystem.get_file_info([workspace.models.as_posix(), workspace.analyses.as_posix()])
    return any(info.type == pafs.FileType.Directory for info in infos)
