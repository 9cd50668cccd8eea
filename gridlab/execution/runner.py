"""Running the analyses of one (cell, shard): pure torch and Arrow, no Ray (the actors wrap this).

    >>> runner = ShardRunner(grid_results, data_dir, cache_dir, torch.device("cpu"))
    >>> outcome = runner.run(job)    # one Parquet part per analysis of the job that is not written yet
    >>> outcome.paths, outcome.padding_efficiency, outcome.encoder_share

A model and its dataset are loaded once per runner and cell. A shard's instances are the positions
[start, stop) of the analysed test rows (a fixed sample, `plan`) in length order, so its batches pad little. Each batch
is encoded once (`forward_once`) and that pass is shared by every analysis of the shard
(docs/analyses.md#conventions, "One shared pass"); the outcome says what share of the shard's time it took.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from gridlab.analyses.base import Analysis, AnalysisContext, Columns, GridAnalysis, InstanceAnalysis, ModelAnalysis
from gridlab.analyses.common import forward_once
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.config.schema import CellConfig
from gridlab.data.batching import Batch, analysis_order, iterate_batches, sample_rows, sequence_lengths
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.errors import GridlabError
from gridlab.execution.plan import ShardJob, mark_shard_order
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.embeddings import initial_embeddings
from gridlab.models.factory import build_model
from gridlab.models.seq2seq import Seq2Seq
from gridlab.results.parts import common_columns, model_common_columns, rows_table, with_params, write_part
from gridlab.results.shards import SPLIT
from gridlab.store.layout import CellFiles, GridWorkspace
from gridlab.store.models import ModelStore
from gridlab.store.store import Store


@dataclass
class LoadedCell:
    config: CellConfig
    data: PreparedDataset
    model: AttentionClassifier | Seq2Seq
    orders: dict[int, np.ndarray] = field(default_factory=dict)  # population -> its test rows, in length order

    def shard_rows(self, start: int, stop: int, population: int) -> pa.Table:
        """The test rows at positions [start, stop) of the analysed rows (a fixed sample of `population` of
        them, `plan`) put in length order."""
        split = self.data.splits[SPLIT]
        if population not in self.orders:
            analysed = sample_rows(split.num_rows, population)
            self.orders[population] = analysed[analysis_order(sequence_lengths(split.take(pa.array(analysed))))]
        return split.take(pa.array(self.orders[population][start:stop]))


@dataclass(frozen=True)
class ShardOutcome:
    """What a shard wrote and what it cost: tokens that were real against the padded batches' size, and the
    share of its time spent in the shared encoder pass."""

    paths: list[Path]
    real_tokens: int = 0  # tokens of the instances, <sos>/<eos> included
    padded_tokens: int = 0  # batch size x longest instance, summed over batches
    seconds: float = 0.0
    encoder_seconds: float = 0.0  # the shared pass (this cell's and its seed peers')
    model_seconds: dict[str, float] = field(default_factory=dict)  # per-model analysis -> its own time

    @property
    def padding_efficiency(self) -> float | None:
        return self.real_tokens / self.padded_tokens if self.padded_tokens else None

    @property
    def encoder_share(self) -> float | None:
        return self.encoder_seconds / self.seconds if self.seconds > 0 and self.padded_tokens else None


class ShardRunner:
    def __init__(
        self,
        grid_results: Path,
        data_dir: Path,
        cache_dir: Path,
        device: torch.device,
        analyses: Mapping[str, type[Analysis]] = IMPLEMENTATIONS,
    ):
        """`analyses`: the driver's registry, given to actors so that plug-ins registered there run too."""
        self.workspace = GridWorkspace(grid_results)
        self.analyses = analyses
        self.data_dir = data_dir
        self.cache_dir = cache_dir
        self.device = device
        self._cells: dict[str, LoadedCell] = {}

    def missing(self, job: ShardJob) -> list[str]:
        """The analyses of the job whose part is not written yet."""
        return [a for a in job.analyses if not self.workspace.part(a, job.cell_id, job.shard.index).exists()]

    def run(self, job: ShardJob) -> ShardOutcome:
        started = time.perf_counter()
        todo = self.missing(job)
        if not todo:
            return ShardOutcome([])
        mark_shard_order(self.workspace)
        cell = self.load(job.cell_id)
        contexts = {
            a: AnalysisContext(
                job.cell_id,
                cell.model,
                self.device,
                self.analyses[a].info.params.model_validate(job.analyses[a]),
                cell.config,
                lambda: initial_embeddings(cell.config, cell.data, self.data_dir, self.cache_dir),
                cell.data.splits[SPLIT],
                cell.data.label_names,
            )
            for a in todo
        }
        chosen = {a: self.analyses[a] for a in todo}
        written, model_seconds = [], {}
        for a, analysis in chosen.items():
            if issubclass(analysis, ModelAnalysis):
                begun = time.perf_counter()
                written.append(self._run_model_level(job, cell, analysis, contexts[a]))
                model_seconds[a] = time.perf_counter() - begun
        batched = {a: analysis for a, analysis in chosen.items() if not issubclass(analysis, ModelAnalysis)}
        if not batched:
            return ShardOutcome(written, seconds=time.perf_counter() - started, model_seconds=model_seconds)
        model = _classifier(job.cell_id, cell.model)
        peers = (
            [_classifier(peer, self.load(peer).model) for peer in job.peers]
            if any(issubclass(analysis, GridAnalysis) for analysis in batched.values())
            else []
        )
        table = cell.shard_rows(job.shard.start, job.shard.stop, job.shard.population)
        batches = iterate_batches(table, job.batch_size, sentences=hasattr(model, "word_attention"))
        analysed = analyse_batches(batches, model, batched, contexts, peers, job.peers, self.device)
        for analysis_id, analysis in batched.items():
            written.append(self._write(job, cell.config, analysis, analysed.common, analysed.columns[analysis_id]))
        return ShardOutcome(
            written,
            analysed.real_tokens,
            analysed.padded_tokens,
            time.perf_counter() - started,
            analysed.encoder_seconds,
            model_seconds,
        )

    def _run_model_level(
        self, job: ShardJob, cell: LoadedCell, analysis: type[ModelAnalysis], context: AnalysisContext
    ) -> Path:
        """A per-model analysis: one part (shard 0) over the whole test split, one row per setting."""
        rows = analysis.run_model(context, cell.data)
        n = len(next(iter(rows.values())))
        columns = model_common_columns(job.grid, job.cell_id, cell.config, SPLIT, analysis.version, n)
        path = self.workspace.part(analysis.info.id, job.cell_id, 0)
        write_part(path, with_params(rows_table(columns, rows, analysis.schema), job.analyses[analysis.info.id]))
        return path

    def _write(
        self, job: ShardJob, config: CellConfig, analysis: type[Analysis], common: list[dict], batches: list[Columns]
    ) -> Path:
        joined = {k: np.concatenate([c[k] for c in common]) for k in common[0]}
        specific = {f.name: np.concatenate([b[f.name] for b in batches]).tolist() for f in analysis.schema}
        columns = common_columns(job.grid, job.cell_id, config, SPLIT, analysis.version, **joined)
        path = self.workspace.part(analysis.info.id, job.cell_id, job.shard.index)
        table = rows_table(columns, specific, analysis.schema)
        write_part(path, with_params(table, job.analyses[analysis.info.id], job.shard.extent()))
        return path

    def load(self, cell_id: str) -> LoadedCell:
        """The cell's config, prepared dataset and trained model (eval mode, on the runner's device), loaded once."""
        if cell_id not in self._cells:
            folder = ModelStore(self.workspace.models).cell(cell_id)
            if folder.state() != "trained":  # on another node than the one it was published from
                Store.bring_down(folder.path)
            if folder.state() != "trained":
                raise GridlabError(f"cell {cell_id} is not trained (run `gridlab launch` first)")
            stored = folder.read(CellFiles.CONFIG)
            stored.pop("cell_id", None)
            config = CellConfig.model_validate(stored)
            data = load_dataset(config.dataset, self.data_dir, self.cache_dir, config.data)
            reference = folder.read(CellFiles.DATA)
            if data.vocab.digest() != reference["vocab_sha256"]:
                raise GridlabError(
                    f"cell {cell_id}: the dataset's vocabulary differs from the one it was trained "
                    f"with (cache key {reference['cache_key']} vs {data.cache_key}); retrain with --force"
                )
            model = build_model(config, data)
            model.load_state_dict(torch.load(folder.checkpoint, map_location="cpu", weights_only=True))
            self._cells[cell_id] = LoadedCell(config, data, model.to(self.device).eval())
        return self._cells[cell_id]


