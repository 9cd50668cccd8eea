"""Each per-instance analysis against its floor: the least work it needs on the same model and batch, written as
plain batched torch, timed interleaved with gridlab's analysis in one run (issue 49). A ratio near 1 says the
row has nothing left to gain; the columns beside it say where each side's time goes, so that a ratio that moves
from one machine to the next can be told apart from a change of code.

    python bench/floors.py                                   # every row, T = 20 and 180, CPU, 1 thread
    python bench/floors.py --only gradient leave_one_out --lengths 20 --csv floors.csv
    python bench/floors.py --device cuda --markdown floors.md

Both sides run their own encoder pass on the same batch (gridlab's: `forward_once`, the pass a shard shares among
its analyses). The floors:
- permutation: the encoder pass; n uniform draws per instance argsorted into permutations; every permuted alpha
  decoded at once through the classifier folded into the items (h W^T, one bmm); TVD; median, mean, max.
- erasure_multi (S&S's four rankings): the encoder pass; the decision gradient with respect to alpha in closed
  form (the decoder is linear in the context); each ranking sorted and its T top-k erasures decided at once from
  suffix sums of alpha_t and alpha_t W h_t.
- gradient: one forward and one backward pass through autograd (`nn.LSTM`'s own kernels), |grad_e y . e|.
- leave_one_out (BiLSTM): the full pass with its cells; for each deletion, each direction resumed from the state
  next to the gap (L - 1 - t steps forward, t backward, fused `nn.LSTM` calls over a few deletions at a time:
  about T/2 full passes); attention and decoder on the rebuilt rows.
- leave_one_out_cnn: T full passes of the encoder, attention and decoder over the deleted rows.
- adversarial (equal steps, 500): autograd and `torch.optim.Adam(amsgrad=True, fused=True)` on the (B, k, T)
  logits, the decoder folded into h W^T; then Algorithm 3's pick.

Columns: ms per batch of each side (median of `--repeats` interleaved rounds), the ratio (median and range of
the rounds' own ratios, so that both figures of a ratio saw the same load), each side's encoder
pass alone (no autograd), the rest (decoder calls, backward, deletion passes), and the share of the wall time
spent outside torch's operators in one profiled call (Python and dispatch: torch.profiler; CPU only). `check`
compares the two sides' numbers where they are deterministic. The bench's batches are unpadded (every instance
exactly T tokens), which the floors rely on. Untrained weights, sharpened as bench/analyses.py does.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from analyses import batches, model  # bench/analyses.py, beside this file
from torch import nn

from gridlab.analyses import importance
from gridlab.analyses.adversarial import AdversarialParams
from gridlab.analyses.adversarial import compute as adversarial
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import forward_once
from gridlab.analyses.erasure_multi import ErasureMultiParams
from gridlab.analyses.erasure_multi import compute as erasure_multi
from gridlab.analyses.permutation import PermutationParams
from gridlab.analyses.permutation import compute as permutation
from gridlab.data.batching import Batch
from gridlab.models.classifier import FlatClassifier

CHUNK_ELEMENTS = 1 << 23  # rows x slots x features per deletion call, as gridlab's LOO_CHUNK_ELEMENTS
# Deletions per resumed BiLSTM call: their rows differ in length by at most this many steps minus one, which the
# fused pass reads as padding. At T = 20 (32 instances) 1, 2, 4, 8 and all 20 took 359, 298, 278, 331 and
# 1256 ms a batch (one run, the machine under load).
RESUMED_GAPS = 4


# ---- the floors -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pass:
    """The floor's encoder pass: h (B, L, m), alpha (B, L), output probs (B, C), the classifier folded into
    the items (B, L, C), and the inner positions 1..T (between `<sos>` and `<eos>`)."""

    h: torch.Tensor
    alpha: torch.Tensor
    probs: torch.Tensor
    scores: torch.Tensor

    @property
    def pred(self) -> torch.Tensor:
        return self.probs.argmax(-1)


def encode(classifier: FlatClassifier, batch: Batch) -> Pass:
    """One encoder pass, attention and decoder (no autograd)."""
    with torch.no_grad():
        h = classifier.encode(batch).h  # (B, L, m)
        alpha = classifier.attend(h, batch.mask)  # (B, L), 0 on the markers
        scores = h @ classifier.classifier.weight.t()  # (B, L, C)
        logits = torch.einsum("bl,blc->bc", alpha, scores) + classifier.classifier.bias
        return Pass(h, alpha, torch.softmax(logits, -1), scores)


def _inner(x: torch.Tensor) -> torch.Tensor:
    return x[:, 1:-1]  # the T tokens between the markers (the bench's batches are unpadded)


def floor_permutation(classifier: FlatClassifier, batch: Batch, n: int = 100) -> torch.Tensor:
    """(B, 3) median, mean and max TVD over n permutations of each alpha."""
    p = encode(classifier, batch)
    with torch.no_grad():
        alpha, scores = _inner(p.alpha), _inner(p.scores)  # (B, T), (B, T, C)
        b, t = alpha.shape
        order = torch.rand(b, n, t, device=alpha.device).argsort(-1)  # (B, n, T)
        permuted = alpha[:, None, :].expand(b, n, t).gather(-1, order)  # (B, n, T)
        probs = torch.softmax(torch.bmm(permuted, scores) + classifier.classifier.bias, -1)  # (B, n, C)
        tvds = 0.5 * (probs - p.probs[:, None, :]).abs().sum(-1)  # (B, n)
        return torch.stack([tvds.quantile(0.5, dim=-1), tvds.mean(-1), tvds.amax(-1)], -1)


def floor_erasure(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    """(4, B) the first k whose top-k erasure flips the decision (0: none), per ranking: attention, random,
    gradient, grad_x_attention. Two classes: the decision is the sign of the margin sum_t alpha_t (w1 - w0) h_t
    / sum_t alpha_t + b1 - b0, whose gradient with respect to alpha_t is, up to a positive factor, that item's
    margin (signed towards the prediction)."""
    p = encode(classifier, batch)
    with torch.no_grad():
        weight, bias = classifier.classifier.weight, classifier.classifier.bias
        alpha, h = _inner(p.alpha), _inner(p.h)  # (B, T), (B, T, m)
        margin = h @ (weight[1] - weight[0])  # (B, T) each item's share of the margin
        offset = bias[1] - bias[0]
        pred = p.pred
        gradient = margin * (2 * pred - 1)[:, None]  # (B, T) d (y_pred) / d alpha_t up to a positive factor
        keys = [alpha, torch.rand_like(alpha), gradient, gradient * alpha]
        return torch.stack([_first_flip(alpha, margin, offset, pred, key) for key in keys])


def _first_flip(
    alpha: torch.Tensor, margin: torch.Tensor, offset: torch.Tensor, pred: torch.Tensor, keys: torch.Tensor
) -> torch.Tensor:
    """(B,) the first k = 1..T whose erasure of the top k of `keys` flips the decision, 0 where none does."""
    order = keys.argsort(dim=-1, descending=True, stable=True)  # (B, T)
    a = alpha.gather(1, order)
    both = torch.stack([a, a * margin.gather(1, order)], -1)  # (B, T, 2)
    kept = torch.nn.functional.pad(both.flip(1).cumsum(1).flip(1), (0, 0, 0, 1))[:, 1:]  # (B, T, 2) after k erased
    mass = kept[..., 0]
    decision = (kept[..., 1] / torch.where(mass > 0, mass, 1.0) + offset > 0).long()  # (B, T)
    flipped = decision != pred[:, None]
    return torch.where(flipped.any(-1), flipped.int().argmax(-1) + 1, 0)


def floor_gradient(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    """(B, T) |grad_e y . e| by one forward and one backward through autograd, alpha held constant."""
    embedded = classifier.embed(batch).detach().requires_grad_(True)
    h = classifier.encode(batch, embedded=embedded).h  # (B, L, m)
    alpha = classifier.attend(h, batch.mask).detach()
    probs = torch.softmax(classifier.decode(h, alpha), -1)  # (B, C)
    y = probs.gather(1, probs.argmax(-1, keepdim=True).detach())  # (B, 1) the predicted class
    (gradient,) = torch.autograd.grad(y.sum(), embedded)
    return _inner((gradient * embedded.detach()).sum(-1).abs())


class Directions:
    """A BiLSTM's two directions as one-way `nn.LSTM`s with its weights (built once per model, untimed)."""

    def __init__(self, rnn: nn.LSTM):
        self.ways = []
        for suffix in ("", "_reverse"):
            way = nn.LSTM(rnn.input_size, rnn.hidden_size, batch_first=True).to(rnn.weight_ih_l0.device)
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(way, f"{name}_l0").data = getattr(rnn, f"{name}_l0{suffix}").data
            self.ways.append(way.eval())

    def cells(self, way: int, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """(B, L, H) the cell after each step of direction `way`, rebuilt from its inputs x and states h (read in
        its own order): one matmul for all gates, then the cells' elementwise scan."""
        lstm = self.ways[way]
        previous = torch.nn.functional.pad(h[:, :-1], (0, 0, 1, 0))  # (B, L, H) the state before each step
        gates = x @ lstm.weight_ih_l0.t() + previous @ lstm.weight_hh_l0.t() + lstm.bias_ih_l0 + lstm.bias_hh_l0
        i, f, g, _ = gates.chunk(4, -1)
        i, f, g = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g)
        cells = torch.empty_like(i)
        c = torch.zeros_like(i[:, 0])
        for step in range(x.shape[1]):
            c = f[:, step] * c + i[:, step] * g[:, step]
            cells[:, step] = c
        return cells

    def resume(self, way: int, x: torch.Tensor, lengths: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor):
        """(N, S', H) states of direction `way` over x (N, S, d) from (h0, c0) (N, H), each row `lengths` long:
        one fused pass as long as the longest row (a chunk's rows differ by a few steps); a shorter row reads
        padding after its end, whose states are never used. (Packed sequences leave the fused kernel on a CPU:
        at T = 180 that floor took 8x gridlab's time, slower than J&W's T full passes.)"""
        out, _ = self.ways[way](x[:, : int(lengths.max())], (h0[None].contiguous(), c0[None].contiguous()))
        return out


