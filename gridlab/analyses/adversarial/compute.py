"""`adversarial` — Jain & Wallace 2019 §4.2.2, Algorithm 3, Eq. 1–2 (docs/analyses.md#adversarial): how
different attention can be from the model's own while the output stays within eps of the original.

    >>> context = AnalysisContext(cell_id, model.eval(), device, AdversarialParams())   # k 5, 500 steps
    >>> columns = adversarial.run(context, forward_once(model, batch))
    >>> columns["jsd_eps_max"]           # (B,) float64 in [0, ln 2]; J&W Fig. 4 is its histogram

Per instance, k candidates alpha_i = softmax(l_i) over the instance's unmasked positions (padding gets -inf
before the softmax, so exactly 0 weight) maximise the relaxed Eq. 1 with h, the query and the model fixed:

    f = sum_i JSD(alpha_i, alpha) + 1/(k(k-1)) sum_{i<j} JSD(alpha_i, alpha_j)
        - lam/k sum_i max(0, TVD(y(alpha_i), y) - eps)

J&W print "+ lam/k ..."; a penalty on a maximised objective is subtracted (docs/analyses.md#adversarial).
The pair term is empty for k = 1. Adam with AMSGrad (lr 0.01, torch's betas and eps); the logits start at
log(1/T) + init_scale * N(0, 1), the normal draws (k, T) for the instance's own T unmasked positions from
`instance_generator(cell_id, "adversarial", instance_id)`, so they never depend on the batch or its padding.
eps defaults to 0.01, or 0.05 for pair-task models (those with a query: J&W's QA setting, footnote 6).

Then Algorithm 3: every final alpha_i is decoded; `jsd_eps_max` is the largest JSD(alpha, alpha_i) among the
candidates with TVD(y(alpha_i), y) <= eps (0 if none; candidates within `CANDIDATE_TIE` of the largest tie, and the
first of them is kept), `tvd_at_jsd` that candidate's TVD (0 if none), `n_within_eps` how many candidates are within
eps, `steps_run` how many Adam updates the instance received, and `candidate_jsd` / `candidate_tvd` every
candidate's JSD and TVD (k-lists), so that another selection rule (J&W's plotting code keeps candidates up to TVD
0.05) is computed from rows, and `alpha_eps_max` the selected candidate's weights over the instance's items (null if
none is within eps), which the report's heatmaps show beside the model's attention. An instance with T = 1 has one
distribution only: jsd 0, tvd 0, n_within_eps = k, steps_run 0, candidates all 0, alpha_eps_max null, without
optimising.

Convergence (per instance, the grid's `stop_window` / `stop_rtol`, 50 and 1e-3 by default; `stop_window: 0`
turns it off): the objective is averaged over consecutive windows of `stop_window` steps, and after each
window an instance stops when |mean_w - mean_{w-1}| <= rtol * max(|mean_{w-1}|, 1): a relative change, with an
absolute floor for objectives near 0. Window means rather than
single steps because the hinge penalty makes Adam oscillate around TVD = eps. So `steps_run` is a multiple of
the window, or `steps`. A stopped instance keeps its logits and leaves the optimisation (its rows are dropped
from the logits and from Adam's moments): later steps only decode the instances still moving, and no
instance's result depends on the others in its batch. The loop ends when none is left or at `steps`;
`run(..., convergence=None)` spends the full budget on every instance. At lr 0.01 the objective of most
instances still creeps up at 500 steps (small trained synthetic models: none stopped by then, about 40 % by
2000 steps, eps-max JSD within 0.01 of the full budget's on average), so with J&W's budget the rule mostly
saves the steps of instances that saturate early, such as those whose output ignores attention.

`run` optimises all instances x k candidates as one (A, k, T) tensor. A step is about 50 tensor operations
with no autograd graph: the objective and its gradient with respect to the logits written out (`_Objective`:
every JSD term, against alpha and between candidates, one list of pairs; the decoder's linear layer folded
into h W^T once), then one call of torch's fused AMSGrad kernel (`_AmsGrad`; its update is elementwise, so
dropping converged rows leaves the others' updates exactly as they were). No host sync per step: the
convergence rule reads the objective once per window, and with `convergence=None` the objective's value is
not even formed. `reference` is the same optimisation one instance at a time on its unpadded positions, with
autograd through `objective`'s terms, `torch.optim.Adam(amsgrad=True)` and loops over candidates and pairs;
at equal steps (`convergence=None` in both) the two agree to float rounding.
"""

