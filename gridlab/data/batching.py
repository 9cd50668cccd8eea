"""Prepared split (Arrow) -> padded tensor batches that every model and analysis consumes.

    >>> for batch in iterate_batches(data, "train", batch_size=32, shuffle=True, seed=0):
    ...     logits = model(batch)

Sequences get `<sos>`/`<eos>` around them, as J&W did; those two and the padding are outside `mask`, so
attention never lands on them. Documents also come as sentences (`sentences`), for hierarchical models.
Annotator rationales are aligned with `ids` (False on the added tokens and padding).

Training batches are either a seeded shuffle of the split (default) or, with `bucketed`, J&W's batches of
similar lengths: sort by length plus seeded noise, cut into consecutive batches, shuffle the batch order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from gridlab.data.vocab import EOS_ID, PAD_ID, SOS_ID

Tensor = torch.Tensor


@dataclass(frozen=True)
class Sentences:
    """A document as a sequence of sentences (no `<sos>`/`<eos>`)."""

    ids: Tensor  # (B, S, W) word ids
    mask: Tensor  # (B, S, W) real words
    doc_mask: Tensor  # (B, S) real sentences


@dataclass(frozen=True)
class Batch:
    ids: Tensor  # (B, T) <sos> tokens <eos>, padded with <pad>
    mask: Tensor  # (B, T) True where attention may go: the tokens, not <sos>/<eos>/<pad>
    lengths: Tensor  # (B,) tokens including <sos>/<eos>
    labels: Tensor  # (B,) class index (-1 for translation)
    instance_ids: Tensor  # (B,) the instance's index in its split
    query_ids: Tensor | None = None  # (B, Q) hypothesis / question, with <sos>/<eos>
    query_mask: Tensor | None = None  # (B, Q)
    query_lengths: Tensor | None = None  # (B,)
    target_ids: Tensor | None = None  # (B, U) <sos> target <eos> (translation)
    target_lengths: Tensor | None = None  # (B,)
    sentences: Sentences | None = None
    rationale: Tensor | None = None  # (B, T) annotated tokens

    @property
    def size(self) -> int:
        return self.ids.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        moved: dict[str, Tensor | Sentences] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Tensor):
                moved[f.name] = value.to(device)
            elif isinstance(value, Sentences):
                moved[f.name] = Sentences(*(t.to(device) for t in (value.ids, value.mask, value.doc_mask)))
        return replace(self, **moved)  # type: ignore[arg-type]  # each field keeps its own type

    def rows(self, index: Tensor) -> Batch:
        """The batch of rows `index` (n,) (repeats allowed), every per-row field taken alike."""
        taken: dict[str, Tensor | Sentences] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Tensor):
                taken[f.name] = value[index]
            elif isinstance(value, Sentences):
                taken[f.name] = Sentences(value.ids[index], value.mask[index], value.doc_mask[index])
        return replace(self, **taken)  # type: ignore[arg-type]  # each field keeps its own type


def pad_with_markers(sequences: Sequence[Sequence[int]]) -> tuple[Tensor, Tensor, Tensor]:
    """(ids, mask, lengths) for `<sos> seq <eos>` rows padded to the longest."""
    lengths = np.fromiter((len(s) + 2 for s in sequences), dtype=np.int64, count=len(sequences))
    ids = np.full((len(sequences), int(lengths.max(initial=2))), PAD_ID, dtype=np.int64)
    mask = np.zeros(ids.shape, dtype=bool)
    for i, seq in enumerate(sequences):
        ids[i, 0] = SOS_ID
        ids[i, 1 : len(seq) + 1] = seq
        ids[i, len(seq) + 1] = EOS_ID
        mask[i, 1 : len(seq) + 1] = True
    return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(lengths)


def split_sentences(sequences: Sequence[Sequence[int]], starts: Sequence[Sequence[int]]) -> Sentences:
    docs = [
        np.split(np.asarray(seq, dtype=np.int64), np.asarray(s[1:], dtype=np.int64))
        for seq, s in zip(sequences, starts)
    ]
    docs = [[sent for sent in doc if len(sent)] or [np.zeros(0, np.int64)] for doc in docs]
    n_sent = max(len(doc) for doc in docs)
    n_word = max(max(len(sent) for sent in doc) for doc in docs) or 1
    ids = np.full((len(docs), n_sent, n_word), PAD_ID, dtype=np.int64)
    for b, doc in enumerate(docs):
        for s, sent in enumerate(doc):
            ids[b, s, : len(sent)] = sent
    mask = ids != PAD_ID
    return Sentences(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(mask.any(-1)))


def collate(rows: dict[str, list], sentences: bool = False) -> Batch:
    """A batch from column lists (as `Table.to_pydict()` gives them for the selected rows)."""
    ids, mask, lengths = pad_with_markers(rows["ids"])
    batch = Batch(
        ids=ids,
        mask=mask,
        lengths=lengths,
        labels=torch.tensor(rows["label"], dtype=torch.long),
        instance_ids=torch.tensor(rows["instance_id"], dtype=torch.long),
    )
    extra: dict = {}
    if "query_ids" in rows:
        extra.update(zip(("query_ids", "query_mask", "query_lengths"), pad_with_markers(rows["query_ids"])))
    if "target_ids" in rows:
        target, _, target_lengths = pad_with_markers(rows["target_ids"])
        extra.update(target_ids=target, target_lengths=target_lengths)
    if "rationale" in rows:
        marked = torch.zeros(ids.shape, dtype=torch.bool)
        for i, flags in enumerate(rows["rationale"]):
            marked[i, 1 : len(flags) + 1] = torch.tensor(flags, dtype=torch.bool)
        extra["rationale"] = marked
    if sentences:
        extra["sentences"] = split_sentences(rows["ids"], rows["sentence_starts"])
    return replace(batch, **extra)


BATCH_COLUMNS = ("instance_id", "label", "ids", "query_ids", "target_ids", "sentence_starts", "rationale")


LENGTH_NOISE = 0.1  # J&W's noise_frac: a length-L instance sorts as if it had L + U[floor(-0.1 L), ceil(0.1 L))


def bucketed_batches(lengths: np.ndarray, batch_size: int, seed: int, noise: float = LENGTH_NOISE) -> list[np.ndarray]:
    """Row indices of each batch: rows sorted by length plus seeded integer noise, cut into consecutive
    batches, the batches in a seeded random order (J&W's `get_sorting_index_with_noise_from_lengths` and
    shuffled batch starts). Similar lengths waste little padding; the noise and the batch shuffle keep
    the batches different from epoch to epoch. One generator seeded by `seed` draws both, and the sort
    is stable, so a seed always gives the same batches."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    low, high = np.floor(-noise * lengths).astype(np.int64), np.ceil(noise * lengths).astype(np.int64)
    jitter = rng.integers(low, np.maximum(high, low + 1))  # high is exclusive, as in numpy's randint
    order = np.argsort(lengths + jitter, kind="stable")
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def sequence_lengths(table: pa.Table) -> np.ndarray:
    """Tokens per row (of the premise for pair tasks, of the source for translation), without markers."""
    return pc.list_value_length(table["ids"]).to_numpy(zero_copy_only=False).astype(np.int64)


