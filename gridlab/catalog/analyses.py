"""The analyses of docs/analyses.md declared: their ids, parameters (with the papers' defaults), scope and
the cells they apply to. Grid validation, planning and reports read these declarations without importing
torch; each analysis's class in `gridlab.analyses` binds its computation to its declaration, and
`gridlab.analyses.registry.register` declares an analysis defined outside gridlab (a plug-in) here too.

    >>> ANALYSES["permutation"].params(n=50).n
    50
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gridlab.data.catalog import DATASETS

Ranking = Literal[
    "attention",
    "random",
    "gradient",
    "grad_x_attention",
    "leave_one_out",
    "norm_attention",
    "integrated_gradients",
    "attention_rollout",
    "attention_flow",
    "norm_rollout",
]
AblationMode = Literal["uniform", "random", "permute"]
AdversaryVariant = Literal["frozen", "unfrozen"]
MlpVariant = Literal["uniform", "learned", "base"]
Scope = Literal["instance", "model", "grid"]


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _unique(values: list) -> list:
    if len(set(values)) != len(values):
        raise ValueError(f"values must not repeat (got {values})")
    return values


class NoParams(Params):
    pass


class PermutationParams(Params):
    n: int = Field(100, ge=1, description="random permutations of alpha per instance (J&W: 100)")


class AdversarialParams(Params):
    k: int = Field(5, ge=1, description="adversarial distributions per instance")
    steps: int = Field(500, ge=1)
    lr: float = Field(0.01, gt=0)
    eps: float | None = Field(None, gt=0, description="TVD budget; default 0.01 (classification), 0.05 (QA)")
    lam: float = Field(500.0, ge=0, description="weight of the TVD penalty (J&W: 500)")
    init_scale: float = Field(3.0, ge=0, description="logits start at log(uniform) + init_scale * N(0, 1)")
    stop_window: int = Field(
        50,
        ge=0,
        description="early stopping: objective window means compared every "
        "stop_window steps; 0 runs every instance for all steps",
    )
    stop_rtol: float = Field(1e-3, gt=0, description="an instance stops when its window mean moves by <= stop_rtol")


class SparsityParams(Params):
    gh_x_positions: int | None = Field(
        None,
        ge=1,
        description="positions p over which entropy_gh_x averages: every item (null, Meister et al.) or at most "
        "this many, evenly spaced over the instance's items (a backward each: O(T^2) becomes O(T * this))",
    )
    representation_layer: int | None = Field(
        None,
        ge=0,
        description="what h is in g_y(h), g_h(x) and D_y(h): the input of the final attention layer (null), "
        "or, for a Transformer encoder, the input of its self-attention layer k (0: the projected embeddings "
        "plus positions), h_i erased by deleting item i from layer k on",
    )
    representation_erasure: Literal["renormalise", "zero"] = Field(
        "renormalise",
        description="how D_y(h) erases h_i at the final attention layer: alpha_i set to 0 and the rest "
        "renormalised, or h_i replaced by the zero vector and attention recomputed over every item",
    )

    @model_validator(mode="after")
    def _one_erasure(self) -> SparsityParams:
        if self.representation_layer is not None and self.representation_erasure != "renormalise":
            raise ValueError(
                "representation_erasure applies at the final attention layer; with representation_layer set, "
                "h_i is deleted from that layer on (expected one of the two)"
            )
        return self


RANKINGS: tuple[Ranking, ...] = get_args(Ranking)  # every ranking, in the order of the analyses' columns
# Rankings read off a Transformer encoder's self-attention layers: they do not apply to other cells, whose
# analyses skip them (`gridlab plan` says so) instead of failing.
TRANSFORMER_RANKINGS: frozenset[Ranking] = frozenset({"attention_rollout", "attention_flow", "norm_rollout"})
ERASURE_RANKINGS: tuple[Ranking, ...] = ("attention", "random", "gradient", "grad_x_attention")  # S&S's four


SELF_ATTENTION_ENCODERS = ("transformer", "pretrained")
RANKING_NEEDS = {name: "encoder transformer or pretrained" for name in TRANSFORMER_RANKINGS}  # for `gridlab plan`


def ranking_applies(ranking: str, cell: dict) -> bool:
    """Whether a ranking can be computed for a cell (its config as a plain dict)."""
    return ranking not in TRANSFORMER_RANKINGS or cell["encoder"] in SELF_ATTENTION_ENCODERS


class RankedParams(Params):
    """Parameters of an analysis that compares rankings of the attention items (docs/analyses.md#rankings)."""

    rankings: list[Ranking] = Field(min_length=1)
    ig_steps: int = Field(50, ge=1, description="integration steps of integrated_gradients")

    _rankings_unique = field_validator("rankings")(_unique)


class ErasureMultiParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(ERASURE_RANKINGS), min_length=1)
    exact_max_len: int = Field(14, ge=0, description="exact minimal flipping set up to this length; 0 disables")


