"""`adversarial` — Jain & Wallace 2019 §4.2.2, Algorithm 3, Eq. 1–2 (SPEC §3 C): how different attention can
be from the model's own while the output stays within eps of the original.

    >>> context = AnalysisContext(cell_id, model.eval(), device, AdversarialParams())   # k 5, 500 steps
    >>> columns = adversarial.run(context, forward_once(model, batch))
    >>> columns["jsd_eps_max"]           # (B,) float64 in [0, ln 2]; J&W Fig. 4 is its histogram

Per instance, k candidates alpha_i = softmax(l_i) over the instance's unmasked positions (padding gets -inf
before the softmax, so exactly 0 weight) maximise the relaxed Eq. 1 with h, the query and the model fixed:

    f = sum_i JSD(alpha_i, alpha) + 1/(k(k-1)) sum_{i<j} JSD(alpha_i, alpha_j)
        - lam/k sum_i max(0, TVD(y(alpha_i), y) - eps)

J&W print "+ lam/k ..."; a penalty on a maximised objective is subtracted, as SPEC writes it. The pair term is
empty for k = 1. Adam with AMSGrad (lr 0.01, torch's betas and eps); the logits start at
log(1/T) + init_scale * N(0, 1), the normal draws (k, T) for the instance's own T unmasked positions from
`instance_generator(cell_id, "adversarial", instance_id)`, so they never depend on the batch or its padding.
eps defaults to 0.01, or 0.05 for pair-task models (those with a query: J&W's QA setting, footnote 6).

Then Algorithm 3: every final alpha_i is decoded; `jsd_eps_max` is the largest JSD(alpha, alpha_i) among the
candidates with TVD(y(alpha_i), y) <= eps (0 if none), `tvd_at_jsd` that candidate's TVD (0 if none; the
first candidate on a tie), `n_within_eps` how many candidates are within eps, `steps_run` how many Adam
updates the instance received. An instance with T = 1 has one distribution only: jsd 0, tvd 0,
n_within_eps = k, steps_run 0, without optimising.

Convergence (per instance): the objective is averaged over consecutive windows of `Convergence.window` (50)
steps, and after each window an instance stops when |mean_w - mean_{w-1}| <= rtol * max(|mean_{w-1}|, 1)
with rtol 1e-3: a relative change, with an absolute floor for objectives near 0. Window means rather than
single steps because the hinge penalty makes Adam oscillate around TVD = eps. So `steps_run` is a multiple of
the window, or `steps`. A stopped instance keeps its logits and leaves the optimisation (its rows are dropped
from the logits and from Adam's moments): later steps only decode the instances still moving, and no
instance's result depends on the others in its batch. The loop ends when none is left or at `steps`;
`run(..., convergence=None)` spends the full budget on every instance. At lr 0.01 the objective of most
instances still creeps up at 500 steps (small trained synthetic models: none stopped by then, about 40 % by
2000 steps, eps-max JSD within 0.01 of the full budget's on average), so with J&W's budget the rule mostly
saves the steps of instances that saturate early, such as those whose output ignores attention.

`run` optimises all instances x k candidates as one (A, k, T) tensor: one decoder call, one backward and one
AMSGrad update per step (AMSGrad written out because its update is elementwise, so dropping converged rows
leaves the others' updates exactly as they were). `reference` is the same optimisation one instance at a time
on its unpadded positions, with `torch.optim.Adam(amsgrad=True)` and loops over candidates and pairs.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import (
    SharedPass,
    decode_many,
    instance_generator,
    jsd,
    tvd,
)
from gridlab.analyses.registry import AdversarialParams
from gridlab.models.classifier import AttentionClassifier, Encoded

ID = "adversarial"
VERSION = 1
SCHEMA = pa.schema([
    ("jsd_eps_max", pa.float64()),
    ("tvd_at_jsd", pa.float64()),
    ("steps_run", pa.int64()),
    ("n_within_eps", pa.int64()),
])

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


def epsilon(params: AdversarialParams, shared: SharedPass) -> float:
    """The TVD budget: `params.eps`, else J&W's 0.05 for pair tasks (a query) and 0.01 for classification."""
    if params.eps is not None:
        return params.eps
    return EPS_PAIR if shared.encoded.query is not None else EPS_CLASSIFICATION


def initial_logits(cell_id: str, instance_id: int, k: int, length: int, init_scale: float) -> torch.Tensor:
    """(k, length) starting logits of one instance: log(uniform) + init_scale * N(0, 1), drawn on the CPU so
    every device starts from the same point."""
    noise = torch.randn(k, length, generator=instance_generator(cell_id, ID, instance_id))
    return -math.log(length) + init_scale * noise


