"""Per-instance heatmaps in the manner of Jain & Wallace's Fig. 1: a few test instances of a few trained
cells, each token shaded by the model's attention, by J&W's adversarial attention (a maximally different
distribution whose output stays within eps in TVD), by gradient importance and by leave-one-out importance.

    >>> out = SECTION.build(inputs)    # one Fragment "heatmaps": self-contained HTML, every text escaped

The sample is deterministic (the same rows give the same heatmaps):
- cells: trained classifier cells (flat, pair, HAN) with learned attention; those with adversarial rows when
  there are any, else those with any per-instance rows, else all; the lowest seed of each configuration; the
  first `CELLS` configurations in (dataset, encoder, attention, projection, lambda, architecture) order;
- instances of a cell: the `INSTANCES` with the largest eps-max adversarial JSD in its `adversarial` rows
  (the widest gap between two explanations of one output), else the largest maximum attention in any
  per-instance rows, else the first of the test split; ties by instance id; only instances with
  2..`MAX_ITEMS` attention items, unless none is that short.

The model is reloaded (`ShardRunner.load`, CPU) and everything shown is recomputed on just those instances:
attention with `forward_once`, gradient and leave-one-out importance with `gridlab.analyses.importance`, and
the adversarial attention by the analysis's own optimisation (`adversarial.optimise`) with the grid's
`adversarial` parameters, one instance at a time. Its JSD agrees with the instance's `jsd_eps_max` row up to
float rounding; both are shown. Without an
`adversarial` analysis in the grid the adversarial line is left out.

Attention items are the tokens of the prepared test split (`tokens`), which `<sos>`/`<eos>` surround in a
batch; those two are outside the attention mask, so the mask's positions, in order, are the tokens. Pair
tasks attend over the premise (the query is printed beside it); HAN models attend over sentences (each
sentence shaded as one item). Each line is shaded relative to its own largest value; hovering a token shows
its value (`title`), and `data-w` holds it exactly.
"""

from __future__ import annotations

import dataclasses
import html
import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import torch

from gridlab.analyses import adversarial as jw
from gridlab.analyses.base import AnalysisContext
from gridlab.analyses.common import SharedPass, decode_many, forward_once, jsd, tvd
from gridlab.analyses.importance import gradient_importance, leave_one_out
from gridlab.data.batching import Batch, Sentences, iterate_batches
from gridlab.data.catalog import DATASETS
from gridlab.errors import GridlabError
from gridlab.execution.runner import ShardRunner
from gridlab.models.classifier import Encoded
from gridlab.report.artifacts import Fragment, SectionOutput
from gridlab.report.sections import Section
from gridlab.report.stats import MODEL_AXES
from gridlab.training.loop import hierarchical

CELLS = 3
INSTANCES = 4
MAX_ITEMS = 60
ARCHITECTURES = ("flat", "pair", "han")
PER_INSTANCE = (
    "importance_correlation",
    "permutation",
    "erasure_single",
    "erasure_multi",
    "sparsity_importance",
    "rationale_recovery",
    "seed_variance",
)
# (row name, RGB of its shade, what it is)
LINES = (
    ("attention", (230, 120, 20), "the model's attention"),
    ("adversarial", (200, 30, 60), "J&W adversarial attention (ε-max JSD candidate)"),
    ("gradient", (40, 100, 220), "gradient importance |∇e·e|"),
    ("leave_one_out", (30, 150, 80), "leave-one-out importance TVD(y(x₋ₜ), y(x))"),
)


@dataclass(frozen=True)
class Adversary:
    alpha: np.ndarray | None  # (T,) the eps-max candidate over the instance's items, None when none is within eps
    jsd: float  # its JSD from the model's attention (0 when none)
    tvd: float  # its output's TVD from the model's output
    n_within: int  # candidates within eps
    k: int  # candidates optimised
    eps: float
    steps: int


@dataclass(frozen=True)
class Heatmap:
    cell: dict  # cell_id, the axes (dataset, encoder, ..., seed)
    instance_id: int
    items: list[str]  # one label per attention item: a token, or a HAN sentence's tokens joined
    query: str | None  # pair tasks: the query, shown unshaded
    label: str
    pred: str
    confidence: float  # the predicted class's probability
    weights: dict[str, np.ndarray]  # line name -> (T,) values over the items
    adversary: Adversary | None
    row_jsd: float | None  # the instance's jsd_eps_max row, when written


