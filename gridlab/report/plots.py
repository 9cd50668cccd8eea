"""Small multiples for the report's figures: one panel per model configuration (the axes that vary in the
rows, seeds pooled), drawn with matplotlib's object API (no pyplot state, so figures never leak between
sections and the Agg canvas is used whatever the environment's backend).

    >>> fig = facet(rows, lambda ax, panel: ax.hist(panel["tau_g"]), "Kendall tau_g", xlabel="tau_g")
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gridlab.report.stats import grouping_axes

PANEL_WIDTH, PANEL_HEIGHT = 3.4, 2.6
# Colours per predicted class / ranking (matplotlib's tab10, so they read the same in every figure).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def panel_label(keys: dict) -> str:
    return " · ".join(str(v) for v in keys.values() if not (isinstance(v, float) and math.isnan(v)))


def panels(frame: pd.DataFrame, axes: list[str] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows) per configuration, in sorted order."""
    axes = grouping_axes(frame) if axes is None else axes
    out = []
    for key, group in frame.groupby(axes, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append((panel_label(dict(zip(axes, key))), group))
    return out


def facet(
    frame: pd.DataFrame,
    draw: Callable,
    title: str,
    *,
    xlabel: str = "",
    ylabel: str = "",
    axes: list[str] | None = None,
    max_cols: int = 4,
    sharex: bool = True,
    sharey: bool = False,
    legend: bool = False,
    panel_size: tuple[float, float] = (PANEL_WIDTH, PANEL_HEIGHT),
) -> Figure:
    """A figure with one panel per configuration (`panel_size` inches each); `draw(ax, rows)` fills a panel."""
    groups = panels(frame, axes)
    n = max(len(groups), 1)
    cols = min(max_cols, n)
    rows = math.ceil(n / cols)
    width, height = panel_size
    figure = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    grid = figure.subplots(rows, cols, squeeze=False, sharex=sharex, sharey=sharey)
    for ax, (label, group) in zip(grid.flat, groups):
        draw(ax, group)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=8)
        if legend and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, frameon=False)
    for ax in list(grid.flat)[len(groups) :]:
        ax.set_visible(False)
    for ax in grid[-1, :]:
        ax.set_xlabel(xlabel, fontsize=9)
    for ax in grid[:, 0]:
        ax.set_ylabel(ylabel, fontsize=9)
    figure.suptitle(title, fontsize=11)
    return figure


def class_histogram(column: str, bins: np.ndarray) -> Callable:
    """A `draw` that overlays one histogram of `column` per predicted class (J&W's colouring)."""

    def draw(ax, rows: pd.DataFrame) -> None:
        for i, (pred, group) in enumerate(rows.groupby("pred", sort=True)):
            values = group[column].dropna().astype(float)
            if len(values):
                ax.hist(values, bins=bins, alpha=0.55, color=COLOURS[i % len(COLOURS)], label=f"pred {pred}")

    return draw


def scatter(x: str, y: str, by_class: bool = True) -> Callable:
    """A `draw` that scatters y against x, one colour per predicted class."""

    def draw(ax, rows: pd.DataFrame) -> None:
        groups = rows.groupby("pred", sort=True) if by_class else [("all", rows)]
        for i, (pred, group) in enumerate(groups):
            kept = group[[x, y]].dropna().astype(float)
            ax.scatter(
                kept[x],
                kept[y],
                s=6,
                alpha=0.45,
                color=COLOURS[i % len(COLOURS)],
                linewidths=0,
                label=f"pred {pred}" if by_class else None,
            )

    return draw
