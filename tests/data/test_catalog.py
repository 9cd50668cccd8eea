"""Every dataset's classes have names a person reads, kept apart from the label strings the readers match
(which decide how labels are read, the prepared-data cache and the trained models' files)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.embedded import EMBEDDED_DATA
from gridlab.data.prepare import cache_key
from gridlab.data.presence import check_presence


def test_every_dataset_with_fixed_classes_names_each_of_them():
    for spec in DATASETS.values():
        if not spec.label_names:  # bAbI: answer words read from train; the generated task; translation
            assert spec.class_names is None, spec.id
            continue
        names = spec.class_names
        assert names is not None and len(names) == len(spec.label_names), spec.id
        assert len(set(names)) == len(names) and all(n.strip() == n and n for n in names), spec.id
        assert [spec.class_name(label) for label in spec.label_names] == list(names), spec.id


def test_the_names_say_what_the_files_encode():
    named = {i: dict(zip(s.label_names or (), s.class_names or ())) for i, s in DATASETS.items()}
    assert named["sst"] == {"0": "negative", "1": "positive"}
    assert list(named["sst5"].values()) == ["very negative", "negative", "neutral", "positive", "very positive"]
    assert named["imdb"] == named["movies"] == {"neg": "negative", "pos": "positive"}
    assert named["imdb10"]["1"] == "1 star" and named["imdb10"]["10"] == "10 stars" and "5" not in named["imdb10"]
    assert named["20news"] == {"rec.sport.baseball": "baseball", "rec.sport.hockey": "hockey"}
    assert named["sick"] == {"ENTAILMENT": "entailment", "NEUTRAL": "neutral", "CONTRADICTION": "contradiction"}
    assert named["agnews4"]["Sci/Tech"] == "Sci/Tech"
    assert DATASETS["babi1"].class_name("kitchen") == "kitchen"  # answers are words already
    assert DATASETS["sst"].class_name("7") == "7"  # a label the dataset does not know stays as it is


def test_class_names_change_neither_the_labels_read_nor_the_cache():
    spec = DATASETS["sst"]
    unnamed = dataclasses.replace(spec, class_names=None)
    config = spec.resolve(DataConfig())
    keys = {cache_key(s, check_presence(s, EMBEDDED_DATA, config), config) for s in (spec, unnamed)}
    assert len(keys) == 1
    assert spec.label_names == ("0", "1")  # what the stsa files hold: renaming them would fail every read


def sections(markdown: str) -> dict[str, str]:
    """`## heading` -> the text under it, up to the next such heading."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_the_datasets_page_has_a_section_per_data_folder():
    """docs/datasets.md: what `gridlab data fetch` points at (`#<folder>`): each dataset's id, release, files
    and class names are in its folder's section."""
    page = sections((Path(__file__).resolve().parents[2] / "docs" / "datasets.md").read_text())
    for spec in DATASETS.values():
        section = page[spec.folder or spec.id]
        assert f"`{spec.id}`" in section, spec.id
        assert spec.files == () or spec.release, spec.id
        for release_file in spec.files:
            assert all(f"`{name}`" in section for name in (release_file.path, *release_file.names)), spec.id
        for name in spec.class_names or ():
            assert name in section, (spec.id, name)
