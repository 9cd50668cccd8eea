"""e-SNLI's preprocessed files: counts from SOURCE.md, hand-checked rows, and agreement with SNLI.

The excerpt (tests/excerpts/esnli) keeps the first 40 lines of every member; the tests marked `release` read
the whole release from $GRIDLAB_DATA."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from gridlab.data.readers.esnli import EsnliReader
from gridlab.data.readers.snli import SnliReader


@pytest.fixture(scope="module")
def folder(data_dir: Path) -> Path:
    return data_dir / "esnli"


def test_excerpt_counts(folder: Path):
    reader = EsnliReader()
    assert reader.splits_present(folder) == {"train": False, "dev": True, "test": True}
    dev, test = reader.read(folder, "dev"), reader.read(folder, "test")
    assert Counter(e.label for e in dev) == {"entailment": 12, "neutral": 11, "contradiction": 17}
    assert Counter(e.label for e in test) == {"entailment": 16, "neutral": 11, "contradiction": 13}


@pytest.mark.release
def test_counts_and_labels_match_source_md(release_dir: Path):
    folder = release_dir / "esnli"
    reader = EsnliReader()
    assert reader.splits_present(folder) == {"train": False, "dev": True, "test": True}
    dev, test = reader.read(folder, "dev"), reader.read(folder, "test")
    assert Counter(e.label for e in dev) == {"entailment": 3329, "neutral": 3235, "contradiction": 3278}
    assert Counter(e.label for e in test) == {"entailment": 3368, "neutral": 3219, "contradiction": 3237}


def test_hand_checked_rows(folder: Path):
    dev = EsnliReader().read(folder, "dev")
    assert dev[0].text == "Two women are embracing while holding to go packages ."
    assert dev[0].query == "The sisters are hugging goodbye while holding to go packages after just eating lunch ."
    assert dev[0].label == "neutral"
    assert dev[-1].source_id == "eSNLI/labels.dev:40"


@pytest.mark.release
def test_hand_checked_last_row(release_dir: Path):
    dev = EsnliReader().read(release_dir / "esnli", "dev")
    assert dev[-1].query.startswith("A young mother tries to grab her topless child")
    assert dev[-1].source_id == "eSNLI/labels.dev:9842"


@pytest.mark.release
def test_pairs_are_snlis_gold_pairs_in_order(release_dir: Path):
    esnli = EsnliReader().read(release_dir / "esnli", "test")
    snli = SnliReader().read(release_dir / "snli", "test")
    assert [e.label for e in esnli] == [e.label for e in snli]
    assert esnli[100].text.split()[:4] == snli[100].text.replace(".", " .").split()[:4]


def test_unpacked_folder_reads_the_same(folder: Path, tmp_path: Path):
    import tarfile

    with tarfile.open(folder / "esnli_dev_test_preprocessed.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    assert EsnliReader().read(tmp_path, "dev") == EsnliReader().read(folder, "dev")
