"""Leave-one-out for BiLSTM/BiGRU premise encoders (`_RecurrentStates`): the states on either side of the
gap are the full pass's. Deleting token t leaves the forward states before t and the backward states after t
as they were, so each direction resumes from its state next to the gap (L - 1 - t steps forward, t backward,
instead of 2 (L - 1)), all deletions of a group stepping together, with the input projections of the full
pass, and stops once it has rejoined the full pass's states (`_Resumed`). Attention scores again only the
positions a run changed; decoding runs on the assembled rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from gridlab.analyses.bilstm import BiLstmPass, lstm_step, premise_recurrent
from gridlab.analyses.common import SharedPass, shared_lstm
from gridlab.analyses.importance.deletion import shift_index, with_pad_slot
from gridlab.data.batching import Batch
from gridlab.models.classifier import AttentionClassifier
from gridlab.models.encoders import reversed_within

RECURRENT_GROUP = 4  # resumed recurrences per group: RECURRENT_GROUP * chunk_elements states
CHECK_EVERY = 4  # steps between two checks whether a resumed run has rejoined the full pass (`_Resumed`)


@dataclass(frozen=True)
class _Direction:
    """One direction of a recurrent premise encoder over the batch, in its reading order: slot p of row b is
    position p (forward) or position L_b - 1 - p (backward, each row reversed within its length). Flattened
    time-major, slot p of row b at p * B + b, so that variants gather their slots with one index."""

    gates: torch.Tensor  # (Tw*B, G) the input's share of the gates, x W_ih^T + biases, per slot (time-major)
    h: torch.Tensor  # (Tw*B, H) the state after reading each slot
    c: torch.Tensor | None  # (Tw*B, H) the LSTM cell after each slot; None for a GRU
    step: Callable  # (gates (n, G) (overwritten), h (n, H), c (n, H) | None, h_out, c_out) -> (h, c): one step
    width: int  # Tw


@dataclass(frozen=True)
class _RecurrentStates:
    """Both directions of a flat/pair model's BiLSTM/BiGRU premise encoder, with every intermediate state.

    Deleting the token at position t leaves the forward states before t and the backward states after t as
    they were; each direction resumes from its state next to the gap and reads the rest of the row: L - 1 - t
    steps forward, t steps backward, instead of 2 (L - 1) per deletion, and the input projections (most of
    an LSTM step's work) are the full pass's. Same equations as torch's cells (gate order i, f, g, o for the
    LSTM; r, z, n for the GRU, b_hn inside r *), so only float rounding differs from `nn.LSTM`/`nn.GRU`."""

    forward: _Direction
    backward: _Direction
    lengths: torch.Tensor  # (B,) tokens with markers

    @staticmethod
    def of(model: AttentionClassifier, batch: Batch, shared: SharedPass) -> _RecurrentStates | None:
        """The states, or None when the model is not a flat/pair model with a one-layer recurrent premise
        encoder (whose `encode` this mirrors). The full pass's h are the shared pass's; an LSTM's gates and
        cells too (`bilstm.py`), a GRU's input shares one matmul away."""
        rnn = premise_recurrent(model)
        if rnn is None:
            return None
        if isinstance(rnn, nn.LSTM):
            lstm = shared_lstm(model, shared)
            lengths = batch.lengths.clamp_min(1).to(lstm.rows.device)
            return _RecurrentStates(_lstm_direction(lstm, 0), _lstm_direction(lstm, 1), lengths)
        x = model.dropout(model.embed(batch))  # (B, Tw, d)
        h = shared.encoded.h  # (B, Tw, 2H) forward | backward
        lengths = batch.lengths.clamp_min(1).to(x.device)  # as `Recurrent.forward` reads them
        reverse = reversed_within(lengths, x.shape[1])  # (B, Tw) position read at each slot
        hidden = h.shape[-1] // 2
        forward = _gru_direction(rnn, "", x, h[..., :hidden])
        backward = _gru_direction(
            rnn,
            "_reverse",
            x.gather(1, reverse[..., None].expand_as(x)),
            h[..., hidden:].gather(1, reverse[..., None].expand(-1, -1, hidden)),
        )
        return _RecurrentStates(forward, backward, lengths)


