"""How long a study took on the machine that ran it, from what its launches left in the grid's workspace
(`gridlab.store.layout`): the launch log, a start and an end line per `gridlab launch`, and Ray Tune's
result log of every trial, a line per report (one per epoch, one final), each with `time_this_iter_s`.

    >>> wall_time(expanded.workspace)
    WallTime(launches=2, launch_seconds=1834.2, unfinished=0, trials=18, epochs=131, train_seconds=3310.5)

Launch seconds are wall-clock (training and analyses together, trials in parallel); train seconds are the
trials' own time summed, so they exceed the wall time when trials run side by side. Analysis shards are not
timed one by one: their time is inside the launch's. A launch killed outright has a start line and no end
and counts as unfinished; launches from before this log existed are not counted at all (launches = 0).
Only JSON is read here (no Ray): a report runs where the results are, with or without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gridlab.store.layout import GridWorkspace
from gridlab.store.timings import json_lines
from gridlab.text import counted, duration


@dataclass(frozen=True)
class WallTime:
    launches: int  # launches with both a start and an end line
    launch_seconds: float  # their wall time, summed
    unfinished: int  # launches with a start line and no end line (killed), or ended by an error
    trials: int  # Tune trials with results (a cell retrained or resumed in another launch counts again)
    epochs: int  # reported training epochs over all trials
    train_seconds: float  # the trials' reported time, summed over every report

    def describe(self) -> str:
        """'2 launches, 30m34s wall; 18 trials, 131 epochs, 55m10s of trial time'."""
        launches = (
            f"{counted(self.launches, 'launch', 'launches')}, {duration(self.launch_seconds)} wall"
            if self.launches
            else "launch wall time not recorded"
        )
        if self.unfinished:
            launches += f" ({self.unfinished} unfinished)"
        trials = (
            f"{counted(self.trials, 'trial')}, {counted(self.epochs, 'epoch')}, "
            f"{duration(self.train_seconds)} of trial time"
            if self.trials
            else "no training recorded"
        )
        return f"{launches}; {trials}"


NO_TIME = WallTime(0, 0.0, 0, 0, 0, 0.0)  # nothing measured here: the record's time is carried


def wall_time(workspace: GridWorkspace) -> WallTime:
    launches, seconds, unfinished = _launches(workspace.launch_log)
    trials, epochs, train = _trials(workspace)
    return WallTime(launches, seconds, unfinished, trials, epochs, train)


def _launches(log: Path) -> tuple[int, float, int]:
    if not log.is_file():
        return 0, 0.0, 0
    lines = json_lines(log)
    started = {line.get("launch") for line in lines if line.get("event") == "start"}
    ended = {line.get("launch"): line for line in lines if line.get("event") == "end"}
    finished = [line for line in ended.values() if isinstance(line.get("seconds"), (int, float))]
    failed = sum(1 for line in finished if not line.get("completed", False))
    return len(finished), float(sum(line["seconds"] for line in finished)), len(started - set(ended)) + failed


def _trials(workspace: GridWorkspace) -> tuple[int, int, float]:
    trials, epochs, seconds = 0, 0, 0.0
    for path in workspace.tune_results():
        reports = json_lines(path)
        if not reports:
            continue
        trials += 1
        epochs += sum(1 for r in reports if "epoch" in r and not r.get("final") and not r.get("failed"))
        seconds += sum(float(r.get("time_this_iter_s") or 0.0) for r in reports)
    return trials, epochs, seconds
