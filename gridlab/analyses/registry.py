"""Every analysis gridlab runs: analysis id -> its class (`gridlab.analyses.base`). The declarations they
bind to are in `gridlab.catalog.analyses`; an analysis declared there but missing here is validated and
planned, and `gridlab plan` and `launch` say it is not implemented instead of pretending.

Adding an analysis: one module with its class, and one line in `BUILT_IN`. An analysis defined outside
gridlab (a plug-in, a test's toy) is `register`ed instead, which declares it in the catalog too:

    >>> register(Toy)          # Toy(InstanceAnalysis[ToyParams]) with info = AnalysisInfo("toy", ...)
"""

from __future__ import annotations

from gridlab.analyses.adversarial import Adversarial
from gridlab.analyses.adversarial_model import AdversarialModel
from gridlab.analyses.attention_ablation import AttentionAblation
from gridlab.analyses.base import Analysis
from gridlab.analyses.diagnostic_mlp import DiagnosticMlpAnalysis
from gridlab.analyses.eraser import Eraser
from gridlab.analyses.erasure_multi import ErasureMulti
from gridlab.analyses.erasure_single import ErasureSingle
from gridlab.analyses.importance_correlation import ImportanceCorrelation
from gridlab.analyses.layer_permutation import LayerPermutation
from gridlab.analyses.permutation import Permutation
from gridlab.analyses.ranking_agreement import RankingAgreement
from gridlab.analyses.rationale_recovery import RationaleRecovery
from gridlab.analyses.seed_variance import SeedVariance
from gridlab.analyses.sparsity_importance import SparsityImportance
from gridlab.analyses.token_scores import TokenScores

# ANALYSES and ErasureMultiParams: the declarations, also read from here by ../shared/perf-peers/bench_peers.py
from gridlab.catalog.analyses import ANALYSES, ErasureMultiParams, declare

BUILT_IN: tuple[type[Analysis], ...] = (
    ImportanceCorrelation,
    Permutation,
    Adversarial,
    ErasureSingle,
    ErasureMulti,
    SparsityImportance,
    AttentionAblation,
    LayerPermutation,
    RationaleRecovery,
    Eraser,
    RankingAgreement,
    AdversarialModel,
    DiagnosticMlpAnalysis,
    SeedVariance,
    TokenScores,
)

__all__ = ["ANALYSES", "BUILT_IN", "IMPLEMENTATIONS", "ErasureMultiParams", "register"]

IMPLEMENTATIONS: dict[str, type[Analysis]] = {}


def register(analysis: type[Analysis]) -> type[Analysis]:
    """Makes `analysis` known to validation, planning, the runner and the summaries (usable as a decorator)."""
    declare(analysis.info)
    IMPLEMENTATIONS[analysis.info.id] = analysis
    return analysis


for _analysis in BUILT_IN:
    register(_analysis)