def candidates(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logits (B, k, T), mask (B, T) -> (B, k, T) distributions over each row's unmasked positions."""
    return torch.softmax(logits.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)


def objective(alphas: torch.Tensor, probs: torch.Tensor, alpha: torch.Tensor, original: torch.Tensor, eps: float,
              lam: float) -> torch.Tensor:
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
    instances start together, so the shared step count is every remaining instance's own."""

    def __init__(self, param: torch.Tensor, lr: float):
        self.param, self.lr, self.steps = param, lr, 0
        self.exp_avg = torch.zeros_like(param)
        self.exp_avg_sq = torch.zeros_like(param)
        self.max_exp_avg_sq = torch.zeros_like(param)

    def ascend(self, grad: torch.Tensor) -> None:
        beta1, beta2 = BETAS
        self.steps += 1
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.maximum(self.max_exp_avg_sq, self.exp_avg_sq, out=self.max_exp_avg_sq)
        denom = (self.max_exp_avg_sq.sqrt() / math.sqrt(1 - beta2**self.steps)).add_(ADAM_EPS)
        self.param.addcdiv_(self.exp_avg, denom, value=self.lr / (1 - beta1**self.steps))

    def keep(self, rows: torch.Tensor) -> None:
        self.param, self.exp_avg = self.param[rows], self.exp_avg[rows]
        self.exp_avg_sq, self.max_exp_avg_sq = self.exp_avg_sq[rows], self.max_exp_avg_sq[rows]


def run(context: AnalysisContext, shared: SharedPass, *,
        convergence: Convergence | None = CONVERGENCE) -> dict[str, np.ndarray]:
    """All instances with T > 1 and their k candidates optimised together; see the module docstring."""
    params, model = context.params, context.model
    eps = epsilon(params, shared)
    logits = batch_logits(context.cell_id, shared, params)  # (B, k, T)
    steps_run = torch.zeros(len(logits), dtype=torch.long, device=logits.device)
    rows = (shared.lengths > 1).nonzero().squeeze(1)  # (A,) the instances still optimised
    adam = _AmsGrad(logits[rows], params.lr)
    active = _fixed(shared, rows)
    total = torch.zeros(len(rows), dtype=logits.dtype, device=logits.device)  # (A,) objective summed this window
    previous = torch.full_like(total, float("nan"))  # (A,) the last window's mean
    for step in range(1, params.steps + 1):
        if len(rows) == 0:
            break
        value, grad = _value_and_gradient(model, active, adam.param, eps, params.lam)  # (A,), (A, k, T)
        adam.ascend(grad)
        total += value
        if convergence is None or step % convergence.window:
            continue
        mean = total / convergence.window
        done = converged(previous, mean, convergence.rtol)  # (A,)
        logits[rows[done]] = adam.param[done]
        steps_run[rows[done]] = step
        keep = ~done
        rows, previous, total = rows[keep], mean[keep], torch.zeros_like(mean[keep])
        adam.keep(keep)
        active = _fixed(active, keep)
    logits[rows] = adam.param  # the instances that ran the full budget
    steps_run[rows] = params.steps
    return _columns(model, shared, logits, eps, steps_run, params.k)


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
    return SharedPass(shared.batch, encoded, shared.alpha[rows], shared.logits[rows], shared.probs[rows],
                      shared.pred[rows])


def _value_and_gradient(model: AttentionClassifier, shared: SharedPass, logits: torch.Tensor, eps: float,
                        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The objective (A,) at `logits` (A, k, T) and its gradient with respect to them only (autograd.grad:
    the model's parameters get no .grad). Instances do not interact, so the gradient of the sum is each
    instance's own."""
    with torch.enable_grad():
        x = logits.detach().requires_grad_(True)
        alphas = candidates(x, shared.encoded.mask)  # (A, k, T)
        probs = decode_many(model, shared, alphas)  # (A, k, C)
        value = objective(alphas, probs, shared.alpha, shared.probs, eps, lam)  # (A,)
        (grad,) = torch.autograd.grad(value.sum(), x)
    return value.detach(), grad


@torch.no_grad()
def _columns(model: AttentionClassifier, shared: SharedPass, logits: torch.Tensor, eps: float,
             steps_run: torch.Tensor, k: int) -> dict[str, np.ndarray]:
    """Algorithm 3 on the final logits (B, k, T): decode every candidate, keep the most distant within eps."""
    alphas = candidates(logits, shared.encoded.mask)  # (B, k, T)
    tvds = tvd(decode_many(model, shared, alphas), shared.probs[:, None, :]).double()  # (B, k)
    jsds = jsd(alphas, shared.alpha[:, None, :]).double()  # (B, k)
    within = tvds <= eps  # (B, k)
    best = jsds.masked_fill(~within, -1.0).argmax(-1, keepdim=True)  # (B, 1) the first maximum
    found = within.any(-1)
    single = shared.lengths <= 1  # one distribution only: nothing to optimise or compare
    jsd_max = torch.where(found & ~single, jsds.gather(-1, best)[:, 0], 0.0)
    tvd_at = torch.where(found & ~single, tvds.gather(-1, best)[:, 0], 0.0)
    n_within = torch.where(single, k, within.sum(-1))
    return {
        "jsd_eps_max": jsd_max.cpu().numpy(),
        "tvd_at_jsd": tvd_at.cpu().numpy(),
        "steps_run": steps_run.cpu().numpy().astype(np.int64),
        "n_within_eps": n_within.cpu().numpy().astype(np.int64),
    }


# ---- reference ------------------------------------------------------------------------------------------


def reference(context: AnalysisContext, shared: SharedPass, *,
              convergence: Convergence | None = CONVERGENCE) -> dict[str, np.ndarray]:
    """One instance at a time on its own unpadded positions, with its own `torch.optim.Adam`."""
    params = context.params
    eps = epsilon(params, shared)
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for b, instance_id in enumerate(shared.batch.instance_ids.tolist()):
        positions = shared.encoded.mask[b].nonzero().squeeze(1)
        if len(positions) <= 1:
            row = (0.0, 0.0, 0, params.k)
        else:
            logits, steps_run = _reference_optimise(context, shared, b, instance_id, positions, eps, convergence)
            jsd_max, tvd_at, n_within = _reference_select(context.model, shared, b, positions, logits, eps)
            row = (jsd_max, tvd_at, steps_run, n_within)
        for name, value in zip(SCHEMA.names, row):
            columns[name].append(value)
    return {field.name: np.asarray(columns[field.name], dtype=field.type.to_pandas_dtype()) for field in SCHEMA}


def _reference_optimise(context: AnalysisContext, shared: SharedPass, b: int, instance_id: int,
                        positions: torch.Tensor, eps: float,
                        convergence: Convergence | None) -> tuple[torch.Tensor, int]:
    """Instance b's final logits (k, T_b) and the number of updates it received."""
    params = context.params
    h = shared.encoded.h[b, positions].detach()  # (T_b, m)
    query = None if shared.encoded.query is None else shared.encoded.query[b : b + 1].detach()
    alpha = shared.alpha[b, positions]  # (T_b,)
    start = initial_logits(context.cell_id, instance_id, params.k, len(positions), params.init_scale)
    logits = start.to(device=h.device, dtype=h.dtype).requires_grad_(True)  # (k, T_b)
    optimizer = torch.optim.Adam([logits], lr=params.lr, betas=BETAS, eps=ADAM_EPS, amsgrad=True, maximize=True)
    total, previous = torch.zeros((), dtype=h.dtype), torch.tensor(float("nan"), dtype=h.dtype)
    for step in range(1, params.steps + 1):
        with torch.enable_grad():
            value = _reference_objective(context.model, h, query, alpha, shared.probs[b], logits, eps, params.lam)
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


def _reference_objective(model: AttentionClassifier, h: torch.Tensor, query: torch.Tensor | None,
                         alpha: torch.Tensor, original: torch.Tensor, logits: torch.Tensor, eps: float,
                         lam: float) -> torch.Tensor:
    """Eq. 1 relaxed, written term by term for one instance: h (T_b, m), logits (k, T_b)."""
    k = len(logits)
    alphas = [torch.softmax(row, dim=-1) for row in logits]
    outputs = [torch.softmax(model.decode(h[None], a[None], query), dim=-1)[0] for a in alphas]
    away = sum(jsd(a, alpha) for a in alphas)
    pairs = sum(jsd(alphas[i], alphas[j]) for i, j in itertools.combinations(range(k), 2))
    diversity = pairs / (k * (k - 1)) if k > 1 else 0.0
    penalty = lam / k * sum(torch.clamp(tvd(y, original) - eps, min=0.0) for y in outputs)
    return away + diversity - penalty


@torch.no_grad()
def _reference_select(model: AttentionClassifier, shared: SharedPass, b: int, positions: torch.Tensor,
                      logits: torch.Tensor, eps: float) -> tuple[float, float, int]:
    """Algorithm 3's loop for instance b: (eps-max JSD, its TVD, candidates within eps)."""
    h = shared.encoded.h[b, positions]  # (T_b, m)
    query = None if shared.encoded.query is None else shared.encoded.query[b : b + 1]
    best, best_tvd, n_within = 0.0, 0.0, 0
    for row in logits:
        candidate = torch.softmax(row, dim=-1)
        output = torch.softmax(model.decode(h[None], candidate[None], query), dim=-1)[0]
        distance = float(tvd(output, shared.probs[b]))
        divergence = float(jsd(candidate, shared.alpha[b, positions]))
        if distance <= eps:
            n_within += 1
            if n_within == 1 or divergence > best:
                best, best_tvd = divergence, distance
    return best, best_tvd, n_within


def summarize(rows: pd.DataFrame) -> dict[str, float]:
    """Per model (J&W Fig. 4-5): the eps-max JSD's mean and median, and the share of instances whose
    adversarial attention is far from the original (JSD > 0.5; the bound is ln 2)."""
    jsd_values = rows["jsd_eps_max"].astype(float)
    return {"jsd_eps_max_mean": float(jsd_values.mean()), "jsd_eps_max_median": float(jsd_values.median()),
            "jsd_above_half": float((jsd_values > 0.5).mean()),
            "steps_run_mean": float(rows["steps_run"].astype(float).mean())}