_ABLATION_MODES: tuple[AblationMode, ...] = ("uniform", "random", "permute")


class AttentionAblationParams(Params):
    modes: list[AblationMode] = Field(default_factory=lambda: list(_ABLATION_MODES), min_length=1)
    han_levels: Literal["both", "sentence"] = Field(
        "both",
        description="a HAN's attention replaced at both levels (Vashishth §3.1 attends at both), or at the "
        "sentence level only, its word weights kept",
    )
    beam_size: int = Field(
        1,
        ge=1,
        description="translation: hypotheses kept per decoding step; 1 is greedy decoding (as training's dev BLEU)",
    )

    _modes_unique = field_validator("modes")(_unique)


_ADVERSARY_VARIANTS: tuple[AdversaryVariant, ...] = ("frozen", "unfrozen")


class AdversarialModelParams(Params):
    variants: list[AdversaryVariant] = Field(default_factory=lambda: list(_ADVERSARY_VARIANTS), min_length=1)
    lam: float = Field(1.0, ge=0, description="weight of the attention KL term (W&P)")
    epochs: int = Field(8, ge=1)
    lr: float | None = Field(None, gt=0, description="the adversaries' learning rate; null: the cell's train.lr")
    divergence: Literal["kl", "jsd"] = Field(
        "kl", description="the attention term: W&P's KL(alpha_adv || alpha_base), or the bounded JSD"
    )

    _variants_unique = field_validator("variants")(_unique)


_MLP_VARIANTS: tuple[MlpVariant, ...] = ("uniform", "learned", "base")


class DiagnosticMlpParams(Params):
    variants: list[MlpVariant] = Field(
        default_factory=lambda: list(_MLP_VARIANTS),
        min_length=1,
        description="how the MLP weighs its tokens: uniformly, by its own trained attention, by the model's frozen one",
    )
    hidden: int = Field(64, ge=1, description="hidden size of W&P's diagnostic MLP")
    epochs: int = Field(8, ge=1)

    _variants_unique = field_validator("variants")(_unique)


RECOVERY_RANKINGS: tuple[Ranking, ...] = ("attention", "gradient", "grad_x_attention", "leave_one_out")
# Every ranking but attention flow, whose max-flows grow with T^3 per instance: asked for by name on short texts.
FAITHFULNESS_RANKINGS: tuple[Ranking, ...] = tuple(r for r in RANKINGS if r != "attention_flow")


class RationaleRecoveryParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(RECOVERY_RANKINGS), min_length=1)
    ks: list[int] = Field(default_factory=lambda: [1, 3, 5], min_length=1)

    _ks_unique = field_validator("ks")(_unique)


class EraserParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(FAITHFULNESS_RANKINGS), min_length=1)
    bins: list[float] = Field(
        default_factory=lambda: [0.01, 0.05, 0.1, 0.2, 0.5],
        min_length=1,
        description="shares of the items removed (comprehensiveness) or kept (sufficiency), DeYoung et al.'s bins",
    )

    @field_validator("bins")
    @classmethod
    def _shares(cls, bins: list[float]) -> list[float]:
        if any(not 0 < b <= 1 for b in bins):
            raise ValueError(f"bins are shares of the items, each in (0, 1] (got {bins})")
        return _unique(bins)