def build(inputs) -> SectionOutput:
    missing = []
    cells = sample_cells(inputs)
    if len(cells) == 0:
        return SectionOutput([], ["heatmaps: no trained classifier cell (flat, pair or HAN) with learned attention"])
    params = inputs.grid.analyses.get("adversarial")
    if params is None:
        missing.append("heatmaps, adversarial attention: the grid has no adversarial analysis")
    runner = ShardRunner(inputs.results_dir, inputs.grid.data_dir, inputs.grid.results.cache, torch.device("cpu"))
    adversarial_rows = inputs.rows("adversarial")
    maps = []
    for cell in cells.to_dict("records"):
        try:
            loaded = runner.load(cell["cell_id"])
        except GridlabError as error:  # e.g. the dataset is not on this machine: the other cells still render
            missing.append(f"heatmaps, cell {cell['cell_id']}: cannot load its model and data ({error})")
            continue
        ids = sample_instances(inputs, cell["cell_id"], loaded.data.splits["test"])
        maps += heatmaps(cell, loaded, ids, params, adversarial_rows)
    if not maps:
        return SectionOutput([], missing)
    fragment = Fragment(
        "heatmaps",
        "Per-instance heatmaps (J&W Fig. 1)",
        render(maps),
        caption=(
            f"Up to {INSTANCES} test instances for each of up to {CELLS} cells, chosen by the largest adversarial JSD "
            "(else the largest maximum attention): tokens shaded by the model's attention, "
            "J&W's adversarial attention, "
            "gradient and leave-one-out importance, each relative to its own largest value."
        ),
    )
    return SectionOutput([fragment], missing)


# ---- the sample -----------------------------------------------------------------------------------------------


def sample_cells(inputs) -> pd.DataFrame:
    """Up to CELLS trained cells, by the rule in the module docstring."""
    cells = inputs.cells
    if len(cells) == 0:
        return cells
    usable = cells[
        (cells["attention_mode"] == "learned")
        & cells["architecture"].isin(ARCHITECTURES)
        & cells["dataset"].map(lambda d: DATASETS[d].task != "translation")
    ]
    for analysis_id in ("adversarial", *PER_INSTANCE):
        rows = inputs.rows(analysis_id)
        if rows is not None and usable["cell_id"].isin(rows["cell_id"]).any():
            usable = usable[usable["cell_id"].isin(rows["cell_id"])]
            break
    usable = usable.sort_values([*MODEL_AXES, "seed"], na_position="last", kind="stable")
    usable = usable.drop_duplicates(subset=list(MODEL_AXES), keep="first")
    return usable.head(CELLS).reset_index(drop=True)


def sample_instances(inputs, cell_id: str, test: pa.Table) -> list[int]:
    """INSTANCES instance ids of one cell, by the rule in the module docstring."""
    for analysis_id, column in (("adversarial", "jsd_eps_max"), *((a, "max_attention") for a in PER_INSTANCE)):
        rows = inputs.rows(analysis_id)
        if rows is None:
            continue
        rows = rows[rows["cell_id"] == cell_id]
        if len(rows):
            return _top(rows.drop_duplicates("instance_id"), column)
    lengths = pd.Series([len(ids) for ids in test.column("ids").to_pylist()])
    frame = pd.DataFrame({"instance_id": test.column("instance_id").to_pylist(), "length": lengths, "x": 0.0})
    return _top(frame, "x")


def _top(rows: pd.DataFrame, column: str) -> list[int]:
    """Ids of the INSTANCES rows with the largest `column` (ties: lowest instance id), among the rows with
    2..MAX_ITEMS attention items when there are any."""
    short = rows[(rows["length"] >= 2) & (rows["length"] <= MAX_ITEMS)]
    pool = short if len(short) else rows
    ranked = pool.assign(_x=pool[column].astype(float).fillna(-math.inf)).sort_values(
        ["_x", "instance_id"], ascending=[False, True], kind="stable"
    )
    return [int(i) for i in ranked["instance_id"].head(INSTANCES)]


# ---- recomputing one cell's instances -------------------------------------------------------------------------


