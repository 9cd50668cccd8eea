"""Running the analyses of one (cell, shard): pure torch and Arrow, no Ray (the actors wrap this).

    >>> runner = ShardRunner(grid_results, data_dir, cache_dir, torch.device("cpu"))
    >>> runner.run(job)          # writes one Parquet part per analysis of the job that is not written yet

A model and its dataset are loaded once per runner and cell. Each batch is encoded once (`forward_once`)
and that pass is shared by every analysis of the shard (docs/analyses.md#conventions, "One shared pass").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gridlab.analyses.base import Analysis, AnalysisContext, Columns, GridAnalysis, InstanceAnalysis, ModelAnalysis
from gridlab.analyses.common import forward_once
from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.config.schema import CellConfig
from gridlab.data.batching import iterate_batches
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.errors import GridlabError
from gridlab.execution.plan import SPLIT, ShardJob
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.embeddings import initial_embeddings
from gridlab.models.factory import build_model
from gridlab.models.seq2seq import Seq2Seq
from gridlab.results.parts import common_columns, model_common_columns, rows_table, write_part
from gridlab.store.layout import CellFiles, GridWorkspace
from gridlab.store.models import ModelStore


@dataclass
class LoadedCell:
    config: CellConfig
    data: PreparedDataset
    model: AttentionClassifier | Seq2Seq


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

    def run(self, job: ShardJob) -> list[Path]:
        todo = self.missing(job)
        if not todo:
            return []
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
        written = [
            self._run_model_level(job, cell, analysis, contexts[a])
            for a, analysis in chosen.items()
            if issubclass(analysis, ModelAnalysis)
        ]
        batched = {a: analysis for a, analysis in chosen.items() if not issubclass(analysis, ModelAnalysis)}
        if not batched:
            return written
        model = _classifier(job.cell_id, cell.model)
        peers = (
            [_classifier(peer, self.load(peer).model) for peer in job.peers]
            if any(issubclass(analysis, GridAnalysis) for analysis in batched.values())
            else []
        )
        table = cell.data.splits[SPLIT].slice(job.shard.start, job.shard.stop - job.shard.start)
        collected: dict[str, list[Columns]] = {a: [] for a in todo}
        common: list[dict] = []
        for batch in iterate_batches(table, job.batch_size, sentences=hasattr(model, "word_attention")):
            batch = batch.to(self.device)
            shared = forward_once(model, batch)
            peer_passes = [forward_once(peer, batch) for peer in peers]
            common.append(_common_arrays(shared))
            for analysis_id, analysis in batched.items():
                if issubclass(analysis, GridAnalysis):
                    columns = analysis.run(contexts[analysis_id], shared, peer_passes, list(job.peers))
                elif issubclass(analysis, InstanceAnalysis):
                    columns = analysis.run(contexts[analysis_id], shared)
                else:
                    raise TypeError(f"{analysis.__name__} is not an instance, grid or model analysis")
                collected[analysis_id].append(columns)
        for analysis_id, analysis in batched.items():
            written.append(self._write(job, cell.config, analysis, common, collected[analysis_id]))
        return written

    def _run_model_level(
        self, job: ShardJob, cell: LoadedCell, analysis: type[ModelAnalysis], context: AnalysisContext
    ) -> Path:
        """A per-model analysis: one part (shard 0) over the whole test split, one row per setting."""
        rows = analysis.run_model(context, cell.data)
        n = len(next(iter(rows.values())))
        columns = model_common_columns(job.grid, job.cell_id, cell.config, SPLIT, analysis.version, n)
        path = self.workspace.part(analysis.info.id, job.cell_id, 0)
        write_part(path, rows_table(columns, rows, analysis.schema))
        return path

    def _write(
        self, job: ShardJob, config: CellConfig, analysis: type[Analysis], common: list[dict], batches: list[Columns]
    ) -> Path:
        joined = {k: np.concatenate([c[k] for c in common]) for k in common[0]}
        specific = {f.name: np.concatenate([b[f.name] for b in batches]).tolist() for f in analysis.schema}
        columns = common_columns(job.grid, job.cell_id, config, SPLIT, analysis.version, **joined)
        path = self.workspace.part(analysis.info.id, job.cell_id, job.shard.index)
        write_part(path, rows_table(columns, specific, analysis.schema))
        return path

    def load(self, cell_id: str) -> LoadedCell:
        """The cell's config, prepared dataset and trained model (eval mode, on the runner's device), loaded once."""
        if cell_id not in self._cells:
            folder = ModelStore(self.workspace.models).cell(cell_id)
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
