"""Which cell configurations the model zoo can build, checked by `gridlab validate` before anything runs
(so an impossible combination is a config error, never a crash in the middle of a grid). No torch here:
validation stays fast."""

from __future__ import annotations

from pathlib import Path

from gridlab.analyses.sparsity_importance import SparsityParams
from gridlab.catalog.analyses import Params
from gridlab.config.schema import CellConfig
from gridlab.data.catalog import DATASETS
from gridlab.data.pretrained import PRETRAINED_MODELS, PretrainedError, pretrained_folder
from gridlab.data.vectors import VECTOR_SETS

ARCHITECTURES_FOR_TASK = {"single": ("flat", "han"), "pair": ("pair",), "translation": ("seq2seq",)}
SEQ2SEQ_ENCODERS = ("gru",)


def incompatibilities(config: CellConfig) -> list[tuple[str, str]]:
    """(where, what) for every reason this cell cannot be built; empty when it can."""
    problems = []
    task = DATASETS[config.dataset].task
    allowed = ARCHITECTURES_FOR_TASK[task]
    if config.architecture not in allowed:
        problems.append(
            (
                "grid.architecture",
                f"'{config.architecture}' cannot run {task}-task dataset '{config.dataset}' (expected "
                f"{' or '.join(allowed)}); drop it with `exclude: [{{dataset: {config.dataset}, "
                f"architecture: {config.architecture}}}]`",
            )
        )
    if config.architecture == "seq2seq" and config.encoder not in SEQ2SEQ_ENCODERS:
        problems.append(
            (
                "grid.encoder",
                f"the translation model has a BiGRU encoder, not '{config.encoder}' "
                f"(expected {', '.join(SEQ2SEQ_ENCODERS)} for dataset '{config.dataset}')",
            )
        )
    model = config.model
    if config.encoder == "transformer" and model.hidden_size % model.transformer_heads:
        problems.append(
            (
                "model.hidden_size",
                f"{model.hidden_size} is not divisible by model.transformer_heads = {model.transformer_heads}",
            )
        )
    problems += _pair_only(config, "query_embedding", "shared")
    problems += _pair_only(config, "pair_output", "context_and_query")
    if model.average_activation != "relu" and config.encoder != "average":
        problems.append(
            (
                "model.average_activation",
                f"'{model.average_activation}' applies to the average encoder only, not '{config.encoder}' "
                "(set it in an override `when: {encoder: average}`)",
            )
        )
    problems += _embedding_problems(model.embeddings, model.embedding_dim)
    problems += _pretrained_problems(config)
    return problems


def _pretrained_problems(config: CellConfig) -> list[tuple[str, str]]:
    """The pretrained encoder reads single sequences, its attention is its last layer's [CLS] attention (scaled
    dot product, softmax per head) and its embeddings are its own; `model.pretrained` must name it."""
    model = config.model
    if config.encoder != "pretrained":
        return []
    fixed = [
        ("grid.architecture", config.architecture, "flat", "single sequences"),
        ("grid.attention", config.attention, "dot", "its last layer's [CLS] attention"),
        ("grid.projection", config.projection, "softmax", "softmax per head"),
    ]
    problems = [
        (where, f"'{value}' cannot go with encoder pretrained ({why}; expected {expected})")
        for where, value, expected, why in fixed
        if value != expected
    ]
    if model.embeddings is not None:
        problems.append(("model.embeddings", f"'{model.embeddings}' cannot go with encoder pretrained (expected null)"))
    if model.pretrained is None:
        problems.append(
            (
                "model.pretrained",
                f"missing for encoder pretrained (expected one of {', '.join(PRETRAINED_MODELS)} or a folder)",
            )
        )
    else:
        try:
            pretrained_folder(model.pretrained)
        except PretrainedError as missing:
            problems.append(("model.pretrained", str(missing)))
    return problems


def _pair_only(config: CellConfig, key: str, default: str) -> list[tuple[str, str]]:
    """A model setting that only a pair model reads must keep its default elsewhere."""
    value = getattr(config.model, key)
    if value == default or config.architecture == "pair":
        return []
    return [
        (
            f"model.{key}",
            f"'{value}' needs a pair model (architecture pair), not '{config.architecture}' (expected {default})",
        )
    ]


def _embedding_problems(embeddings: str | None, dim: int) -> list[tuple[str, str]]:
    """A named vector set fixes the embedding width; anything else must be a file (whether a named set is
    installed depends on the data directory, and is checked with the datasets)."""
    if embeddings in (None, "word2vec"):
        return []
    if embeddings in VECTOR_SETS:
        width = VECTOR_SETS[embeddings].dim
        if width != dim:
            return [("model.embedding_dim", f"{dim}, but '{embeddings}' has {width} dimensions (expected {width})")]
        return []
    if not Path(embeddings).is_file():
        return [
            (
                "model.embeddings",
                f"no word-vector file at {embeddings} (expected null, 'word2vec', a vectors file or one of "
                f"{', '.join(VECTOR_SETS)})",
            )
        ]
    return []


def analysis_incompatibilities(config: CellConfig, analyses: dict[str, Params]) -> list[tuple[str, str]]:
    """(where, what) for every analysis parameter this cell cannot honour; empty when it can."""
    params = analyses.get("sparsity_importance")
    layer = params.representation_layer if isinstance(params, SparsityParams) else None
    if layer is None:
        return []
    layers = config.model.transformer_layers
    if config.encoder == "pretrained":
        reason = "a pretrained encoder's hidden states are read only at its last layer"
    elif config.encoder != "transformer" or config.architecture != "flat":
        reason = f"the {config.architecture} {config.encoder} cells have no self-attention layers"
    elif layer >= layers:
        reason = f"a {layers}-layer Transformer has no layer {layer}"
    else:
        return []
    return [
        (
            "analyses.sparsity_importance.representation_layer",
            f"{reason} (expected null, or 0 to layers - 1 in a grid of flat encoder: transformer cells)",
        )
    ]