def _lstm_direction(lstm: BiLstmPass, direction: int) -> _Direction:
    """One direction of the shared pass's BiLSTM (`bilstm.py`): its input shares, states and cells."""
    width, _, _, hidden = lstm.states[1:].shape
    products = (lstm.weights.forward_products[direction],)

    def step(gates_x, h, c, h_out, c_out):  # one recurrence: a leading axis of 1
        h, c = lstm_step(gates_x[None], h[None], c[None], products, h_out[None], c_out[None])
        return h[0], c[0]

    states, cells = (x[1:, direction].reshape(-1, hidden) for x in (lstm.states, lstm.cells))  # step-major
    return _Direction(lstm.input_shares(direction), states, cells, step, width)


def _gru_direction(rnn: nn.RNNBase, suffix: str, x: torch.Tensor, h: torch.Tensor) -> _Direction:
    """One direction of a GRU over x (B, Tw, d) in reading order, with its states h (B, Tw, H) there (slots
    past a row's end are never read)."""
    w_ih, w_hh = getattr(rnn, f"weight_ih_l0{suffix}"), getattr(rnn, f"weight_hh_l0{suffix}")
    b_ih, b_hh = getattr(rnn, f"bias_ih_l0{suffix}", None), getattr(rnn, f"bias_hh_l0{suffix}", None)
    b, width, hidden = h.shape
    gates = torch.nn.functional.linear(x, w_ih, b_ih).transpose(0, 1).contiguous()  # (Tw, B, 3H) time-major
    flat = width * b  # time-major: slot p of row b is p * B + b
    step = _gru_step(w_hh.t().contiguous(), b_hh, hidden)
    return _Direction(gates.reshape(flat, -1), h.transpose(0, 1).reshape(flat, hidden), None, step, width)


def _gru_step(w_hh_t: torch.Tensor, b_hh: torch.Tensor | None, hidden: int) -> Callable:
    """One GRU step from the input's gate share (n, 3H) in order r, z, n (b_hn inside r *, as torch)."""

    def step(gates_x, h, c, h_out, c_out):
        gh = h @ w_hh_t if b_hh is None else torch.addmm(b_hh, h, w_hh_t)  # (n, 3H)
        rz = torch.sigmoid(gates_x[:, : 2 * hidden] + gh[:, : 2 * hidden])
        n = torch.tanh(torch.addcmul(gates_x[:, 2 * hidden :], rz[:, :hidden], gh[:, 2 * hidden :]))
        return torch.addcmul(n, rz[:, hidden:], h - n, out=h_out), None  # (1 - z) n + z h

    return step


