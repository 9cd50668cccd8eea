"""The README's two set-up commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README must start with a bash block of the set-up commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands():
    readme = (REPO / "README.md").read_text()
    assert readme.index("```bash") < 20
    commands = readme_commands()
    assert len(commands) == 2
    assert "grids/quick.yaml" in commands[0] and "constraints.txt" in commands[0]
    assert commands[1].endswith("pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in ci


def test_torch_is_pinned_by_the_constraints():
    assert "torch==2.13.0" in (REPO / "constraints.txt").read_text().split()