from __future__ import annotations

import copy
import enum
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.adversarial import INFO, SCHEMA, AdversarialParams
from gridlab.analyses.base import AnalysisContext, InstanceAnalysis
from gridlab.analyses.common import (
    EPS,
    LN2,
    SharedPass,
    decode_many,
    instance_generator,
    jsd,
    linear_output,
    measured,
    object_column,
    tvd,
)
from gridlab.models.classifier import AttentionClassifier, Encoded

ID = "adversarial"
VERSION = 2  # 2: the eps-max candidate is the first within CANDIDATE_TIE of the top, not the float maximum
# Candidates within eps whose JSDs lie within this fraction of the largest tie, and the first of them is kept:
# adversaries that saturate near ln 2 end within float rounding of each other, and which one the float
# maximum picked moved with the last bits of h (the ranking tie rule's 1e-5, `ranking.py`).
CANDIDATE_TIE = 1e-5

EPS_CLASSIFICATION = 0.01  # J&W §4.2.2
EPS_PAIR = 0.05  # J&W's QA threshold: a larger output space moves TVD more (their footnote 6)
BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
ADAM_EPS = 1e-8


@dataclass(frozen=True)
class Convergence:
    """Per-instance early stopping: window means of the objective that change by at most rtol (relative,
    floored at 1 in absolute value) from one window to the next."""

    window: int = 50
    rtol: float = 1e-3


CONVERGENCE = Convergence()


def convergence_of(params: AdversarialParams) -> Convergence | None:
    """The grid's early-stopping rule (`stop_window`, `stop_rtol`); None when `stop_window` is 0."""
    return Convergence(params.stop_window, params.stop_rtol) if params.stop_window else None


class _FromParams(enum.Enum):
    FROM_PARAMS = enum.auto()


FROM_PARAMS = _FromParams.FROM_PARAMS  # default of `convergence`: the rule the analysis's params give


def epsilon(params: AdversarialParams, shared: SharedPass) -> float:
    """The TVD budget: `params.eps`, else J&W's 0.05 for pair tasks (a query in the batch) and 0.01 for
    classification (a pretrained encoder's [CLS] query is the sentence's own, not a pair task's)."""
    if params.eps is not None:
        return params.eps
    return EPS_PAIR if shared.batch.query_ids is not None else EPS_CLASSIFICATION


def initial_logits(cell_id: str, instance_id: int, k: int, length: int, init_scale: float) -> torch.Tensor:
    """(k, length) starting logits of one instance: log(uniform) + init_scale * N(0, 1), drawn on the CPU so
    every device starts from the same point."""
    noise = torch.randn(k, length, generator=instance_generator(cell_id, ID, instance_id))
    return -math.log(length) + init_scale * noise