@dataclass
class AnalysedBatches:
    """The columns every analysis computed over a run of batches, the rows' common columns, and the cost."""

    columns: dict[str, list[Columns]]  # analysis id -> one Columns per batch
    common: list[dict[str, np.ndarray]] = field(default_factory=list)  # instance_id, length, ... per batch
    real_tokens: int = 0
    padded_tokens: int = 0
    encoder_seconds: float = 0.0


def analyse_batches(
    batches: Iterable[Batch],
    model: AttentionClassifier,
    analyses: Mapping[str, type[Analysis]],
    contexts: Mapping[str, AnalysisContext],
    peers: list[AttentionClassifier],
    peer_ids: tuple[str, ...],
    device: torch.device,
) -> AnalysedBatches:
    """Every per-instance and grid analysis over the batches, each batch encoded once (this model's pass and
    its seed peers') and that pass shared by all of them."""
    out = AnalysedBatches({a: [] for a in analyses})
    for batch in batches:
        batch = batch.to(device)
        out.real_tokens += int(batch.lengths.sum())
        out.padded_tokens += batch.ids.numel()
        encoding = _clock(device)
        shared = forward_once(model, batch)
        peer_passes = [forward_once(peer, batch) for peer in peers]
        out.encoder_seconds += _clock(device) - encoding
        out.common.append(_common_arrays(shared))
        for analysis_id, analysis in analyses.items():
            if issubclass(analysis, GridAnalysis):
                columns = analysis.run(contexts[analysis_id], shared, peer_passes, list(peer_ids))
            elif issubclass(analysis, InstanceAnalysis):
                columns = analysis.run(contexts[analysis_id], shared)
            else:
                raise TypeError(f"{analysis.__name__} is not an instance, grid or model analysis")
            out.columns[analysis_id].append(columns)
    return out


def _clock(device: torch.device) -> float:
    """Seconds now, after the device's queued work (CUDA runs asynchronously; a bare timer would miss it)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _classifier(cell_id: str, model: AttentionClassifier | Seq2Seq) -> AttentionClassifier:
    """The model of a cell with per-instance analyses: a classifier (the registry gives those only to classifiers)."""
    if not isinstance(model, AttentionClassifier):
        raise GridlabError(f"cell {cell_id}: per-instance analyses need a classifier, not {type(model).__name__}")
    return model


def _common_arrays(shared) -> dict[str, np.ndarray]:
    return {
        "instance_id": shared.batch.instance_ids.cpu().numpy(),
        "length": shared.lengths.cpu().numpy(),
        "label": shared.batch.labels.cpu().numpy(),
        "pred": shared.pred.cpu().numpy(),
        "max_attention": shared.alpha.max(-1).values.double().cpu().numpy(),
    }
