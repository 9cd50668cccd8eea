"""What a grid's results folder says about how long its work takes: every trained epoch (Ray Tune's result
log of each trial, a line per report with `time_this_iter_s`) and every analysis shard (`shards.jsonl`, a line
the driver writes as each shard finishes, and one per per-model analysis). `gridlab plan` estimates the work
left from these, and `gridlab fidelity` states each study's wall time.

    >>> epoch_seconds(workspace)          # {cell id: [seconds of each epoch, ...]}
    >>> record_shard(workspace, cell_id, shard=2, instances=256, seconds=41.0)
    >>> shard_seconds(workspace)          # {cell id: (instances, seconds) summed over its shards}
    >>> record_model(workspace, cell_id, "adversarial_model", seconds=95.0)
    >>> model_seconds(workspace)          # {(cell id, analysis): seconds} of the per-model analyses
"""

from __future__ import annotations

import json
from pathlib import Path

from gridlab.store.layout import GridWorkspace


def json_lines(path: Path) -> list[dict]:
    """The parseable JSON objects of a file, one per line (a line cut by a kill is skipped)."""
    lines = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines


def epoch_seconds(workspace: GridWorkspace) -> dict[str, list[float]]:
    """Per trained cell (a trial folder is named by its cell id), the time of each epoch it reported."""
    epochs: dict[str, list[float]] = {}
    for path in workspace.tune_results():
        for report in json_lines(path):
            if "epoch" in report and not report.get("final") and not report.get("failed"):
                seconds = report.get("time_this_iter_s")
                if isinstance(seconds, (int, float)):
                    epochs.setdefault(path.parent.name, []).append(float(seconds))
    return epochs


def record_shard(workspace: GridWorkspace, cell_id: str, shard: int, instances: int, seconds: float) -> None:
    workspace.shard_log.parent.mkdir(parents=True, exist_ok=True)
    line = {"cell": cell_id, "shard": shard, "instances": instances, "seconds": round(seconds, 3)}
    with open(workspace.shard_log, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def shard_seconds(workspace: GridWorkspace) -> dict[str, tuple[int, float]]:
    """Per cell, the instances and seconds of its analysed shards, summed."""
    totals: dict[str, tuple[int, float]] = {}
    if not workspace.shard_log.is_file():
        return totals
    for line in json_lines(workspace.shard_log):
        if "instances" not in line:  # a per-model analysis (`record_model`)
            continue
        instances, seconds = totals.get(line["cell"], (0, 0.0))
        totals[line["cell"]] = (instances + int(line["instances"]), seconds + float(line["seconds"]))
    return totals


def record_model(workspace: GridWorkspace, cell_id: str, analysis: str, seconds: float) -> None:
    """A per-model analysis's time (an adversary's training, the diagnostic MLP's): it has no instances to
    divide by, so `gridlab plan` prices it whole, by analysis."""
    workspace.shard_log.parent.mkdir(parents=True, exist_ok=True)
    line = {"cell": cell_id, "analysis": analysis, "seconds": round(seconds, 3)}
    with open(workspace.shard_log, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def model_seconds(workspace: GridWorkspace) -> dict[tuple[str, str], float]:
    """Per (cell, per-model analysis), the seconds it last took."""
    times: dict[tuple[str, str], float] = {}
    if not workspace.shard_log.is_file():
        return times
    for line in json_lines(workspace.shard_log):
        if "analysis" in line and isinstance(line.get("seconds"), (int, float)):
            times[(str(line["cell"]), str(line["analysis"]))] = float(line["seconds"])
    return times