def _recurrent_probs(
    model: AttentionClassifier,
    shared: SharedPass,
    states: _RecurrentStates,
    todo: torch.Tensor,
    chunk_elements: int,
    out: torch.Tensor,
) -> None:
    """Fill out (B, T, C) at the deletions `todo` (B, T) with their outputs for a recurrent premise encoder.

    Deletions are taken gap-major (every row's position t, then t + 1, ...), so a group's forward runs are
    all about L - 1 - t steps long and its backward runs about t: each step's matmul is on nearly the whole
    group. A group holds up to 4 * chunk_elements resumed states (the recurrences want many rows per step:
    their cost is mostly per-step overhead otherwise); attention and decoding then run on sub-chunks of
    chunk_elements activations, each chunk as wide as its longest row."""
    positions, rows = todo.t().nonzero(as_tuple=True)  # (N,) each, gap-major
    slots = int(states.lengths.max()) - 1  # the widest shortened row
    hidden = states.forward.h.shape[1]
    group = max(1, RECURRENT_GROUP * chunk_elements // (slots * hidden))
    step = max(1, chunk_elements // (slots * 2 * hidden))  # h is (n, W, 2H)
    for start in range(0, len(rows), group):
        r, t = rows[start : start + group], positions[start : start + group]  # (n,)
        lengths = states.lengths[r]
        forward = _Resumed(states.forward, r, t, lengths)
        backward = _Resumed(states.backward, r, lengths - 1 - t, lengths)
        for first in range(0, len(r), step):
            part = slice(first, first + step)
            logits = _recurrent_logits(model, shared, forward, backward, r[part], t[part], lengths[part], part)
            out[r[part], t[part]] = torch.softmax(logits, dim=-1).to(out.dtype)


def _recurrent_logits(
    model: AttentionClassifier,
    shared: SharedPass,
    forward: _Resumed,
    backward: _Resumed,
    rows: torch.Tensor,
    positions: torch.Tensor,
    lengths: torch.Tensor,
    part: slice,
) -> torch.Tensor:
    """(n, C) logits of the deletions `part` of a group: h assembled as `Recurrent.forward` returns it
    (forward | backward, zero past the shortened length), then attention and the decoder. Learned attention
    scores again only the positions whose h the resumed runs changed (`_rescore`); the others keep the full
    pass's scores."""
    width = int(lengths.max()) - 1  # the shortened rows
    j = torch.arange(width, device=rows.device)[None, :]  # (1, W) shortened positions
    hidden = forward.table.shape[1]
    h = forward.table.new_empty(len(rows), width, 2 * hidden)  # (n, W, 2H)
    flat = h.view(-1, 2 * hidden)
    forward.states(part, j, flat[:, :hidden])
    backward.states(part, lengths[:, None] - 2 - j, flat[:, hidden:])  # reading slot of shortened position j
    mask = with_pad_slot(shared.encoded.mask, False)[rows[:, None], shift_index(positions, width)]  # (n, W)
    query = None if shared.encoded.query is None else shared.encoded.query[rows]
    first = (positions - backward.steps_of(part)).clamp_min(0)  # (n,) the first position a run changed
    end = (positions + forward.steps_of(part)).clamp_max(width)  # (n,) one past the last
    if model.attention.mode != "learned" or int((end - first).max()) >= width:  # nothing to reuse
        return model.decode(h, model.attend(h, mask, query), query)
    scores = _full_scores(model, shared)[rows[:, None], shift_index(positions, width)]  # (n, W), shifted
    _rescore(model, scores, h, query, first, end)
    return model.decode(h, model.attention.from_scores(scores, mask), query)


def _full_scores(model: AttentionClassifier, shared: SharedPass) -> torch.Tensor:
    """(B, T + 1) the full pass's attention scores with a padding slot last, kept with the pass."""
    if "leave_one_out_scores" not in shared.memo:
        scores = model.attention.scores(shared.encoded.h, shared.encoded.query)
        shared.memo["leave_one_out_scores"] = with_pad_slot(scores, 0.0)
    return shared.memo["leave_one_out_scores"]


def _rescore(
    model: AttentionClassifier,
    scores: torch.Tensor,
    h: torch.Tensor,
    query: torch.Tensor | None,
    first: torch.Tensor,
    end: torch.Tensor,
) -> None:
    """Score again, into scores (n, W), the shortened positions first .. end - 1 (n,) of each deletion:
    those whose h (n, W, 2H) the resumed runs changed (the backward run's steps before the gap, the forward
    run's from it on); elsewhere both halves of h are the full pass's. Scores are per position, so one
    window as wide as the widest span is scored; its positions outside a deletion's own span keep the full
    pass's score (written to a spare column, then dropped)."""
    width = h.shape[1]
    window = first[:, None] + torch.arange(int((end - first).max()), device=h.device)[None, :]  # (n, K)
    changed = window < end[:, None]
    window = window.clamp_max(width - 1)
    rescored = model.attention.scores(h.gather(1, window[..., None].expand(-1, -1, h.shape[-1])), query)  # (n, K)
    target = torch.where(changed, window, width)  # positions outside a span go to the spare column
    spare = torch.cat([scores, scores.new_zeros(len(scores), 1)], dim=1)
    spare.scatter_(1, target, rescored.to(scores.dtype))
    scores.copy_(spare[:, :width])


class _Resumed:
    """One direction resumed after the gaps of n deletions: row i lost reading slot gaps[i]; its slots before
    the gap are the full pass's, the rest come from resuming at slot gaps[i] - 1 over slots gaps[i] + 1 ..
    L - 1, until the resumed state rejoins the full pass's.

    The states after the gap read the same tokens as the full pass's, from a start that differs by the
    deleted token's effect, which a trained recurrence forgets: within tens of steps the resumed h and c
    agree with the full pass's at the same token to float rounding. A run stops once both lie within
    `_converged_within` of them (checked every `CHECK_EVERY` steps); from there on the full pass's states
    stand in for it. Long rows thus cost about L x (steps to forget) instead of L^2 / 2 steps.

    The runs are sorted longest first, so the ones still running at step s are a prefix of what has not
    stopped; each step is one matmul on exactly them (as a packed sequence runs). Their states go into one
    table after the full pass's (time-major, a zero row last), from which `states` gathers h."""

    def __init__(self, direction: _Direction, rows: torch.Tensor, gaps: torch.Tensor, lengths: torch.Tensor):
        n, b = len(rows), direction.h.shape[0] // direction.width
        full, hidden = direction.h.shape
        remaining = lengths - 1 - gaps  # (n,) steps after the gap, >= 1
        order = torch.argsort(remaining, descending=True, stable=True)  # (n,)
        start = (gaps * b + rows)[order]  # (n,) flat slot of each gap, longest run first
        running = torch.bincount(remaining - 1).flip(0).cumsum(0).flip(0).tolist()  # runs with > s steps
        table = direction.h.new_empty(full + len(running) * n + 1, hidden)  # full pass | step s of run r | 0
        table[:full] = direction.h
        table[-1] = 0.0
        self.steps = remaining[order].clone()  # (n,) steps each run computed before it rejoined
        tolerance = _converged_within(direction.h.dtype)
        place: torch.Tensor | None = None  # once a run has stopped: the places in `order` of those stepping
        h = direction.h.index_select(0, start - b)  # (n, H) the state before the gap
        c = None if direction.c is None else direction.c.index_select(0, start - b)  # (n, H), in place
        gates = direction.gates.new_empty(n, direction.gates.shape[1])  # (n, G) scratch
        states = direction.h.new_empty(2, n, hidden)  # after a stop: a step reads one buffer, writes the other
        for s, active in enumerate(running):
            row = full + s * n
            if place is None:  # every run with a step s is stepping: a prefix, written straight into the table
                m, slots, out = active, start[:active] + (s + 1) * b, table[row : row + active]
            else:  # the places still stepping that have a step s
                m = int(torch.searchsorted(place, active))
                if not m:
                    break
                place = place[:m]
                slots, out = start[place] + (s + 1) * b, states[s % 2, :m]
            torch.index_select(direction.gates, 0, slots, out=gates[:m])  # slots: the full pass's, same token
            h, c = direction.step(gates[:m], h[:m], None if c is None else c[:m], out, None if c is None else c[:m])
            if place is not None:
                table.index_copy_(0, row + place, h)
            if (s + 1) % CHECK_EVERY:
                continue
            rejoined = _within(h, direction.h.index_select(0, slots), tolerance)
            if c is not None and direction.c is not None:
                rejoined &= _within(c, direction.c.index_select(0, slots), tolerance)
            if bool(rejoined.any()):
                place = torch.arange(m, device=rows.device) if place is None else place
                self.steps[place[rejoined]] = s + 1
                place, h, c = place[~rejoined], h[~rejoined], None if c is None else c[~rejoined]
        self.rank = torch.empty_like(order)
        self.rank[order] = torch.arange(n, device=order.device)  # (n,) each row's place in `order`
        self.table, self.rows, self.gaps, self.lengths = table, rows, gaps, lengths
        self.n, self.b, self.full = n, b, full

    def steps_of(self, part: slice) -> torch.Tensor:
        """(m,) steps the runs of deletions `part` computed: their states differ from the full pass's on at
        most that many slots after the gap."""
        return self.steps[self.rank[part]]

    def states(self, part: slice, slots: torch.Tensor, out: torch.Tensor) -> None:
        """Write into out (m*W, H) (a view of h: one direction's half) the states of deletions `part` at their
        shortened reading slots `slots` (m, W); negative or past the row: padding, zero."""
        rows, gaps, lengths = self.rows[part, None], self.gaps[part, None], self.lengths[part, None]
        before = slots * self.b + rows  # (m, W)
        after = self.full + (slots - gaps).clamp_min(0) * self.n + self.rank[part, None]
        rejoined = (slots + 1) * self.b + rows  # the full pass's state at the same token
        index = torch.where(slots - gaps < self.steps_of(part)[:, None], after, rejoined)
        index = torch.where(slots < gaps, before, index)
        index = torch.where((slots < 0) | (slots > lengths - 2), len(self.table) - 1, index)  # padding
        torch.index_select(self.table, 0, index.reshape(-1), out=out)


def _converged_within(dtype: torch.dtype) -> float:
    """How close a resumed state (h and c) must come to the full pass's for the run to stop, relative to
    the larger of 1 and the state's size: 8 units of rounding, about where two float runs of the same
    recurrence from different starts settle (they rarely meet bit for bit)."""
    return 8 * torch.finfo(dtype).eps


def _within(x: torch.Tensor, y: torch.Tensor, tolerance: float) -> torch.Tensor:
    """(n,) rows of x (n, H) within tolerance of y's everywhere, relative to max(1, |y|)."""
    return ((x - y).abs() / y.abs().clamp_min(1.0)).amax(1) <= tolerance
