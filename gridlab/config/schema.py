"""The grid file format, as typed models that reject unknown keys.

    name: jain-wallace-sst
    grid: {dataset: [sst], encoder: [lstm, cnn], seed: [0, 1, 2]}
    train: {epochs: 8}
    analyses: {permutation: {n: 100}}

`GridFile` is the file as written; `CellConfig` is one fully resolved cell (one model), whose canonical
JSON is hashed into the cell id. Only what changes the trained model belongs in `CellConfig`: where
results go, how many resources a trial gets or which analyses run never changes a cell's id.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig

if TYPE_CHECKING:
    DatasetId = str  # the Literal below is built from the catalog at run time, which mypy cannot evaluate
else:
    DatasetId = Literal[tuple(DATASETS)]
Encoder = Literal["lstm", "gru", "cnn", "average", "noenc", "transformer", "pretrained"]
Attention = Literal["additive", "dot"]
Projection = Literal["softmax", "sparsemax", "entmax15", "sparsegen"]
Architecture = Literal["flat", "han", "pair", "seq2seq"]
AttentionMode = Literal["learned", "uniform", "random"]
Device = Literal["auto", "cpu", "cuda"]

NAME_PATTERN = re.compile(r"^[a-z0-9_-]+$")
RAY_ADDRESS_PATTERN = re.compile(r"^(auto|local|ray://[A-Za-z0-9_.-]+(:\d+)?|[A-Za-z0-9_.-]+:\d+)$")


class Strict(BaseModel):
    # no inf or NaN in any number of a grid: `train.lr: .inf` is bad input, not a run that fails later
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TrainConfig(Strict):
    """Optimisation of one cell (J&W defaults: Adam 1e-3 with AMSGrad, weight decay 1e-5, batch 32, 8 epochs)."""

    epochs: int = Field(8, ge=1)
    batch_size: int = Field(32, ge=1)
    lr: float = Field(1e-3, gt=0)
    weight_decay: float = Field(
        1e-5,
        ge=0,
        description="not applied to attention parameters (J&W's single-sequence code) unless attention_weight_decay",
    )
    attention_weight_decay: bool = Field(
        False, description="weight decay on the attention parameters too, as J&W's pair-model (QA/NLI) code has it"
    )
    attention_lr_scale: float = Field(
        1.0, gt=0, description="the attention parameters' learning rate is lr times this (Meister et al.: 1 or 10)"
    )
    amsgrad: bool = True
    optimizer: Literal["adam", "adamw"] = Field(
        "adam", description="Adam (L2 weight decay added to the gradient, J&W) or AdamW (decoupled weight decay)"
    )
    warmup: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="null: a constant learning rate; a fraction f: the rate rises linearly from 0 over the first "
        "f of all optimiser steps (epochs x batches), then falls linearly to 0 at the last (the schedule BERT "
        "fine-tuning uses)",
    )
    clip_norm: float | None = Field(5.0, gt=0, description="gradient-norm clipping; null disables it")
    patience: int = Field(5, ge=1, description="epochs without dev improvement before stopping")
    max_train: int | None = Field(None, ge=1, description="train on N instances of the training split (`subset`)")
    subset: Literal["sample", "head"] = Field(
        "sample",
        description="which max_train instances: a fixed random sample of the split (the same for every cell and "
        "seed), or its first N rows (file order: one class only where a split is sorted by label, as IMDB's is)",
    )
    selection_metric: Literal["accuracy", "roc_auc"] | None = Field(
        "accuracy", description="dev metric that picks the kept epoch (J&W: roc_auc); translation always uses BLEU"
    )
    batching: Literal["shuffled", "bucketed"] = Field(
        "bucketed",
        description="training batches of similar lengths in a seeded order, with seeded noise on the lengths (J&W; "
        "little padding), or shuffled",
    )


class ModelConfig(Strict):
    """Sizes and options of the model zoo that are not grid axes by default."""

    embedding_dim: int = Field(300, ge=1)
    hidden_size: int = Field(128, ge=1, description="per direction for recurrent encoders")
    attention_size: int = Field(128, ge=1, description="hidden size of additive attention")
    cnn_variant: Literal["jain_wallace", "serrano_smith"] = "jain_wallace"
    average_activation: Literal["relu", "tanh"] = Field(
        "relu",
        description="the average encoder's activation after its projection: ReLU as J&W's paper says (A.3), or "
        "tanh as their code builds it (configurations.py, 'average+tanh')",
    )
    embeddings: str | None = Field(
        None, description="null (trained from scratch), 'word2vec', a named vector set (glove.6B.50d, ...) or a file"
    )
    oov_init: Literal["normal", "zeros"] | None = Field(
        "normal", description="start of words the pretrained vectors lack: N(0, embedding_init_std^2) or zero"
    )
    word2vec_extra: tuple[DatasetId, ...] = Field(
        (), description="datasets whose train text joins the cell's own in the word2vec corpus"
    )
    embedding_init_std: float = Field(
        0.1, gt=0, description="std of the N(0, std^2) start of embeddings without a pretrained vector"
    )
    query_embedding: Literal["shared", "separate"] = Field(
        "shared",
        description="pair models: the query (question, hypothesis) reads the premise's embedding matrix, or a "
        "matrix of its own with the same start (J&W's code: one per encoder)",
    )
    pair_output: Literal["context_and_query", "context"] = Field(
        "context_and_query",
        description="pair models: the output reads the attention's context and the query's summary, "
        "W tanh(W_c c + W_q q) (J&W's code), or the context alone, W c (Vashishth et al. 3.2: the query "
        "reaches the output only through attention)",
    )
    dropout: float = Field(0.0, ge=0, lt=1)
    transformer_layers: int = Field(2, ge=1, description="Meister et al.: 2")
    transformer_heads: int = Field(1, ge=1, description="Meister et al.: 1")
    pretrained: str | None = Field(
        None,
        description="encoder pretrained: a named model (all-minilm-l6-v2) or a local Hugging Face folder "
        "(docs/models.md#pretrained-encoder)",
    )
    max_pieces: int = Field(
        128, ge=3, description="encoder pretrained: word pieces per sequence, [CLS] and [SEP] included"
    )
    word_attention_mode: Literal["learned", "as_cell"] = Field(
        "learned",
        description="HAN: the word-level attention's mode; as_cell applies the cell's attention_mode at both "
        "levels (Vashishth et al.'s uniform and random HAN models), learned keeps the word level learned",
    )


class CellConfig(Strict):
    """One model of the grid, every default filled in; its canonical JSON gives the cell id."""

    dataset: DatasetId
    encoder: Encoder = "lstm"
    attention: Attention = "additive"
    projection: Projection = "softmax"
    projection_lambda: float | None = Field(
        None, lt=1, description="sparsegen-lin lambda in (-inf, 1); only used with projection sparsegen"
    )
    architecture: Architecture = "flat"
    attention_mode: AttentionMode = "learned"
    seed: int = Field(0, ge=0)
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    data: DataConfig = DataConfig()


class Resources(Strict):
    cpu: float = Field(1, gt=0)
    gpu: float = Field(0, ge=0, description="fractions share one GPU between trials")


class TrainResourcesOverride(Strict):
    """What the trials of the cells matching `when` ask for in place of `resources.train`: a model that needs
    more of a node than the grid's other cells (a HAN over long documents, whose backward pass holds GBs) gets
    it without making every trial wait for it."""

    when: dict[str, Any]
    train: Resources


class ResourcesConfig(Strict):
    train: Resources = Resources()
    analysis: Resources = Resources()
    overrides: list[TrainResourcesOverride] = Field(
        default_factory=list, description="per-cell training resources; the last entry that matches a cell wins"
    )


class RayConfig(Strict):
    address: str | None = Field(None, description="null starts a local Ray; 'auto' or 'ray://host:10001' joins one")

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None and not RAY_ADDRESS_PATTERN.match(value):
            raise ValueError(
                f"'{value}' is not a Ray address (expected null, 'auto', 'ray://host:port' or 'host:port')"
            )
        return value


class Override(Strict):
    when: dict[str, Any] = Field(default_factory=dict)
    set: dict[str, Any]


class GridFile(Strict):
    """A grid file as written. `grid`, `exclude`, `overrides` and `analyses` are checked against the cell
    schema and the analysis registry in `gridlab.grid.expand`, with locations pointing into the file."""

    name: str
    data_dir: Path | None = None
    results_dir: Annotated[str, StringConstraints(pattern=r"^(s3|gs)://[^/]+")] | Path = Field(
        Path("runs"),
        description="a folder, or an object-store prefix (s3://bucket/prefix, gs://...; AWS_ENDPOINT_URL selects an "
        "S3-compatible server) mirrored in a local folder (`gridlab.store.store`)",
    )
    tracking_uri: str | None = None
    device: Device = "auto"
    ray: RayConfig = RayConfig()
    resources: ResourcesConfig = ResourcesConfig()
    grid: dict[str, Any] | list[dict[str, Any]] = Field(
        description="axes -> value lists; or a list of such blocks whose cells are united (e.g. one per paper)"
    )
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    overrides: list[Override] = Field(default_factory=list)
    train: TrainConfig = TrainConfig()
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    analyses: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
    instances: int | None = Field(1000, ge=1, description="test instances per model for analyses; null = all")
    shard_size: int = Field(256, ge=1, description="test instances per shard: a multiple of analysis_batch_size")
    analysis_batch_size: int = Field(32, ge=1, description="instances per batch in the analyses")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if "/" in value or "\\" in value or ".." in value:
            raise ValueError(f"'{value}' must not contain path separators or '..' (it names a folder)")
        if not NAME_PATTERN.match(value):
            raise ValueError(f"'{value}' is not a valid name (expected lower-case letters, digits, '-' and '_')")
        return value

    @model_validator(mode="after")
    def _shards_hold_whole_batches(self) -> GridFile:
        """Shards of whole batches: every instance is then analysed in the same batch whatever the sharding, so
        the rows of 1 shard and of 3 are bit for bit the same (float kernels round by batch shape)."""
        if self.shard_size % self.analysis_batch_size:
            raise ValueError(
                f"shard_size {self.shard_size} is not a multiple of analysis_batch_size "
                f"{self.analysis_batch_size} (expected e.g. "
                f"{self.analysis_batch_size * max(1, round(self.shard_size / self.analysis_batch_size))})"
            )
        return self

    @field_validator("grid")
    @classmethod
    def _grid_not_empty(cls, value):
        if not value:
            raise ValueError("no axes (expected at least `dataset: [...]`, or a list of such blocks)")
        return value