class RankingAgreementParams(RankedParams):
    rankings: list[Ranking] = Field(default_factory=lambda: list(FAITHFULNESS_RANKINGS), min_length=2)
    k: int = Field(5, ge=1, description="top-k overlap: the shared share of each pair's top min(k, T) items")


Applies = Callable[[dict], bool]


def _classification(cell: dict) -> bool:
    return DATASETS[cell["dataset"]].task != "translation"


def _always(cell: dict) -> bool:
    return True


@dataclass(frozen=True)
class AnalysisInfo:
    id: str
    summary: str
    params: type[Params]
    scope: Scope
    applies: Applies = _always
    needs: str = ""  # the condition `applies` checks, in words, for `gridlab plan`


ANALYSES: dict[str, AnalysisInfo] = {
    info.id: info
    for info in [
        AnalysisInfo(
            "importance_correlation",
            "Kendall tau of attention with gradient and leave-one-out (J&W §4.1)",
            NoParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "permutation",
            "output change under permuted attention (J&W §4.2.1)",
            PermutationParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "adversarial",
            "maximally different attention with the same output (J&W §4.2.2)",
            AdversarialParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "erasure_single",
            "erasing the top vs a random attention weight (S&S §4)",
            NoParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "erasure_multi",
            "weights erased until the decision flips, per ranking (S&S §5)",
            ErasureMultiParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "attention_ablation",
            "accuracy with uniform, random, permuted attention (Vashishth §4.1)",
            AttentionAblationParams,
            "model",
        ),
        AnalysisInfo(
            "sparsity_importance",
            "entropy and tau of normalised importance (Meister §3-4)",
            SparsityParams,
            "instance",
            lambda cell: _classification(cell) and cell["encoder"] != "pretrained",
            "a classifier whose attention has one score per item (not encoder pretrained)",
        ),
        AnalysisInfo(
            "adversarial_model",
            "an adversary model with diverging attention (W&P)",
            AdversarialModelParams,
            "model",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "layer_permutation",
            "accuracy with self-attention layers 1..k permuted (Vashishth §4.3)",
            NoParams,
            "model",
            lambda cell: cell["encoder"] == "transformer",
            "encoder transformer",
        ),
        AnalysisInfo(
            "seed_variance",
            "attention JSD between models that differ only in seed (W&P)",
            NoParams,
            "grid",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "diagnostic_mlp",
            "an MLP guided by the model's frozen attention vs uniform/learned (W&P)",
            DiagnosticMlpParams,
            "model",
            lambda cell: cell["architecture"] == "flat",
            "architecture flat",
        ),
        AnalysisInfo(
            "token_scores",
            "per-item attention, gradient, leave-one-out and a permuted attention, for heatmaps and annotation",
            NoParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "rationale_recovery",
            "precision@k and AUC of rankings against true rationales",
            RationaleRecoveryParams,
            "instance",
            lambda cell: DATASETS[cell["dataset"]].has_rationales,
            "a dataset with rationales",
        ),
        AnalysisInfo(
            "eraser",
            "comprehensiveness, sufficiency and their AOPC per ranking (DeYoung et al. 2020)",
            EraserParams,
            "instance",
            _classification,
            "a classifier",
        ),
        AnalysisInfo(
            "ranking_agreement",
            "Kendall tau and top-k overlap between every pair of rankings (the disagreement problem)",
            RankingAgreementParams,
            "instance",
            _classification,
            "a classifier",
        ),
    ]
}


def declare(info: AnalysisInfo) -> None:
    """Adds an analysis declared outside this module (`gridlab.analyses.registry.register`). Declaring the
    same one again is a no-op; another analysis under a taken id is an error."""
    known = ANALYSES.get(info.id)
    if known is not None and known != info:
        raise ValueError(f"analysis id '{info.id}' is already declared ({known.summary})")
    ANALYSES[info.id] = info
