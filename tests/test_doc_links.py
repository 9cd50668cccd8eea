"""Every relative link in the README and docs/ names a file that exists: a page a reader is sent to is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def relative_targets(page: Path) -> list[str]:
    targets = (match.group(1).split("#", 1)[0] for match in LINK.finditer(page.read_text()))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path):
    missing = [t for t in relative_targets(page) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(REPO)} links to files that do not exist: {missing}"


# Folders of one machine: a path under them in a committed file is meaningless on any other.
MACHINE_PATH = re.compile(r"(?<![\w.$~-])/(?:work|root|Users|private/var|tmp/pytest-of-[^/\s]+)/")
COMMITTED_TEXT = ["README.md", "docs", "gridlab", "grids", "bench", "deploy", "cluster.yaml"]


def committed_text_files() -> list[Path]:
    found = []
    for name in COMMITTED_TEXT:
        path = REPO / name
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        found += [f for f in files if f.is_file() and f.suffix in {".md", ".py", ".yaml", ".csv", ".sh", ".txt", ""}]
    return found


def test_no_committed_file_names_a_path_of_one_machine():
    hits = [
        f"{path.relative_to(REPO)}:{number}"
        for path in committed_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, f"paths of one machine in: {hits}"
