"""The excerpts the tests read (tests/excerpts): every dataset id of the catalog reads from them with every
class in every split present, `gridlab data check`'s verification calls them what they are (not the release),
their SHA256SUMS are their bytes, and, given the whole releases, each excerpt's records are the release's own,
in the release's order."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gridlab.data.catalog import DATASETS, SYNTHETIC
from gridlab.data.files import verify_files
from gridlab.data.presence import splits_status
from gridlab.data.readers.babi import BabiReader
from tests.conftest import EXCERPTS

IDS = [i for i in DATASETS if i != SYNTHETIC]


def _present(spec, folder: Path) -> list[str]:
    return [split for split, present in splits_status(spec, folder).items() if present]


@pytest.mark.parametrize("dataset", IDS)
def test_every_dataset_reads_from_its_excerpt_with_its_classes(dataset: str, data_dir: Path) -> None:
    spec = DATASETS[dataset]
    present = _present(spec, data_dir)
    assert present, f"{dataset}: no split in {data_dir / spec.folder}"
    keep = spec.keep or (lambda _: True)
    for split in present:
        rows = [e for e in spec.reader.read(data_dir / spec.folder, split) if keep(e)]
        assert 20 <= len(rows) <= 100, (dataset, split, len(rows))
        if spec.label_names:  # every class of a classification dataset appears in every split
            assert {e.label for e in rows} == set(spec.label_names), (dataset, split)


def test_the_checksum_list_is_the_excerpt_files(data_dir: Path) -> None:
    listed = dict(
        reversed(line.split("  ", 1)) for line in (data_dir / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    )
    files = {str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file() and p.parent != data_dir}
    assert set(listed) == files - {p for p in files if p.endswith("SOURCE.md")}
    for name, digest in listed.items():
        assert hashlib.sha256((data_dir / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("folder", sorted({DATASETS[i].folder for i in IDS}))
def test_the_product_does_not_take_an_excerpt_for_the_release(folder: str, data_dir: Path) -> None:
    spec = next(DATASETS[i] for i in IDS if DATASETS[i].folder == folder)
    assert "mismatch" in {check.verdict for check in verify_files(spec, data_dir)}
    source = (data_dir / folder / "SOURCE.md").read_text(encoding="utf-8")
    assert "## What was kept" in source and "Source repository" in source
    assert "Licence" in source or "Terms" in source


def test_the_excerpts_stay_small() -> None:
    assert sum(p.stat().st_size for p in EXCERPTS.rglob("*") if p.is_file()) < 1_500_000


def _subsequence(part: list, whole: list) -> bool:
    remaining = iter(whole)
    return all(any(item == other for other in remaining) for item in part)


def _content(example) -> tuple:
    """What a record says, without its source_id (line numbers change when lines are left out)."""
    return (example.text, example.label, example.query, example.target, example.rationale)


READERS = [
    ("sst", DATASETS["sst"].reader),
    ("sst", DATASETS["sst5"].reader),
    ("imdb", DATASETS["imdb10"].reader),
    ("20newsgroups", DATASETS["20news"].reader),
    ("ag_news", DATASETS["agnews4"].reader),
    ("babi", BabiReader(1, "10k")),
    ("babi", BabiReader(19, "1k")),
    ("sick", DATASETS["sick"].reader),
    ("snli", DATASETS["snli"].reader),
    ("esnli", DATASETS["esnli"].reader),
    ("movie_rationales", DATASETS["movies"].reader),
    ("multi30k", DATASETS["multi30k"].reader),
]


@pytest.mark.release
@pytest.mark.parametrize(("folder", "reader"), READERS, ids=[f"{f}-{type(r).__name__}" for f, r in READERS])
def test_each_excerpt_is_records_of_the_release_in_its_order(folder: str, reader, data_dir: Path, release_dir: Path):
    for split, present in reader.splits_present(data_dir / folder).items():
        if not present:
            continue
        excerpt = [_content(e) for e in reader.read(data_dir / folder, split)]
        release = [_content(e) for e in reader.read(release_dir / folder, split)]
        assert len(excerpt) < len(release) and _subsequence(excerpt, release), (folder, split)
