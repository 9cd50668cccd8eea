"""One launch or analyze per grid at a time: a second one is refused in one line naming the holder, readers
keep working, and a holder that is killed leaves no stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.store.layout import GridWorkspace
from gridlab.store.lock import GridBusy, exclusive


def test_a_second_holder_is_refused_until_the_first_lets_go(tmp_path: Path):
    workspace = GridWorkspace(tmp_path / "g")
    with exclusive(workspace, "launch"):
        with pytest.raises(GridBusy) as busy:
            with exclusive(workspace, "analyze"):
                pass
        (line,) = busy.value.lines()
        assert line.startswith(f"g: `gridlab launch` (pid {os.getpid()} on ") and "is running on this grid" in line
    with exclusive(workspace, "analyze"):  # released
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path):
    workspace = GridWorkspace(tmp_path / "g")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from gridlab.store.layout import GridWorkspace; "
            "from gridlab.store.lock import exclusive\n"
            f"with exclusive(GridWorkspace(Path({str(workspace.path)!r})), 'launch'):\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(GridBusy, match=f"pid {holder.pid} on "):
            with exclusive(workspace, "launch"):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with exclusive(workspace, "launch"):  # the operating system released it with the process
        pass


def test_launch_and_analyze_say_who_holds_the_grid_and_readers_still_work(tmp_path: Path):
    grid = {
        "name": "g",
        "results_dir": str(tmp_path / "runs"),
        "grid": {"dataset": ["synthetic"], "encoder": ["average"], "seed": [0]},
        "analyses": {"permutation": {"n": 5}},
    }
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid))
    cli = CliRunner()
    with exclusive(GridWorkspace(tmp_path / "runs" / "g"), "launch"):
        started = time.time()
        for command in ("launch", "analyze"):
            result = cli.invoke(app, [command, str(path)])
            assert result.exit_code == 1, result.output
            assert len(result.output.strip().splitlines()) == 1 and "`gridlab launch` (pid" in result.output
        assert time.time() - started < 30  # refused at once, before any Ray starts
        for reader in ("status", "plan"):
            assert cli.invoke(app, [reader, str(path)]).exit_code == 0