def candidates(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logits (B, k, T), mask (B, T) -> (B, k, T) distributions over each row's unmasked positions."""
    return torch.softmax(logits.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)


def objective(
    alphas: torch.Tensor, probs: torch.Tensor, alpha: torch.Tensor, original: torch.Tensor, eps: float, lam: float
) -> torch.Tensor:
    """J&W's relaxed Eq. 1 per instance: alphas (B, k, T) with their outputs probs (B, k, C), the model's
    alpha (B, T) and output original (B, C) -> (B,)."""
    k = alphas.shape[1]
    away = jsd(alphas, alpha[:, None, :]).sum(-1)  # (B,)
    pairwise = jsd(alphas[:, :, None, :], alphas[:, None, :, :])  # (B, k, k), symmetric
    diversity = pairwise.triu(1).sum((-2, -1)) / (k * (k - 1)) if k > 1 else 0.0  # (B,) the pairs i < j
    excess = (tvd(probs, original[:, None, :]) - eps).clamp_min(0.0).sum(-1)  # (B,)
    return away + diversity - lam / k * excess


def converged(previous: torch.Tensor, mean: torch.Tensor, rtol: float) -> torch.Tensor:
    """(A,) window means, the last and this one -> (A,) bool; False after the first window (previous nan)."""
    return (mean - previous).abs() <= rtol * previous.abs().clamp_min(1.0)


# ---- batched --------------------------------------------------------------------------------------------


class _AmsGrad:
    """`torch.optim.Adam(amsgrad=True, maximize=True)` on one tensor whose rows (instances) can leave. All
    instances start together, so the shared step count is every remaining instance's own. One call of
    torch's fused Adam kernel per step (the foreach-free update written out where that kernel is missing)."""

    def __init__(self, param: torch.Tensor, lr: float):
        self.param, self.lr = param, lr
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.max_exp_avg_sq = torch.zeros_like(param)
        self.count = 0
        self.steps = torch.zeros((), dtype=torch.float32, device=param.device)  # the fused kernel's own counter
        self.fused = hasattr(torch, "_fused_adam_") and param.device.type in ("cpu", "cuda")

    def ascend(self, grad: torch.Tensor) -> None:
        beta1, beta2 = BETAS
        self.count += 1
        if self.fused:
            self.steps += 1  # the kernel reads the count; torch.optim.Adam increments it before calling it
            torch._fused_adam_(
                [self.param],
                [grad],
                [self.exp_avg],
                [self.exp_avg_sq],
                [self.max_exp_avg_sq],
                [self.steps],
                lr=self.lr,
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=ADAM_EPS,
                amsgrad=True,
                maximize=True,
            )
            return
        step = self.count
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.maximum(self.max_exp_avg_sq, self.exp_avg_sq, out=self.max_exp_avg_sq)
        denom = (self.max_exp_avg_sq.sqrt() / math.sqrt(1 - beta2**step)).add_(ADAM_EPS)
        self.param.addcdiv_(self.exp_avg, denom, value=self.lr / (1 - beta1**step))

    def keep(self, rows: torch.Tensor) -> None:
        self.param, self.exp_avg = self.param[rows], self.exp_avg[rows]
        self.exp_avg_sq, self.max_exp_avg_sq = self.exp_avg_sq[rows], self.max_exp_avg_sq[rows]


def run(
    context: AnalysisContext[AdversarialParams],
    shared: SharedPass,
    *,
    convergence: Convergence | None | _FromParams = FROM_PARAMS,
) -> dict[str, np.ndarray]:
    """All instances with T > 1 and their k candidates optimised together; see the module docstring."""
    logits, steps_run = optimise(context, shared, convergence=convergence)
    return _columns(context.classifier, shared, logits, epsilon(context.params, shared), steps_run, context.params.k)


def optimise(
    context: AnalysisContext[AdversarialParams],
    shared: SharedPass,
    *,
    convergence: Convergence | None | _FromParams = FROM_PARAMS,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The final candidate logits (B, k, T) (`candidates` turns them into attention) and the Adam steps each
    instance received (B,): the optimisation behind `run`, for callers that want the distributions."""
    params, model = context.params, context.classifier
    if convergence is FROM_PARAMS:
        convergence = convergence_of(params)
    eps = epsilon(params, shared)
    logits = batch_logits(context.cell_id, shared, params)  # (B, k, T)
    steps_run = torch.zeros(len(logits), dtype=torch.long, device=logits.device)
    rows = (shared.lengths > 1).nonzero().squeeze(1)  # (A,) the instances still optimised
    adam = _AmsGrad(logits[rows], params.lr)
    eq1 = _Objective(model, _fixed(shared, rows), eps, params.lam, params.k)
    total = torch.zeros(len(rows), dtype=logits.dtype, device=logits.device)  # (A,) objective summed this window
    previous = torch.full_like(total, float("nan"))  # (A,) the last window's mean
    for step in range(1, params.steps + 1):
        if len(rows) == 0:
            break
        value, grad = eq1(adam.param, value=convergence is not None)  # (A,) or None, (A, k, T)
        adam.ascend(grad)
        if convergence is None or value is None:  # value is None exactly when convergence is
            continue
        total += value
        if step % convergence.window:
            continue
        mean = total / convergence.window
        done = converged(previous, mean, convergence.rtol)  # (A,)
        if not bool(done.any()):  # the one host sync of a window
            previous, total = mean, torch.zeros_like(mean)
            continue
        logits[rows[done]] = adam.param[done]
        steps_run[rows[done]] = step
        keep = ~done
        rows, previous, total = rows[keep], mean[keep], torch.zeros_like(mean[keep])
        adam.keep(keep)
        eq1 = eq1.keep(keep)
    logits[rows] = adam.param  # the instances that ran the full budget
    steps_run[rows] = params.steps
    return logits, steps_run


class _Objective:
    """Eq. 1 at logits (A, k, T) and its gradient with respect to them, written out: no autograd graph (a
    step costs its ~50 tensor operations, not an autograd engine walking ~200 small nodes).

    All JSD terms are one list of pairs over k + 1 distributions, the k candidates a_i = softmax(l_i) over
    the mask and the model's alpha last: (i, alpha) with weight 1 and (i, j), i < j, with weight
    1/(k(k-1)). With m = (p + q) / 2 and logs of values clamped at 1e-12 (as `common.jsd`),
    JSD(p, q) = 1/2 sum p log p + 1/2 sum q log q - sum m log m and d JSD / dp = 1/2 (log p - log m). Each
    JSD is clamped to [0, ln 2] as `common.jsd` does, and like autograd through that clamp a term outside the
    range contributes no gradient. The penalty's gradient goes through the TVD's sign, the hinge (passing at
    0, as `clamp_min`'s backward does) and the output softmax to the logits z, then to a: through the
    classifier written out when the model's `output` is one linear layer (flat and HAN models:
    z = a (h W^T) + b), else by autograd through `model.output` alone. Finally dl = a (G - sum_t a G).
    Same values and gradients as autograd through `objective` up to float rounding."""

    def __init__(self, model: AttentionClassifier, shared: SharedPass, eps: float, lam: float, k: int):
        self.model, self.shared, self.eps, self.lam, self.k = model, shared, eps, lam, k
        mask, dtype, device = shared.encoded.mask, shared.encoded.h.dtype, shared.encoded.mask.device
        self.bias = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, float("-inf"))[
            :, None, :
        ]  # (A, 1, T) -inf off the mask, as `candidates`
        self.alpha = shared.alpha.to(dtype)[:, None, :]  # (A, 1, T)
        self.original = shared.probs[:, None, :]  # (A, 1, C)
        away = [(i, k) for i in range(k)]  # candidate i against alpha (row k)
        between = list(itertools.combinations(range(k), 2))
        pairs = torch.tensor(away + between, device=device).reshape(-1, 2)  # (P, 2)
        self.first, self.second = pairs[:, 0], pairs[:, 1]
        diversity = 1.0 / (k * (k - 1)) if k > 1 else 0.0
        self.weights = torch.tensor([1.0] * len(away) + [diversity] * len(between), dtype=dtype, device=device)
        incidence = torch.zeros(k + 1, len(pairs), dtype=dtype, device=device)  # (k + 1, P)
        incidence[self.first, torch.arange(len(pairs))] = 0.5 * self.weights
        incidence[self.second, torch.arange(len(pairs))] = 0.5 * self.weights
        self.incidence = incidence[:k]  # (k, P) 1/2 w_p where candidate i is in pair p; alpha has no gradient
        self.linear = linear_output(model)
        if self.linear is not None:
            weight, bias = self.linear
            self.scores = shared.encoded.h.detach() @ weight.detach().t().to(dtype)  # (A, T, C)
            self.class_bias = bias.detach().to(dtype)  # (C,)

    def keep(self, rows: torch.Tensor) -> _Objective:
        kept = copy.copy(self)
        kept.shared = _fixed(self.shared, rows)
        kept.bias, kept.alpha, kept.original = self.bias[rows], self.alpha[rows], self.original[rows]
        if self.linear is not None:
            kept.scores = self.scores[rows]
        return kept

    def __call__(self, logits: torch.Tensor, value: bool = True) -> tuple[torch.Tensor | None, torch.Tensor]:
        """logits (A, k, T) -> (value (A,) or None when not asked for, d value / d logits (A, k, T))."""
        k = self.k
        a = torch.softmax(logits + self.bias, dim=-1)  # (A, k, T)
        both = torch.cat([a, self.alpha], dim=1)  # (A, k + 1, T)
        logs = torch.log(both.clamp_min(EPS))
        half_entropy = (both * logs).sum(-1).mul_(0.5)  # (A, k + 1) 1/2 sum p log p
        m = (both.index_select(1, self.first) + both.index_select(1, self.second)).mul_(0.5)  # (A, P, T)
        log_m = torch.log(m.clamp_min(EPS))
        divergence = (
            half_entropy.index_select(1, self.first) + half_entropy.index_select(1, self.second) - (m * log_m).sum(-1)
        )  # (A, P)
        clamped = divergence.clamp(0.0, LN2)
        weights = self.incidence * (clamped == divergence).to(a.dtype)[:, None, :]  # (A, k, P)
        grad = weights.sum(-1, keepdim=True) * logs[:, :k] - torch.bmm(weights, log_m)  # (A, k, T)
        # the penalty: -lam/k sum_i max(0, TVD(y_i, y) - eps), with 2 TVD = sum |y_i - y|
        z, back = self._decode(a)  # (A, k, C) logits
        probs = torch.softmax(z, dim=-1)
        difference = probs - self.original  # (A, k, C)
        over = difference.abs().sum(-1).sub_(2.0 * self.eps)  # (A, k) 2 (TVD - eps)
        total = None
        if value:
            total = (clamped * self.weights).sum(-1) - 0.5 * self.lam / k * over.clamp_min(0.0).sum(-1)
        scale = (over >= 0).to(a.dtype).mul_(-0.5 * self.lam / k)  # (A, k) where the hinge passes
        d_probs = difference.sign_().mul_(scale[..., None])  # (A, k, C)
        d_z = probs * (d_probs - (probs * d_probs).sum(-1, keepdim=True))  # through the output softmax
        grad += back(d_z)
        return total, a * (grad - (a * grad).sum(-1, keepdim=True))  # through the candidates' softmax

    def _decode(self, a: torch.Tensor) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
        """(A, k, C) output logits of the candidates a (A, k, T), and the map from d/dz to d/da."""
        if self.linear is not None:
            z = torch.baddbmm(self.class_bias, a, self.scores)  # (A, k, C)
            return z, lambda d_z: torch.bmm(d_z, self.scores.transpose(1, 2))  # (A, k, T)
        h, query = self.shared.encoded.h, self.shared.encoded.query
        b, k, _ = a.shape
        q = None if query is None else query.repeat_interleave(k, dim=0)  # (A*k, q)
        with torch.enable_grad():
            context = torch.bmm(a, h).reshape(b * k, -1).requires_grad_(True)  # (A*k, m)
            z = self.model.output(context, q)  # (A*k, C)

        def back(d_z: torch.Tensor) -> torch.Tensor:
            (d_context,) = torch.autograd.grad(z, context, grad_outputs=d_z.reshape(b * k, -1))
            return torch.bmm(d_context.reshape(b, k, -1), h.transpose(1, 2))  # (A, k, T)

        return z.detach().reshape(b, k, -1), back


def batch_logits(cell_id: str, shared: SharedPass, params: AdversarialParams) -> torch.Tensor:
    """(B, k, T) starting logits, each instance's `initial_logits` on its unmasked positions (0 on padding,
    which `candidates` masks). Instances with T <= 1 are not optimised and stay 0."""
    mask = shared.encoded.mask.cpu()
    logits = torch.zeros(mask.shape[0], params.k, mask.shape[1])
    lengths = shared.lengths.tolist()
    for row, (instance_id, length) in enumerate(zip(shared.batch.instance_ids.tolist(), lengths)):
        if length > 1:
            logits[row][:, mask[row]] = initial_logits(cell_id, instance_id, params.k, length, params.init_scale)
    return logits.to(device=shared.encoded.h.device, dtype=shared.encoded.h.dtype)


def _fixed(shared: SharedPass, rows: torch.Tensor) -> SharedPass:
    """The pass of some instances, h and query detached: the optimisation moves only the logits. `batch`
    stays whole: nothing here reads it after the start."""
    e = shared.encoded
    encoded = Encoded(e.h[rows].detach(), e.mask[rows], None if e.query is None else e.query[rows].detach())
    return SharedPass(
        shared.batch, encoded, shared.alpha[rows], shared.logits[rows], shared.probs[rows], shared.pred[rows]
    )


@torch.no_grad()
def _columns(
    model: AttentionClassifier, shared: SharedPass, logits: torch.Tensor, eps: float, steps_run: torch.Tensor, k: int
) -> dict[str, np.ndarray]:
    """Algorithm 3 on the final logits (B, k, T): decode every candidate, keep the most distant within eps."""
    alphas = candidates(logits, shared.encoded.mask)  # (B, k, T)
    tvds = tvd(decode_many(model, shared, alphas), shared.probs[:, None, :]).double()  # (B, k)
    jsds = jsd(alphas, shared.alpha[:, None, :]).double()  # (B, k)
    within = tvds <= eps  # (B, k)
    scores = jsds.masked_fill(~within, -1.0)
    top = scores.amax(-1, keepdim=True)
    best = (scores >= top - CANDIDATE_TIE * top.abs()).int().argmax(-1, keepdim=True)  # (B, 1) first near the top
    found = within.any(-1)
    single = shared.lengths <= 1  # one distribution only: nothing to optimise or compare
    jsd_max = torch.where(found & ~single, jsds.gather(-1, best)[:, 0], 0.0)
    tvd_at = torch.where(found & ~single, tvds.gather(-1, best)[:, 0], 0.0)
    n_within = torch.where(single, k, within.sum(-1))
    chosen = alphas.gather(1, best[:, :, None].expand(-1, 1, alphas.shape[-1]))[:, 0].double()  # (B, T)
    keep = (found & ~single).tolist()
    weights = [row[m].tolist() if kept else None for row, m, kept in zip(chosen, shared.encoded.mask, keep)]
    return {
        "jsd_eps_max": jsd_max.cpu().numpy(),
        "tvd_at_jsd": tvd_at.cpu().numpy(),
        "steps_run": steps_run.cpu().numpy().astype(np.int64),
        "n_within_eps": n_within.cpu().numpy().astype(np.int64),
        "candidate_jsd": _lists(torch.where(single[:, None], 0.0, jsds)),
        "candidate_tvd": _lists(torch.where(single[:, None], 0.0, tvds)),
        "alpha_eps_max": object_column(weights),
    }


def _lists(values: torch.Tensor) -> np.ndarray:
    """(B, k) -> (B,) object array of k-lists: a list column per instance."""
    return object_column(values.cpu().tolist())


# ---- reference ------------------------------------------------------------------------------------------


def reference(
    context: AnalysisContext[AdversarialParams],
    shared: SharedPass,
    *,
    convergence: Convergence | None | _FromParams = FROM_PARAMS,
) -> dict[str, np.ndarray]:
    """One instance at a time on its own unpadded positions, with its own `torch.optim.Adam`."""
    params, model = context.params, context.classifier
    if convergence is FROM_PARAMS:
        convergence = convergence_of(params)
    eps = epsilon(params, shared)
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        positions = shared.encoded.mask[b].nonzero().squeeze(1)
        row: tuple
        if len(positions) <= 1:
            row = (0.0, 0.0, 0, params.k, [0.0] * params.k, [0.0] * params.k, None)
        else:
            logits, steps_run = _reference_optimise(context, shared, b, instance_id, positions, eps, convergence)
            jsd_max, tvd_at, n_within, jsds, tvds, chosen = _reference_select(model, shared, b, positions, logits, eps)
            row = (jsd_max, tvd_at, steps_run, n_within, jsds, tvds, chosen)
        for name, value in zip(SCHEMA.names, row):
            columns[name].append(value)
    return {
        field.name: object_column(columns[field.name])
        if pa.types.is_list(field.type)
        else np.asarray(columns[field.name], dtype=field.type.to_pandas_dtype())
        for field in SCHEMA
    }


def _reference_optimise(
    context: AnalysisContext[AdversarialParams],
    shared: SharedPass,
    b: int,
    instance_id: int,
    positions: torch.Tensor,
    eps: float,
    convergence: Convergence | None,
) -> tuple[torch.Tensor, int]:
    """Instance b's final logits (k, T_b) and the number of updates it received."""
    params, model = context.params, context.classifier
    h = shared.encoded.h[b, positions].detach()  # (T_b, m)
    query = None if shared.encoded.query is None else shared.encoded.query[b : b + 1].detach()
    alpha = shared.alpha[b, positions]  # (T_b,)
    start = initial_logits(context.cell_id, instance_id, params.k, len(positions), params.init_scale)
    logits = start.to(device=h.device, dtype=h.dtype).requires_grad_(True)  # (k, T_b)
    optimizer = torch.optim.Adam([logits], lr=params.lr, betas=BETAS, eps=ADAM_EPS, amsgrad=True, maximize=True)
    total, previous = torch.zeros((), dtype=h.dtype), torch.tensor(float("nan"), dtype=h.dtype)
    for step in range(1, params.steps + 1):
        with torch.enable_grad():
            value = _reference_objective(model, h, query, alpha, shared.probs[b], logits, eps, params.lam)
            (logits.grad,) = torch.autograd.grad(value, logits)  # not backward: the model keeps no .grad
        optimizer.step()
        total = total + value.detach().cpu()
        if convergence is None or step % convergence.window:
            continue
        mean = total / convergence.window
        if converged(previous, mean, convergence.rtol):
            return logits.detach(), step
        previous, total = mean, torch.zeros_like(total)
    return logits.detach(), params.steps


def _reference_objective(
    model: AttentionClassifier,
    h: torch.Tensor,
    query: torch.Tensor | None,
    alpha: torch.Tensor,
    original: torch.Tensor,
    logits: torch.Tensor,
    eps: float,
    lam: float,
) -> torch.Tensor:
    """Eq. 1 relaxed, written term by term for one instance: h (T_b, m), logits (k, T_b)."""
    k = len(logits)
    alphas = [torch.softmax(row, dim=-1) for row in logits]
    outputs = [torch.softmax(model.decode(h[None], a[None], query), dim=-1)[0] for a in alphas]
    away = sum(jsd(a, alpha) for a in alphas)
    pairs = sum(jsd(alphas[i], alphas[j]) for i, j in itertools.combinations(range(k), 2))
    diversity = pairs / (k * (k - 1)) if k > 1 else 0.0
    penalty = lam / k * sum(torch.clamp(tvd(y, original) - eps, min=0.0) for y in outputs)
    # a tensor: k >= 1 (AdversarialParams), so `away` and `penalty` are sums of tensors, never sum()'s empty 0
    return cast(torch.Tensor, away + diversity - penalty)


@torch.no_grad()
def _reference_select(
    model: AttentionClassifier, shared: SharedPass, b: int, positions: torch.Tensor, logits: torch.Tensor, eps: float
) -> tuple[float, float, int, list[float], list[float], list[float] | None]:
    """Algorithm 3's loop for instance b: (eps-max JSD, its TVD, candidates within eps, every candidate's JSD
    and TVD, the eps-max candidate's weights or None)."""
    h = shared.encoded.h[b, positions]  # (T_b, m)
    query = None if shared.encoded.query is None else shared.encoded.query[b : b + 1]
    jsds, tvds, alphas = [], [], []
    for row in logits:
        candidate = torch.softmax(row, dim=-1)
        output = torch.softmax(model.decode(h[None], candidate[None], query), dim=-1)[0]
        tvds.append(float(tvd(output, shared.probs[b])))
        jsds.append(float(jsd(candidate, shared.alpha[b, positions])))
        alphas.append(candidate.double().tolist())
    within = [i for i, distance in enumerate(tvds) if distance <= eps]
    if not within:
        return 0.0, 0.0, 0, jsds, tvds, None
    top = max(jsds[i] for i in within)
    best = next(i for i in within if jsds[i] >= top - CANDIDATE_TIE * abs(top))  # the first near the top
    return jsds[best], tvds[best], len(within), jsds, tvds, alphas[best]


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model (J&W Fig. 4-5): the eps-max JSD's mean and median, and the share of instances whose
    adversarial attention is far from the original (JSD > 0.5; the bound is ln 2)."""
    jsd_values = rows["jsd_eps_max"].dropna().astype(float)  # null: no candidate within eps
    return measured(
        {
            "jsd_eps_max_mean": jsd_values.mean(),
            "jsd_eps_max_median": jsd_values.median(),
            "jsd_above_half": (jsd_values > 0.5).mean(),
            "steps_run_mean": rows["steps_run"].dropna().astype(float).mean(),
        }
    )


class Adversarial(InstanceAnalysis[AdversarialParams]):
    info = INFO
    version = VERSION
    run, reference, summarize = staticmethod(run), staticmethod(reference), staticmethod(summarize)
