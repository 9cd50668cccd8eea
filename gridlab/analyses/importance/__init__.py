"""Feature importance over the items of the final attention layer, batched: the gradient and leave-one-out measures of
Jain & Wallace §4.1, Algorithm 1 (docs/analyses.md#importance_correlation), shared by every analysis that ranks
items. >>> shared = forward_once(model, batch) >>> g = gradient_importance(model, batch, shared) # (B, T)
|grad_{e_t} y . e_t|, 0 outside the mask >>> d = leave_one_out(model, batch, shared) # (B, T) TVD(y(x_-t), y(x)), 0
outside the mask >>> probs = leave_one_out_probs(model, batch, shared) # (B, T, C) the outputs behind d >>>
reference_leave_one_out(model, shared) # the same as a per-instance loop (test oracle) Both are aligned with
`shared.encoded.mask`: tokens for flat and pair models (the premise only: attention is over the premise, the query
is left as it is), sentences for hierarchical (HAN) models. - `gradient.py`: the gradient importance, alpha held
constant (generic autograd path); `prediction.py`: d y / d logits, exact when y rounds to 1. - `lstm_backward.py`: a
BiLSTM premise encoder's backward written out to the gates from the shared pass's kept gates (`analyses/bilstm.py`;
the gradient's fast path). - `leave_one_out.py`: the leave-one-out importance and its outputs (generic path, and the
dispatch); `deletion.py`: a batch with one item deleted per row, by a shifted gather. - `local.py`: leave-one-out
for local encoders (CNN, average, no encoder) with learned attention. - `recurrent.py`: leave-one-out for
BiLSTM/BiGRU encoders, each direction resumed next to the gap until it rejoins the full pass. - `reference.py`: both
measures one instance at a time, rebuilt with `collate` (the test oracles). The optimised paths serve flat and pair
models; HAN, transformer encoders, uniform/random attention for local encoders and training-mode dropout take the
generic paths."""

from gridlab.analyses.importance.gradient import gradient_importance, input_gradient
from gridlab.analyses.importance.leave_one_out import leave_one_out, leave_one_out_probs, tvd_beside
from gridlab.analyses.importance.prediction import prediction_gradient
from gridlab.analyses.importance.reference import instance_rows, reference_gradient_importance, reference_leave_one_out

__all__ = [
    "gradient_importance",
    "input_gradient",
    "instance_rows",
    "leave_one_out",
    "leave_one_out_probs",
    "prediction_gradient",
    "reference_gradient_importance",
    "reference_leave_one_out",
    "tvd_beside",
]
