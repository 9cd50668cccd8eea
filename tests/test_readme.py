"""The README's two set-up commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README must start with a bash block of the set-up commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands_that_install_from_the_lock():
    readme = (REPO / "README.md").read_text()
    assert readme.index("```bash") < 20
    commands = readme_commands()
    assert len(commands) == 2
    assert "grids/quick.yaml" in commands[0]
    assert all("-c requirements.lock" in command for command in commands)
    assert commands[1].endswith("pytest")


def test_ci_runs_the_readme_commands_in_a_new_venv():
    ci = (REPO / ".ci" / "run").read_text()
    assert "-m venv" in ci and "--system-site-packages" not in ci
    assert "README.md" in ci  # the commands are read from the README, so they run as written
    for check in ("ruff check", "ruff format --check", "mypy"):
        assert check in ci