SUBSET_SEED = 2019  # the draw of every sample of a split: one subset per split, whatever the cell's seed


def sample_rows(rows: int, n: int) -> np.ndarray:
    """n of a split's `rows` positions, ascending: a fixed random sample, never the split's head. A split in
    file order may be sorted by label (IMDB lists its negative reviews, then its positive ones), and its
    first rows are then a single class."""
    if n >= rows:
        return np.arange(rows)
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(rows)[:n])


def training_rows(rows: int, max_train: int | None, subset: str) -> np.ndarray | None:
    """The positions of the training rows a cell uses, ascending, or None for all of them: with `max_train`,
    a fixed random sample of the split (`sample`) or its first rows (`head`)."""
    if max_train is None or max_train >= rows:
        return None
    return np.arange(max_train) if subset == "head" else sample_rows(rows, max_train)


def analysis_order(lengths: np.ndarray) -> np.ndarray:
    """Row positions shortest first, ties by position: cut into batches, rows of one batch have similar
    lengths, so the analyses pad little (J&W sort their test set the same way). Deterministic, so shards cut
    from this order hold the same instances whoever plans them."""
    return np.lexsort((np.arange(len(lengths)), lengths))


def iterate_batches(
    table: pa.Table,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    sentences: bool = False,
    limit: int | None = None,
    bucketed: bool = False,
) -> Iterator[Batch]:
    """Batches over a split in order, shuffled by `seed`, or (`bucketed`, whatever `shuffle` says) of
    similar lengths in a seeded order; the same seed gives the same batches. `limit` keeps the first rows."""
    table = table.select([c for c in BATCH_COLUMNS if c in table.column_names])
    n = table.num_rows if limit is None else min(limit, table.num_rows)
    if bucketed:
        # J&W sort by length with <sos>/<eos> counted: + 2, which changes the noise range of short rows
        chunks = bucketed_batches(sequence_lengths(table.slice(0, n)) + 2, batch_size, seed)
    else:
        order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
        chunks = [order[start : start + batch_size] for start in range(0, n, batch_size)]
    for chunk in chunks:
        chosen = table.take(pa.array(chunk))
        yield collate(chosen.to_pydict(), sentences=sentences)