_DIRECTIONS: dict[int, Directions] = {}


@torch.no_grad()
def floor_leave_one_out_lstm(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    """(B, T) TVD(y(x_-t), y(x)): every deletion's two resumed directions, then attention and decoder."""
    rnn = classifier.encoder.rnn  # type: ignore[union-attr]
    ways = _DIRECTIONS.setdefault(id(rnn), Directions(rnn))
    x = classifier.embed(batch)  # (B, L, d)
    p = encode(classifier, batch)
    hidden = rnn.hidden_size
    forward, backward = p.h[..., :hidden], p.h[..., hidden:]  # (B, L, H) each, position order
    cf = ways.cells(0, x, forward)
    cb = ways.cells(1, x.flip(1), backward.flip(1)).flip(1)  # position order
    b, length = batch.ids.shape
    per_position = b * length * max(x.shape[-1], p.h.shape[-1])
    step = max(1, min(RESUMED_GAPS, CHUNK_ELEMENTS // per_position))
    out = torch.zeros(b, length - 2, device=x.device)
    for start in range(1, length - 1, step):
        gaps = torch.arange(start, min(start + step, length - 1), device=x.device)  # (G,) deleted positions
        out[:, gaps - 1] = _deleted_tvds(classifier, ways, x, p, (forward, backward, cf, cb), gaps)
    return out


def _deleted_tvds(classifier: FlatClassifier, ways: Directions, x, p: Pass, states, gaps: torch.Tensor):
    """(B, G) the TVD of deleting each position of `gaps` (G,) from every instance."""
    forward, backward, cf, cb = states
    b, length, _ = x.shape
    g = len(gaps)
    rows_b = torch.arange(b, device=x.device).repeat_interleave(g)  # (N,) N = B * G, row (b, gap)
    rows_t = gaps.repeat(b)  # (N,)
    slots = torch.arange(length - 1, device=x.device)  # (S,) S = L - 1 slots of a deleted row
    # forward: resume after the gap, reading positions t+1..L-1 from the state at t-1
    ahead = (rows_t[:, None] + 1 + slots[None, :]).clamp_max(length - 1)  # (N, S)
    new_forward = ways.resume(
        0, x[rows_b[:, None], ahead], length - 1 - rows_t, forward[rows_b, rows_t - 1], cf[rows_b, rows_t - 1]
    )  # (N, S, H): slot s is deleted-row position t + s
    # backward: resume before the gap, reading positions t-1..0 from the state at t+1
    behind = (rows_t[:, None] - 1 - slots[None, :]).clamp_min(0)  # (N, S)
    new_backward = ways.resume(
        1, x[rows_b[:, None], behind], rows_t, backward[rows_b, rows_t + 1], cb[rows_b, rows_t + 1]
    )  # (N, S, H): slot s is deleted-row position t - 1 - s
    before = slots[None, :] < rows_t[:, None]  # (N, S) deleted-row positions before the gap
    kept_forward = forward[rows_b[:, None], slots[None, :].expand(len(rows_t), -1)]
    resumed_forward = new_forward.gather(1, _index(slots[None, :] - rows_t[:, None], new_forward))
    kept_backward = backward[rows_b[:, None], (slots[None, :] + 1).clamp_max(length - 1)]
    resumed_backward = new_backward.gather(1, _index(rows_t[:, None] - 1 - slots[None, :], new_backward))
    h = torch.cat(
        [
            torch.where(before[..., None], kept_forward, resumed_forward),
            torch.where(before[..., None], resumed_backward, kept_backward),
        ],
        -1,
    )  # (N, S, m)
    return _tvd_of_rows(classifier, p, h, rows_b).reshape(b, g)


def _index(steps: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """(N, S, H) gather index of the given steps (N, S), clamped into range (the unused ones)."""
    return steps.clamp(0, states.shape[1] - 1)[..., None].expand(-1, -1, states.shape[-1])


def _tvd_of_rows(classifier: FlatClassifier, p: Pass, h: torch.Tensor, rows_b: torch.Tensor) -> torch.Tensor:
    """(N,) TVD between the output over the deleted rows h (N, S, m) and instance rows_b's original output."""
    mask = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
    mask[:, 0] = mask[:, -1] = False  # the markers
    alpha = classifier.attend(h, mask)  # (N, S)
    probs = torch.softmax(classifier.decode(h, alpha), -1)  # (N, C)
    return 0.5 * (probs - p.probs[rows_b]).abs().sum(-1)


@torch.no_grad()
def floor_leave_one_out_full(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    """(B, T) TVD(y(x_-t), y(x)) by a full pass over every deleted row (T passes; local encoders)."""
    p = encode(classifier, batch)
    b, length = batch.ids.shape
    per_position = b * length * max(classifier.embedding.embedding_dim, p.h.shape[-1])
    step = max(1, CHUNK_ELEMENTS // per_position)
    slots = torch.arange(length - 1, device=batch.ids.device)
    out = torch.zeros(b, length - 2, device=batch.ids.device)
    for start in range(1, length - 1, step):
        gaps = torch.arange(start, min(start + step, length - 1), device=batch.ids.device)
        rows_b = torch.arange(b, device=gaps.device).repeat_interleave(len(gaps))
        rows_t = gaps.repeat(b)
        ids = batch.ids[rows_b[:, None], slots[None, :] + (slots[None, :] >= rows_t[:, None]).long()]  # (N, S)
        tokens = torch.ones_like(ids, dtype=torch.bool)
        lengths = torch.full((len(ids),), length - 1, device=ids.device)
        h = classifier.encoder(classifier.embedding(ids), lengths, tokens)  # (N, S, m)
        out[:, gaps - 1] = _tvd_of_rows(classifier, p, h, rows_b).reshape(b, len(gaps))
    return out


def floor_adversarial(classifier: FlatClassifier, batch: Batch, params: AdversarialParams) -> torch.Tensor:
    """(B, 2) the eps-max JSD and its TVD after `params.steps` Adam steps on k candidates per instance."""
    p = encode(classifier, batch)
    alpha, scores = _inner(p.alpha), _inner(p.scores)  # (B, T), (B, T, C)
    bias, eps, lam, k = classifier.classifier.bias.detach(), params.eps or 0.01, params.lam, params.k
    b, t = alpha.shape
    logits = (-math.log(t) + params.init_scale * torch.randn(b, k, t, device=alpha.device)).requires_grad_(True)
    optimizer = torch.optim.Adam([logits], lr=params.lr, amsgrad=True, maximize=True, fused=True)
    pairs = torch.triu_indices(k, k, 1, device=alpha.device)
    for _ in range(params.steps):
        a = torch.softmax(logits, -1)  # (B, k, T)
        probs = torch.softmax(torch.baddbmm(bias, a, scores), -1)  # (B, k, C)
        diversity = _jsd(a[:, pairs[0]], a[:, pairs[1]]).sum(-1) / (k * (k - 1)) if k > 1 else 0.0
        excess = (0.5 * (probs - p.probs[:, None]).abs().sum(-1) - eps).clamp_min(0.0).sum(-1)
        objective = _jsd(a, alpha[:, None]).sum(-1) + diversity - lam / k * excess  # (B,)
        optimizer.zero_grad(set_to_none=True)
        objective.sum().backward()
        optimizer.step()
    with torch.no_grad():
        a = torch.softmax(logits, -1)
        tvds = 0.5 * (torch.softmax(torch.baddbmm(bias, a, scores), -1) - p.probs[:, None]).abs().sum(-1)  # (B, k)
        jsds = torch.where(tvds <= eps, _jsd(a, alpha[:, None]), -1.0)
        best = jsds.argmax(-1, keepdim=True)
        within = jsds.gather(1, best) >= 0
        return torch.cat([torch.where(within, jsds.gather(1, best), 0.0), tvds.gather(1, best) * within], -1)


def _jsd(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    m = 0.5 * (p + q)
    log_m = m.clamp_min(1e-12).log()
    kl_p = (p * (p.clamp_min(1e-12).log() - log_m)).sum(-1)
    kl_q = (q * (q.clamp_min(1e-12).log() - log_m)).sum(-1)
    return (0.5 * (kl_p + kl_q)).clamp(0.0, math.log(2.0))


# ---- gridlab's side -------------------------------------------------------------------------------------


def _context(classifier: FlatClassifier, params) -> AnalysisContext:
    return AnalysisContext("bench", classifier, classifier.embedding.weight.device, params)


def gridlab_permutation(classifier: FlatClassifier, batch: Batch) -> dict:
    return permutation.run(_context(classifier, PermutationParams()), forward_once(classifier, batch))


def gridlab_erasure(classifier: FlatClassifier, batch: Batch) -> dict:
    return erasure_multi.run(_context(classifier, ErasureMultiParams()), forward_once(classifier, batch))


def gridlab_gradient(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    return importance.gradient_importance(classifier, batch, forward_once(classifier, batch))


def gridlab_leave_one_out(classifier: FlatClassifier, batch: Batch) -> torch.Tensor:
    return importance.leave_one_out(classifier, batch, forward_once(classifier, batch))


def gridlab_adversarial(classifier: FlatClassifier, batch: Batch) -> dict:
    context = _context(classifier, AdversarialParams())
    return adversarial.run(context, forward_once(classifier, batch), convergence=None)


# ---- rows, checks, measurement --------------------------------------------------------------------------


Side = Callable[[FlatClassifier, Batch], object]


@dataclass(frozen=True)
class Row:
    encoder: str
    gridlab: Side  # gridlab's columns or scores, as the analysis returns them (timed as they are)
    floor: Side
    check: Callable[[object, torch.Tensor], str]  # (gridlab's, floor's) -> a short note, untimed


def _close(ours, floor: torch.Tensor) -> str:
    """Deterministic scores (B, T): their largest difference, relative to the floor's largest."""
    scale = floor.abs().amax().clamp_min(1e-12)
    return f"max diff {float((_inner(ours).cpu() - floor.cpu()).abs().amax() / scale):.1e} (relative)"


def _same_flips(ours, floor: torch.Tensor) -> str:
    """Erasure: instances whose attention ranking flips at the same k on both sides (random draws differ)."""
    removed = torch.tensor([count or 0 for count in ours["removed_attention"]])
    return f"attention ranking: same first flip {int((removed == floor[0].cpu()).sum())}/{len(removed)}"


def _drawn(column: str) -> Callable[[object, torch.Tensor], str]:
    """Random draws differ between the sides: the batch's mean of the main column, side by side."""
    return lambda ours, floor: f"mean {column} {ours[column].mean():.3f} vs {float(floor[:, 0].mean()):.3f} (own draws)"


ROWS: dict[str, Row] = {
    "permutation": Row("lstm", gridlab_permutation, floor_permutation, _drawn("tvd_median")),
    "erasure_multi": Row("lstm", gridlab_erasure, floor_erasure, _same_flips),
    "gradient": Row("lstm", gridlab_gradient, floor_gradient, _close),
    "leave_one_out": Row("lstm", gridlab_leave_one_out, floor_leave_one_out_lstm, _close),
    "leave_one_out_cnn": Row("cnn", gridlab_leave_one_out, floor_leave_one_out_full, _close),
    "adversarial": Row(
        "lstm", gridlab_adversarial, lambda c, b: floor_adversarial(c, b, AdversarialParams()), _drawn("jsd_eps_max")
    ),
}


def per_call(function: Callable[[], object], min_time: float, device: torch.device) -> float:
    """Seconds per call of `function`, repeated until `min_time` has passed."""
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    calls, started = 0, time.perf_counter()
    while True:
        function()
        synchronize()
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= min_time:
            return elapsed / calls


def outside_operators(function: Callable[[], object]) -> float:
    """Share of one profiled call's wall time not spent inside torch's operators: Python, dispatch and
    autograd's bookkeeping (the profiler's own cost per operator lands there too, so it reads a little high)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        started = time.perf_counter()
        function()
        wall = time.perf_counter() - started
    events = recorded.key_averages()  # operators are namespaced (aten::, mkldnn::); autograd's nodes are not
    inside = sum(e.self_cpu_time_total for e in events if "::" in e.key and not e.key.startswith("autograd::")) / 1e6
    return max(0.0, 1.0 - inside / wall)


FIELDS = [
    "analysis", "T", "gridlab_ms", "floor_ms", "ratio", "ratio_min", "ratio_max", "gridlab_encoder_ms",
    "floor_encoder_ms", "gridlab_rest_ms", "floor_rest_ms", "gridlab_outside_ops", "floor_outside_ops", "check",
]  # fmt: skip


def measure(name: str, length: int, args: argparse.Namespace, device: torch.device) -> dict[str, object]:
    row = ROWS[name]
    classifier = _model(row.encoder, device)
    batch = next(batches(length, args.batch)).to(device)
    ours, floor = row.gridlab(classifier, batch), row.floor(classifier, batch)  # warm-up, and the check
    sides = {
        "gridlab": lambda: row.gridlab(classifier, batch),
        "floor": lambda: row.floor(classifier, batch),
        "gridlab_encoder": lambda: forward_once(classifier, batch),
        "floor_encoder": lambda: encode(classifier, batch),
    }
    rounds: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.repeats):  # every side once a round: a ratio is taken between figures of one round
        for side, function in sides.items():
            rounds[side].append(per_call(function, args.min_time, device))
    ratios = [g / f for g, f in zip(rounds["gridlab"], rounds["floor"])]
    seconds = {side: statistics.median(values) for side, values in rounds.items()}
    ms = {side: 1000 * value for side, value in seconds.items()}
    result: dict[str, object] = {
        "analysis": name,
        "T": length,
        **{f"{side}_ms": ms[side] for side in ("gridlab", "floor", "gridlab_encoder", "floor_encoder")},
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "gridlab_rest_ms": ms["gridlab"] - ms["gridlab_encoder"],
        "floor_rest_ms": ms["floor"] - ms["floor_encoder"],
        "check": row.check(ours, floor),
    }
    for side in ("gridlab", "floor"):  # a share of time outside torch's operators means nothing on an accelerator
        share = outside_operators(sides[side]) if device.type == "cpu" else math.nan
        result[f"{side}_outside_ops"] = share
    print(f"{name} T={length}: {result['ratio']:.2f}x", file=sys.stderr, flush=True)
    return result


_MODELS: dict[tuple[str, str], FlatClassifier] = {}


def _model(encoder: str, device: torch.device) -> FlatClassifier:
    key = (encoder, str(device))
    if key not in _MODELS:
        _MODELS[key] = model(encoder).to(device)
    return _MODELS[key]


def markdown(results: list[dict[str, object]]) -> str:
    """The table: ms per batch, the ratio, each side's encoder / rest (ms) and time outside operators."""

    def share(value: object) -> str:
        return "–" if isinstance(value, float) and math.isnan(value) else f"{value:.0%}"

    lines = [
        "| analysis | T | gridlab ms | floor ms | gridlab / floor [min-max] | gridlab enc + rest ms, outside ops "
        "| floor enc + rest ms, outside ops | check |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['analysis']} | {r['T']} | {r['gridlab_ms']:.1f} | {r['floor_ms']:.1f} "
            f"| **{r['ratio']:.2f}** [{r['ratio_min']:.2f}-{r['ratio_max']:.2f}] "
            f"| {r['gridlab_encoder_ms']:.1f} + {r['gridlab_rest_ms']:.1f}, {share(r['gridlab_outside_ops'])} "
            f"| {r['floor_encoder_ms']:.1f} + {r['floor_rest_ms']:.1f}, {share(r['floor_outside_ops'])} "
            f"| {r['check']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", default=list(ROWS), choices=list(ROWS), metavar="ROW")
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 180])
    parser.add_argument("--batch", type=int, default=32, help="instances per batch (one batch per call)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds; the table shows medians")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds each measurement repeats its call")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--csv", type=Path, help="also write the rows here")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    started = time.perf_counter()
    results = [measure(name, length, args, device) for length in args.lengths for name in args.only]
    table = markdown(results)
    note = (
        f"device {device}, torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, medians of "
        f"{args.repeats} interleaved rounds (ratios: per round), {time.perf_counter() - started:.0f} s"
    )
    print(note, table, sep="\n\n")
    if args.markdown:
        args.markdown.write_text(f"{note}\n\n{table}\n")
    if args.csv:
        with args.csv.open("w", newline="") as out:
            writer = csv.DictWriter(out, FIELDS)
            writer.writeheader()
            writer.writerows(results)
    print(f"median ratio {statistics.median(float(r['ratio']) for r in results):.2f}")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
