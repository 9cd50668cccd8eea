"""Raw examples -> tokenised, id-encoded splits, cached as Parquet keyed by the sources and the parameters.

    >>> data = load_dataset("sst", data_dir, cache_dir, DataConfig())
    >>> data.splits["train"].column_names
    ['instance_id', 'source_id', 'label', 'tokens', 'ids', 'sentence_starts']

The cache key is the sha256 of (dataset id, each source file's sha256, the resolved `DataConfig`,
PREPARE_VERSION): a changed file or parameter builds a new entry, the same ones are read back in
milliseconds. An entry is written to a temporary folder and renamed into place, so a killed process never
leaves a half-written entry that a later load would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gridlab.data.catalog import DATASETS, SYNTHETIC
from gridlab.data.config import DataConfig
from gridlab.data.examples import RawExample
from gridlab.data.files import verify_files
from gridlab.data.presence import Presence, check_presence
from gridlab.data.spec import SPLITS, DatasetSpec, Task
from gridlab.data.tokenize import rationale_mask, tokenize
from gridlab.data.vocab import Vocab
from gridlab.errors import DataError
from gridlab.store.layout import CacheFiles
from gridlab.store.temporary import new_folder

PREPARE_VERSION = 1
DERIVED_FRACTIONS = {"train": 0.8, "dev": 0.1, "test": 0.1}


@dataclass(frozen=True)
class PreparedDataset:
    """A dataset ready for batching: one Arrow table per split plus the vocabularies and label names."""

    id: str
    task: Task
    config: DataConfig
    label_names: tuple[str, ...]
    vocab: Vocab
    target_vocab: Vocab | None
    splits: dict[str, pa.Table]
    derived_splits: bool
    cache_key: str


def load_dataset(dataset_id: str, data_dir: Path, cache_dir: Path, config: DataConfig) -> PreparedDataset:
    """The prepared dataset, from the cache when the sources and parameters match, else built and cached."""
    spec = DATASETS[dataset_id]
    config = spec.resolve(config)
    presence = check_presence(spec, data_dir, config)
    key = cache_key(spec, presence, config)
    entry = cache_dir / CacheFiles.prepared(dataset_id, key)
    if not (entry / CacheFiles.META).is_file():
        verify_release(spec, data_dir)
        _write_entry(entry, _build(spec, presence, config))
    return _read_entry(entry, spec, config, key)


def verify_release(spec: DatasetSpec, data_dir: Path) -> None:
    """Refuses release files whose sha256 differs from the published one (a truncated download, an edited
    copy), before anything is built from them. It runs when a cache entry is built: the entry's key covers
    the files' digests, so a file that changes always comes back through here, and a relaunch hashes nothing
    it has not hashed before."""
    for check in verify_files(spec, data_dir):
        if check.verdict == "mismatch":
            raise DataError(
                f"dataset '{spec.id}': {check.found} is not the published release ({check.detail}); "
                f"see `gridlab data check {spec.id}`, then fetch it again"
            )


def cache_key(spec: DatasetSpec, presence: Presence, config: DataConfig) -> str:
    payload = {
        "dataset": spec.id,
        "sources": presence.file_digests(),
        "config": _key_config(config),
        "version": PREPARE_VERSION,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _key_config(config: DataConfig) -> dict:
    """The resolved config as the cache key reads it: a field added later is left out at the value that
    builds what was built before it existed, so the existing entries stay valid."""
    payload = config.model_dump(mode="json")
    for field, before in (("carve_unit", "instance"), ("vocabulary", "train")):
        if payload[field] == before:
            payload.pop(field)
    return payload


@dataclass(frozen=True)
class _Built:
    meta: dict
    tables: dict[str, pa.Table]


def _build(spec: DatasetSpec, presence: Presence, config: DataConfig) -> _Built:
    raw = _raw_splits(spec, presence, config)
    encoded = {split: _tokenize_split(examples, spec, config) for split, examples in raw.items()}
    encoded = {split: _length_filter(rows, config) for split, rows in encoded.items()}
    label_names = _label_names(spec, config, raw["train"], encoded["train"])
    vocab = _vocabulary(encoded, config)
    target_vocab = (
        Vocab.build((row["target_tokens"] for row in encoded["train"]), config.min_count or 1)
        if spec.task == "translation"
        else None
    )
    tables = {split: _to_table(rows, spec, label_names, vocab, target_vocab) for split, rows in encoded.items()}
    meta = {
        "dataset": spec.id,
        "task": spec.task,
        "label_names": list(label_names),
        "vocab": list(vocab.itos),
        "target_vocab": list(target_vocab.itos) if target_vocab else None,
        "derived_splits": presence.derived,
        "config": config.model_dump(mode="json"),
        "rows": {split: table.num_rows for split, table in tables.items()},
    }
    return _Built(meta, tables)


def _vocabulary(encoded: dict[str, list[dict]], config: DataConfig) -> Vocab:
    """Train's words seen at least `min_count` times; with `vocabulary: all` every word of every split, for an
    encoder that reads words by their spelling (its pieces), where an unseen word is no unknown word."""
    rows = [row for split in SPLITS for row in encoded[split]] if config.vocabulary == "all" else encoded["train"]
    min_count = 1 if config.vocabulary == "all" else config.min_count or 1
    return Vocab.build((seq for row in rows for seq in (row["tokens"], row.get("query_tokens") or ())), min_count)


def _raw_splits(spec: DatasetSpec, presence: Presence, config: DataConfig) -> dict[str, list[RawExample]]:
    """Official splits as read; dev carved from train when the release has none; all three carved anew from
    the pooled rows when the grid sets `test_fraction`, or when the copy is partial and the grid allows it."""
    reader = spec.reader_for(config)
    folder = presence.folder
    keep = spec.keep or (lambda _: True)
    official = {s: [e for e in reader.read(folder, s) if keep(e)] for s in presence.present_splits}
    rng = np.random.default_rng(config.split_seed)
    if config.test_fraction or presence.derived:
        pooled = [e for s in spec.official_splits if s in official for e in official[s]]
        groups = [e.text for e in pooled] if config.carve_unit == "premise" else None
        return _carve(pooled, _pooled_fractions(config), rng, groups)
    if "dev" not in official:
        fraction = config.dev_fraction
        assert fraction is not None  # resolved: set whenever the release has no dev split
        carved = _carve(official["train"], {"train": 1 - fraction, "dev": fraction}, rng)
        official.update(carved)
    return {split: official[split] for split in SPLITS}


def _pooled_fractions(config: DataConfig) -> dict[str, float]:
    """Shares of the pooled rows: test_fraction as test, then dev_fraction of the rest as dev; a partial copy
    without test_fraction gets DERIVED_FRACTIONS."""
    if not config.test_fraction:
        return DERIVED_FRACTIONS
    test = config.test_fraction
    dev = (1 - test) * (config.dev_fraction or 0.0)
    return {"train": 1 - test - dev, "dev": dev, "test": test}


def _carve(
    examples: list[RawExample], fractions: dict[str, float], rng: np.random.Generator, groups: list[str] | None = None
):
    """Each split's share of `examples`, drawn at random; with `groups` (a key per example), whole groups: the
    groups in random order, each split taking them until its share of examples is reached."""
    if groups is not None:
        return _carve_groups(examples, fractions, rng, groups)
    order = rng.permutation(len(examples))
    bounds = np.cumsum([0] + [round(f * len(examples)) for f in fractions.values()])
    bounds[-1] = len(examples)
    return {
        split: [examples[i] for i in np.sort(order[bounds[k] : bounds[k + 1]])] for k, split in enumerate(fractions)
    }


def _carve_groups(
    examples: list[RawExample], fractions: dict[str, float], rng: np.random.Generator, groups: list[str]
) -> dict[str, list[RawExample]]:
    keys, members = np.unique(np.asarray(groups, dtype=object), return_inverse=True)
    order = rng.permutation(len(keys))  # groups in random order
    sizes = np.bincount(members, minlength=len(keys))[order]
    ends = np.cumsum(sizes)  # examples taken once each group in `order` is
    bounds = np.cumsum([round(f * len(examples)) for f in fractions.values()])
    bounds[-1] = len(examples)
    split_of_rank = np.searchsorted(bounds, ends - sizes, side="right")  # a group goes where its first example falls
    split_of_group = np.empty(len(keys), dtype=np.int64)
    split_of_group[order] = split_of_rank
    chosen = split_of_group[members]  # (N,) split index per example
    return {split: [examples[i] for i in np.flatnonzero(chosen == k)] for k, split in enumerate(fractions)}


def _label_names(
    spec: DatasetSpec, config: DataConfig, train: list[RawExample], train_rows: list[dict]
) -> tuple[str, ...]:
    """The dataset's own classes, else the labels seen in train. bAbI under `babi_labels: vocabulary` adds
    every word the model reads in train, as J&W's output layer does: the answers are words of the stories, and
    their model picks among all words, not among the few places or objects that ever answer."""
    if spec.label_names is not None:
        return spec.label_names
    if spec.id == SYNTHETIC:
        assert config.synthetic is not None  # resolved: filled in for the synthetic task
        return tuple(str(k) for k in range(config.synthetic.n_classes))
    labels = {e.label for e in train}
    if config.babi_labels == "vocabulary":
        labels |= {token for row in train_rows for seq in (row["tokens"], row["query_tokens"]) for token in seq}
    return tuple(sorted(labels))


def _tokenize_split(examples: list[RawExample], spec: DatasetSpec, config: DataConfig) -> list[dict]:
    """Tokens of what the model reads (text, and query for pairs) lose punctuation-only tokens under
    `strip_punctuation` and are split at in-word punctuation under `inword_punctuation`; a translation target
    keeps its tokens as they are, since the model must produce them."""
    read = partial(tokenize, strip_punctuation=config.strip_punctuation, inword_punctuation=config.inword_punctuation)
    texts = read(e.text for e in examples)
    queries = read(e.query or "" for e in examples) if spec.task == "pair" else None
    targets = tokenize((e.target or "" for e in examples), lang="de") if spec.task == "translation" else None
    rows = []
    for example, text in zip(examples, texts):
        row = {
            "source_id": example.source_id,
            "label": example.label,
            "tokens": text.tokens,
            "sentence_starts": text.sentence_starts,
        }
        if queries is not None:
            row["query_tokens"] = next(queries).tokens
        if targets is not None:
            row["target_tokens"] = next(targets).tokens
        if spec.has_rationales:
            row["rationale"] = rationale_mask(text.offsets, example.rationale)
        rows.append(row)
    return rows


def _length_filter(rows: list[dict], config: DataConfig) -> list[dict]:
    low, high = config.min_length or 1, config.max_length or float("inf")
    return [row for row in rows if low <= len(row["tokens"]) <= high]


def _to_table(rows, spec, label_names, vocab: Vocab, target_vocab: Vocab | None) -> pa.Table:
    label_index = {name: i for i, name in enumerate(label_names)}
    unknown = {row["label"] for row in rows} - label_index.keys() if label_names else set()
    if unknown:
        raise DataError(f"{spec.id}: labels {sorted(unknown)} are not among {list(label_names)}")
    columns = {
        "instance_id": pa.array(np.arange(len(rows), dtype=np.int64)),
        "source_id": pa.array([row["source_id"] for row in rows], pa.string()),
        "label": pa.array([label_index.get(row["label"], -1) for row in rows], pa.int64()),
        "tokens": pa.array([row["tokens"] for row in rows], pa.list_(pa.string())),
        "ids": _id_lists([vocab.encode(row["tokens"]) for row in rows]),
        "sentence_starts": pa.array([row["sentence_starts"] for row in rows], pa.list_(pa.int32())),
    }
    if spec.task == "pair":
        columns["query_tokens"] = pa.array([row["query_tokens"] for row in rows], pa.list_(pa.string()))
        columns["query_ids"] = _id_lists([vocab.encode(row["query_tokens"]) for row in rows])
    if target_vocab is not None:
        columns["target_tokens"] = pa.array([row["target_tokens"] for row in rows], pa.list_(pa.string()))
        columns["target_ids"] = _id_lists([target_vocab.encode(row["target_tokens"]) for row in rows])
    if spec.has_rationales:
        columns["rationale"] = pa.array([row["rationale"] for row in rows], pa.list_(pa.bool_()))
    return pa.table(columns)


def _id_lists(arrays: list[np.ndarray]) -> pa.Array:
    """A list<int32> column straight from numpy (no per-token Python objects)."""
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int32, count=len(arrays))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = np.concatenate(arrays) if arrays else np.zeros(0, np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.astype(np.int32)))


def _write_entry(entry: Path, built: _Built) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = new_folder(entry.parent, f".{entry.name}-")  # the umask's modes: the cache is shared
    try:
        for split, table in built.tables.items():
            pq.write_table(table, staging / CacheFiles.split(split))
        (staging / CacheFiles.META).write_text(json.dumps(built.meta))
        try:
            os.rename(staging, entry)
        except OSError:  # another process finished the same entry first: theirs is identical
            if not (entry / CacheFiles.META).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _read_entry(entry: Path, spec: DatasetSpec, config: DataConfig, key: str) -> PreparedDataset:
    meta = json.loads((entry / CacheFiles.META).read_text())
    target = meta["target_vocab"]
    return PreparedDataset(
        id=spec.id,
        task=spec.task,
        config=config,
        label_names=tuple(meta["label_names"]),
        vocab=Vocab(tuple(meta["vocab"])),
        target_vocab=Vocab(tuple(target)) if target else None,
        splits={split: pq.read_table(entry / CacheFiles.split(split)) for split in SPLITS},
        derived_splits=meta["derived_splits"],
        cache_key=key,
    )
