"""Analysis id -> the module that computes its rows (the contract of `gridlab.analyses.base`): per-instance
modules have `run`/`reference`; per-model ones (`SCOPE = "model"`) have `run_model`; grid-level ones
(`SCOPE = "grid"`) have `run`/`reference` that also take the same batch's pass through peer models; all have
`summarize`.

Analyses declared in `gridlab.catalog.analyses.ANALYSES` but absent here are validated and planned, not run yet:
`gridlab plan` and `launch` say so instead of pretending.
"""

from __future__ import annotations

from types import ModuleType

from gridlab.analyses import (
    adversarial,
    adversarial_model,
    attention_ablation,
    diagnostic_mlp,
    erasure_multi,
    erasure_single,
    importance_correlation,
    layer_permutation,
    permutation,
    rationale_recovery,
    seed_variance,
    sparsity_importance,
)

IMPLEMENTATIONS: dict[str, ModuleType] = {
    module.ID: module
    for module in (
        importance_correlation,
        permutation,
        adversarial,
        erasure_single,
        erasure_multi,
        sparsity_importance,
        attention_ablation,
        layer_permutation,
        rationale_recovery,
        adversarial_model,
        diagnostic_mlp,
        seed_variance,
    )
}