def heatmaps(
    cell: dict, loaded, instance_ids: list[int], params, adversarial_rows: pd.DataFrame | None
) -> list[Heatmap]:
    model, data = loaded.model, loaded.data
    han = hierarchical(model)
    subset = data.splits["test"].take(pa.array(instance_ids, pa.int64()))  # instance_id is the row index
    batch = next(iterate_batches(subset, len(instance_ids), sentences=han))
    shared = forward_once(model, batch)
    lines = {
        "attention": shared.alpha,
        "gradient": gradient_importance(model, batch, shared),
        "leave_one_out": leave_one_out(model, batch, shared),
    }
    rows = subset.to_pydict()
    written = {}
    if adversarial_rows is not None:
        mine = adversarial_rows[adversarial_rows["cell_id"] == cell["cell_id"]]
        written = dict(zip(mine["instance_id"].astype(int), mine["jsd_eps_max"].astype(float)))
    maps = []
    for b, instance_id in enumerate(batch.instance_ids.tolist()):
        mask = shared.encoded.mask[b]
        items = attention_items(rows["tokens"][b], rows["sentence_starts"][b] if han else None)
        if len(items) != int(mask.sum()):
            raise ValueError(
                f"cell {cell['cell_id']} instance {instance_id}: {len(items)} items, "
                f"{int(mask.sum())} attention positions"
            )
        weights = {name: values[b][mask].detach().double().cpu().numpy() for name, values in lines.items()}
        adversary = None
        if params is not None:
            adversary = adversarial_attention(model, shared, b, cell["cell_id"], instance_id, params)
            if adversary is not None and adversary.alpha is not None:
                weights["adversarial"] = adversary.alpha
        query = " ".join(rows["query_tokens"][b]) if "query_tokens" in rows else None
        names = data.label_names
        label, pred = int(batch.labels[b]), int(shared.pred[b])
        maps.append(
            Heatmap(
                cell,
                instance_id,
                items,
                query,
                _name(names, label),
                _name(names, pred),
                float(shared.probs[b, pred]),
                weights,
                adversary,
                written.get(instance_id),
            )
        )
    return maps


def attention_items(tokens: list[str], sentence_starts: list[int] | None) -> list[str]:
    """One label per attention position: the tokens, or for a HAN model each non-empty sentence's tokens
    (as `batching.split_sentences` cuts them)."""
    if sentence_starts is None:
        return list(tokens)
    cuts = [0, *sentence_starts[1:], len(tokens)]
    return [" ".join(tokens[start:stop]) for start, stop in itertools.pairwise(cuts) if stop > start]


def _name(names: tuple[str, ...], index: int) -> str:
    return names[index] if 0 <= index < len(names) else str(index)


def _row(shared: SharedPass, b: int) -> SharedPass:
    """Instance b's part of a shared pass, as a batch of one (h and query detached)."""
    e, keep = shared.encoded, slice(b, b + 1)
    encoded = Encoded(e.h[keep].detach(), e.mask[keep], None if e.query is None else e.query[keep].detach())
    return SharedPass(
        _batch_row(shared.batch, keep),
        encoded,
        shared.alpha[keep],
        shared.logits[keep],
        shared.probs[keep],
        shared.pred[keep],
    )


def _batch_row(batch: Batch, keep: slice) -> Batch:
    """The batch's rows `keep` (its instance ids seed the adversary's starting logits)."""
    sliced = {}
    for f in dataclasses.fields(batch):
        value = getattr(batch, f.name)
        if isinstance(value, torch.Tensor):
            value = value[keep]
        elif isinstance(value, Sentences):
            value = Sentences(*(t[keep] for t in (value.ids, value.mask, value.doc_mask)))
        sliced[f.name] = value
    return Batch(**sliced)


def adversarial_attention(
    model, shared: SharedPass, b: int, cell_id: str, instance_id: int, params
) -> Adversary | None:
    """J&W Algorithm 3 for instance b, with the analysis's own optimisation (`adversarial.optimise`: the same
    starting logits, steps and early stopping), then the candidate with the largest JSD among those within
    eps. None for a single-item instance (nothing to move)."""
    one = _row(shared, b)
    if int(one.encoded.mask.sum()) <= 1:
        return None
    context = AnalysisContext(cell_id, model, one.encoded.h.device, params)
    logits, steps = jw.optimise(context, one)
    return _select(model, one, logits, jw.epsilon(params, one), int(steps[0]))


@torch.no_grad()
def _select(model, one: SharedPass, logits: torch.Tensor, eps: float, steps: int) -> Adversary:
    """The eps-max candidate of final logits (1, k, T), over the instance's items."""
    mask = one.encoded.mask
    alphas = jw.candidates(logits, mask)  # (1, k, T)
    tvds = tvd(decode_many(model, one, alphas), one.probs[:, None, :])[0].double()  # (k,)
    jsds = jsd(alphas, one.alpha[:, None, :])[0].double()  # (k,)
    within = tvds <= eps
    if not bool(within.any()):
        return Adversary(None, 0.0, 0.0, 0, len(jsds), eps, steps)
    best = int(jsds.masked_fill(~within, -1.0).argmax())
    alpha = alphas[0, best][mask[0]].double().cpu().numpy()
    return Adversary(alpha, float(jsds[best]), float(tvds[best]), int(within.sum()), len(jsds), eps, steps)


