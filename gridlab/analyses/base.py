"""The analysis contract (docs/analyses.md#conventions), pure torch, no Ray: `AnalysisContext`, what an
analysis gets besides its batch, and the three kinds of analysis a module subclasses once.

    >>> context = AnalysisContext(cell_id, model.eval(), torch.device("cpu"), PermutationParams())
    >>> columns = Permutation.run(context, forward_once(model, batch))   # {"tvd_median": array (B,), ...}

A per-instance `run` is the batched implementation used in production; `reference` is a straightforward
per-instance loop of the same math, kept as the oracle for tests and the baseline for `bench/analyses.py`.
Both return one value per instance for each column of the analysis's `schema`; random draws come from
`instance_generator(cell_id, <analysis id>, instance_id)`, so rows do not depend on batching or sharding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.common import SharedPass
from gridlab.catalog.analyses import AnalysisInfo, Params, Scope
from gridlab.config.schema import CellConfig
from gridlab.data.prepare import PreparedDataset
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.seq2seq import Seq2Seq

P = TypeVar("P", bound=Params)


@dataclass(frozen=True)
class AnalysisContext(Generic[P]):
    """What an analysis gets besides the batch. `AnalysisContext[AdversarialParams]` is the context of an
    analysis whose params are `AdversarialParams` (the runner builds each from the analysis's own class)."""

    cell_id: str
    # in eval mode; a translation cell's `Seq2Seq` reaches the analyses that apply to every cell
    # (attention_ablation), the others are given classifiers only (their declaration's `applies`)
    model: AttentionClassifier | Seq2Seq
    device: torch.device
    params: P
    config: CellConfig | None = None  # the cell's resolved config: per-model analyses that train need it
    # the cell's starting embedding matrix (pretrained vectors), for analyses that train a fresh model
    initial_embeddings: Callable[[], torch.Tensor | None] = lambda: None
    # the analysed split's prepared rows (row i is instance i: its tokens, sentences, query) and the class
    # names, for analyses that write text beside their numbers (token_scores)
    split_rows: pa.Table | None = None
    label_names: tuple[str, ...] = ()

    @property
    def classifier(self) -> AttentionClassifier:
        """`model`, for the analyses the registry applies to classifiers only."""
        if not isinstance(self.model, AttentionClassifier):
            raise TypeError(f"cell {self.cell_id}: this analysis needs a classifier, not {type(self.model).__name__}")
        return self.model

    @property
    def rows(self) -> pa.Table:
        """`split_rows`, for the analyses that read the instances' text."""
        if self.split_rows is None:
            raise ValueError(f"cell {self.cell_id}: this analysis reads the instances' text and needs split_rows")
        return self.split_rows

    @property
    def cell_config(self) -> CellConfig:
        """`config`, for the per-model analyses that train a model (they need the cell's settings)."""
        if self.config is None:
            raise ValueError(f"cell {self.cell_id}: this analysis trains a model and needs the cell's config")
        return self.config


Columns = Mapping[str, Any]
"""An analysis's output for a batch (or, per model, for the cell): column name -> one value per row, for
each column of its `schema`."""


class Analysis(ABC, Generic[P]):
    """One analysis: its declaration (`info`: id, parameters, scope, the cells it applies to, the columns
    it writes and the names its summary has, from its folder's `__init__.py`, torch-free so that validation,
    planning and reports need no torch), and the functions that compute and summarise them. Subclass one of
    the three kinds below, once, in the folder's `compute.py` (the registry finds it there); mypy checks
    each bound function against the kind's signatures, with `P` the analysis's parameter class.

        class Permutation(InstanceAnalysis[PermutationParams]):   # gridlab/analyses/permutation/compute.py
            info = INFO                                           # from gridlab.analyses.permutation
            version = VERSION
            run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
    """

    scope: ClassVar[Scope]
    info: ClassVar[AnalysisInfo]
    schema: ClassVar[pa.Schema]  # `info.rows`, set from the declaration; the runner adds the common columns
    version: ClassVar[int]  # written to every row (`analysis_version`): bump it when its numbers change

    @staticmethod
    @abstractmethod
    def summarize(rows: pd.DataFrame) -> dict[str, float]:
        """One model's rows -> its summary numbers (`<analysis>.<name>` in summary.parquet and MLflow), each
        under a name of `info.summary_columns`, absent where nothing was measured."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        info = cls.__dict__.get("info")
        if info is None:
            return
        if info.scope != cls.scope:
            raise TypeError(f"{cls.__name__}: analysis {info.id} is declared with scope {info.scope}, not {cls.scope}")
        if "schema" in cls.__dict__:  # one place says what the rows hold: the declaration
            raise TypeError(f"{cls.__name__}: analysis {info.id}'s columns are its declaration's rows, not its own")
        cls.schema = info.rows


class InstanceAnalysis(Analysis[P]):
    """One row per test instance, from the batch's shared pass (`forward_once`). `reference` is the
    straightforward per-instance loop of the same math: the oracle for tests and the baseline of the bench."""

    scope = "instance"

    @staticmethod
    @abstractmethod
    def run(context: AnalysisContext[P], shared: SharedPass) -> Columns: ...

    @staticmethod
    @abstractmethod
    def reference(context: AnalysisContext[P], shared: SharedPass) -> Columns: ...


class GridAnalysis(Analysis[P]):
    """One row per test instance, comparing the cell with peer cells of the grid (`ShardJob.peers`): the
    runner passes the same batch's pass through every peer and the peers' ids."""

    scope = "grid"

    @staticmethod
    @abstractmethod
    def run(
        context: AnalysisContext[P], shared: SharedPass, peers: list[SharedPass], peer_cells: list[str]
    ) -> Columns: ...

    @staticmethod
    @abstractmethod
    def reference(
        context: AnalysisContext[P], shared: SharedPass, peers: list[SharedPass], peer_cells: list[str]
    ) -> Columns: ...


class ModelAnalysis(Analysis[P]):
    """A few rows per model (one per setting), over the whole test split: analyses that retrain or change
    the model. Written as the cell's one part (shard 0)."""

    scope = "model"

    @staticmethod
    @abstractmethod
    def run_model(context: AnalysisContext[P], data: PreparedDataset) -> Columns: ...
