"""Per-instance heatmaps in the manner of Jain & Wallace's Fig. 1: a few test instances of a few trained
cells, each item shaded by the model's attention, by J&W's adversarial attention (a maximally different
distribution whose output stays within eps in TVD), by gradient importance and by leave-one-out importance.

    >>> out = SECTION.build(inputs)    # one Fragment "heatmaps": self-contained HTML, every text escaped

Everything shown is read from rows: the items and their scores from `token_scores`, the adversarial
attention from the `adversarial` rows (`alpha_eps_max`, the eps-max candidate, with its JSD, TVD and
counts). Without `adversarial` rows the adversarial line is left out, and said so.

The sample is deterministic (the same rows give the same heatmaps):
- cells: trained classifier cells (flat, pair, HAN) with learned attention and `token_scores` rows; those
  with adversarial rows when there are any, else those with any other per-instance rows; the lowest seed of
  each configuration; the first `CELLS` configurations in (dataset, encoder, attention, projection, lambda,
  architecture) order;
- instances of a cell: among those with `token_scores` rows, the `INSTANCES` with the largest eps-max
  adversarial JSD in its `adversarial` rows (the widest gap between two explanations of one output), else
  the largest maximum attention; ties by instance id; only instances with 2..`MAX_ITEMS` attention items,
  unless none is that short.

Items are a flat or pair model's tokens (a pair task's query is printed beside them, unshaded) or a HAN
model's sentences. Each line is shaded relative to its own largest value; hovering an item shows its value
(`title`), and `data-w` holds it exactly.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gridlab.catalog.analyses import ANALYSES
from gridlab.data.catalog import DATASETS
from gridlab.report.artifacts import Fragment, SectionOutput
from gridlab.report.sections import Section
from gridlab.report.stats import MODEL_AXES

CELLS = 3
INSTANCES = 4
MAX_ITEMS = 60
ARCHITECTURES = ("flat", "pair", "han")
SCORES = "token_scores"
# (row name, RGB of its shade, what it is, the column it is read from: token_scores', adversarial's last)
LINES = (
    ("attention", (230, 120, 20), "the model's attention", "alpha"),
    ("adversarial", (200, 30, 60), "J&W adversarial attention (ε-max JSD candidate)", "alpha_eps_max"),
    ("gradient", (40, 100, 220), "gradient importance |∇e·e|", "gradient"),
    ("leave_one_out", (30, 150, 80), "leave-one-out importance TVD(y(x₋ₜ), y(x))", "leave_one_out"),
)


@dataclass(frozen=True)
class Adversary:
    alpha: np.ndarray | None  # (T,) the eps-max candidate over the instance's items, None when none is within eps
    jsd: float  # its JSD from the model's attention (0 when none)
    tvd: float  # its output's TVD from the model's output
    n_within: int  # candidates within eps
    k: int  # candidates optimised
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


def build(inputs) -> SectionOutput:
    scores = inputs.rows(SCORES)
    cells = sample_cells(inputs)
    if scores is None or len(cells) == 0:
        return SectionOutput(
            [], [f"heatmaps: no trained classifier cell (flat, pair or HAN) with learned attention and {SCORES} rows"]
        )
    adversarial = inputs.rows("adversarial") if inputs.requested("adversarial") else None
    missing = []
    if adversarial is None:
        missing.append("heatmaps, adversarial attention: the grid has no adversarial rows")
    elif "alpha_eps_max" not in adversarial.columns:
        missing.append(
            "heatmaps, adversarial attention: the adversarial rows predate `alpha_eps_max` (move "
            f"{inputs.grid.workspace.analysis('adversarial')} aside and `gridlab analyze` rewrites them)"
        )
        adversarial = None
    maps = []
    for cell in cells.to_dict("records"):
        mine = scores[scores["cell_id"] == cell["cell_id"]].drop_duplicates("instance_id").set_index("instance_id")
        theirs = None if adversarial is None else _cell_rows(adversarial, cell["cell_id"])
        for instance_id in sample_instances(inputs, cell["cell_id"], mine.reset_index()):
            maps.append(heatmap(cell, instance_id, mine.loc[instance_id], theirs))
    fragment = Fragment(
        "heatmaps",
        "Per-instance heatmaps (J&W Fig. 1)",
        render(maps),
        caption=(
            f"Up to {INSTANCES} test instances for each of up to {CELLS} cells, chosen by the largest adversarial JSD "
            "(else the largest maximum attention): items shaded by the model's attention, "
            "J&W's adversarial attention, "
            "gradient and leave-one-out importance, each relative to its own largest value."
        ),
    )
    return SectionOutput([fragment], missing)


# ---- the sample -----------------------------------------------------------------------------------------------


def with_heatmaps() -> list[str]:
    """The analyses whose declarations say their per-instance rows are worth heatmaps of the same cells."""
    return [analysis_id for analysis_id, info in ANALYSES.items() if info.heatmaps]


def sample_cells(inputs) -> pd.DataFrame:
    """Up to CELLS trained cells with token_scores rows, by the rule in the module docstring."""
    cells, scores = inputs.cells, inputs.rows(SCORES)
    if len(cells) == 0 or scores is None:
        return cells.iloc[0:0]
    usable = cells[
        (cells["attention_mode"] == "learned")
        & cells["architecture"].isin(ARCHITECTURES)
        & cells["dataset"].map(lambda d: DATASETS[d].task != "translation")
        & cells["cell_id"].isin(scores["cell_id"])
    ]
    for analysis_id in sorted(with_heatmaps(), key=lambda a: a != "adversarial"):
        rows = inputs.rows(analysis_id)
        if rows is not None and usable["cell_id"].isin(rows["cell_id"]).any():
            usable = usable[usable["cell_id"].isin(rows["cell_id"])]
            break
    usable = usable.sort_values([*MODEL_AXES, "seed"], na_position="last", kind="stable")
    usable = usable.drop_duplicates(subset=list(MODEL_AXES), keep="first")
    return usable.head(CELLS).reset_index(drop=True)


def sample_instances(inputs, cell_id: str, scored: pd.DataFrame) -> list[int]:
    """INSTANCES instance ids among `scored` (the cell's token_scores rows), by the rule in the module docstring."""
    adversarial = inputs.rows("adversarial") if inputs.requested("adversarial") else None
    if adversarial is not None and "jsd_eps_max" in adversarial.columns:
        rows = _cell_rows(adversarial, cell_id)
        rows = rows[rows["instance_id"].isin(scored["instance_id"])]
        if len(rows):
            return _top(rows.drop_duplicates("instance_id"), "jsd_eps_max")
    return _top(scored, "max_attention")


def _cell_rows(rows: pd.DataFrame, cell_id: str) -> pd.DataFrame:
    return rows[rows["cell_id"] == cell_id]


def _top(rows: pd.DataFrame, column: str) -> list[int]:
    """Ids of the INSTANCES rows with the largest `column` (ties: lowest instance id), among the rows with
    2..MAX_ITEMS attention items when there are any."""
    short = rows[(rows["length"] >= 2) & (rows["length"] <= MAX_ITEMS)]
    pool = short if len(short) else rows
    ranked = pool.assign(_x=pool[column].astype(float).fillna(-math.inf)).sort_values(
        ["_x", "instance_id"], ascending=[False, True], kind="stable"
    )
    return [int(i) for i in ranked["instance_id"].head(INSTANCES)]


def heatmap(cell: dict, instance_id: int, scores: pd.Series, adversarial: pd.DataFrame | None) -> Heatmap:
    """One instance's heatmap from its token_scores row and, when there is one, its adversarial row."""
    weights = {name: np.asarray(scores[column], dtype=float) for name, _, _, column in LINES if column in scores}
    adversary = None
    if adversarial is not None:
        row = adversarial[adversarial["instance_id"] == instance_id]
        if len(row):
            adversary = _adversary(row.iloc[0])
            if adversary.alpha is not None:
                weights["adversarial"] = adversary.alpha
    spec = DATASETS.get(str(cell.get("dataset")))
    named = spec.class_name if spec else str  # "negative", not the file's "0"
    return Heatmap(
        cell,
        instance_id,
        list(scores["items"]),
        scores["query"] if isinstance(scores["query"], str) else None,
        named(str(scores["label_name"])),
        named(str(scores["pred_name"])),
        float(scores["confidence"]),
        weights,
        adversary,
    )


def _adversary(row: pd.Series) -> Adversary:
    alpha = row["alpha_eps_max"]  # a list, or null; NaN in a part written before the column existed
    return Adversary(
        np.asarray(alpha, dtype=float) if isinstance(alpha, list | np.ndarray) else None,
        float(row["jsd_eps_max"]),
        float(row["tvd_at_jsd"]),
        int(row["n_within_eps"]),
        len(row["candidate_jsd"]),
        int(row["steps_run"]),
    )


# ---- HTML -----------------------------------------------------------------------------------------------------

FONT = "font-family:system-ui,sans-serif;font-size:13px;line-height:1.9"


def render(maps: list[Heatmap]) -> str:
    parts = [f'<div style="{FONT}">', legend()]
    parts += [instance_block(m) for m in maps]
    parts.append("</div>")
    return "\n".join(parts)


def legend() -> str:
    swatches = []
    for name, rgb, meaning, _ in LINES:
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
    for name, rgb, _, _ in LINES:
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
        return "adversarial: no row (no adversarial analysis in the grid, or not run on this instance)"
    if a.k and a.steps == 0 and a.alpha is None and a.n_within == a.k:
        return "adversarial: a single item, nothing to move"
    if a.alpha is None:
        return f"adversarial: no candidate within ε after {a.steps} steps"
    return (
        f"adversarial: JSD {a.jsd:.4f} from the model's attention (max ln 2 = 0.693), output TVD {a.tvd:.4f} "
        f"≤ ε; {a.n_within} of {a.k} candidates within ε after {a.steps} steps"
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
    analyses=(SCORES,),
    build=build,
)