# ---- HTML -----------------------------------------------------------------------------------------------------

FONT = "font-family:system-ui,sans-serif;font-size:13px;line-height:1.9"


def render(maps: list[Heatmap]) -> str:
    parts = [f'<div style="{FONT}">', legend()]
    parts += [instance_block(m) for m in maps]
    parts.append("</div>")
    return "\n".join(parts)


def legend() -> str:
    swatches = []
    for name, rgb, meaning in LINES:
        ramp = ", ".join(f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{a})" for a in (0.0, 1.0))
        swatches.append(
            f'<span style="display:inline-block;margin-right:14px"><span style="display:inline-block;'
            f'width:48px;height:10px;background:linear-gradient(to right, {ramp});border:1px solid #ccc">'
            f"</span> {_e(name)}: {_e(meaning)}</span>"
        )
    note = (
        "Shade ∝ value / the line's largest value (0 = white); hover a token for its value. "
        "Adversarial: the most distant of J&W's k candidates whose output moves by at most ε in TVD."
    )
    return f'<div style="margin-bottom:10px">{"".join(swatches)}<div style="color:#555">{_e(note)}</div></div>'


def instance_block(m: Heatmap) -> str:
    cell = m.cell
    name = " · ".join(str(cell[k]) for k in ("dataset", "encoder", "attention", "projection") if cell.get(k))
    head = (
        f"{name} · seed {cell['seed']} (cell {cell['cell_id']}) — test instance {m.instance_id}: "
        f"label {m.label}, prediction {m.pred} (p = {m.confidence:.3f})"
    )
    lines = [f'<div style="font-weight:600">{_e(head)}</div>']
    if m.query is not None:
        lines.append(f'<div style="color:#333">query: {_e(m.query)}</div>')
    lines.append(f'<div style="color:#333">{_e(_adversary_note(m))}</div>')
    rows = []
    for name, rgb, _ in LINES:
        if name not in m.weights:
            continue
        rows.append(
            f'<tr data-line="{_e(name)}"><th style="text-align:left;vertical-align:top;padding-right:8px;'
            f'font-weight:normal;color:#555;white-space:nowrap">{_e(name)}</th>'
            f"<td>{_shaded(m.items, m.weights[name], rgb)}</td></tr>"
        )
    lines.append(f'<table style="border-collapse:collapse">{"".join(rows)}</table>')
    return (
        f'<div data-cell="{_e(cell["cell_id"])}" data-instance="{m.instance_id}" '
        f'style="margin:14px 0;padding:8px;border:1px solid #ddd;border-radius:4px">{"".join(lines)}</div>'
    )


def _adversary_note(m: Heatmap) -> str:
    a = m.adversary
    if a is None:
        return "adversarial: not computed (no adversarial analysis in the grid, or a single item)"
    written = f"; its jsd_eps_max row: {m.row_jsd:.4f}" if m.row_jsd is not None else ""
    if a.alpha is None:
        return f"adversarial: no candidate within ε = {a.eps:g} after {a.steps} steps{written}"
    return (
        f"adversarial: JSD {a.jsd:.4f} from the model's attention (max ln 2 = 0.693), output TVD {a.tvd:.4f} "
        f"≤ ε = {a.eps:g}; {a.n_within} of {a.k} candidates within ε after {a.steps} steps{written}"
    )


def _shaded(items: list[str], weights: np.ndarray, rgb: tuple[int, int, int]) -> str:
    top = float(np.max(weights)) if len(weights) else 0.0
    spans = []
    for item, w in zip(items, weights):
        alpha = float(w) / top if top > 0 else 0.0
        spans.append(
            f'<span data-w="{float(w)!r}" title="{_e(item)}: {float(w):.4g}" style="background-color:'
            f'rgba({rgb[0]},{rgb[1]},{rgb[2]},{alpha:.3f});padding:1px 2px;margin:0 1px;border-radius:2px">'
            f"{_e(item)}</span>"
        )
    return " ".join(spans)


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


SECTION = Section(
    id="heatmaps",
    title="Per-instance heatmaps (Jain & Wallace Fig. 1)",
    analyses=(),  # it reloads the models: built for any grid with a trained classifier (rows only pick instances)
    build=build,
)
