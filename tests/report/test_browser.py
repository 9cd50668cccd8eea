"""The quick grid's index.html in headless Chromium: every table and figure of report.json is in the
rendered DOM, and every figure's image really loaded (index.html's inline script marks each <img>)."""

from __future__ import annotations

import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")


class Elements(HTMLParser):
    """id -> (tag, attributes) of every element with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, tuple[str, dict[str, str]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if "id" in attributes:
            self.by_id[attributes["id"]] = (tag, attributes)


def rendered_dom(index: Path, profile: Path) -> str:
    if not CHROMIUM.exists():
        if os.environ.get("GRIDLAB_REQUIRE_CHROMIUM") == "1":
            pytest.fail(f"{CHROMIUM} not found and GRIDLAB_REQUIRE_CHROMIUM=1")
        pytest.skip(f"{CHROMIUM} not found: install chromium to check the report in a browser")
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        index.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_index_renders_every_table_and_figure(quick_report, tmp_path: Path):
    dom = rendered_dom(quick_report.report / "index.html", tmp_path / "profile")
    parser = Elements()
    parser.feed(dom)
    artifacts = quick_report.manifest["artifacts"]
    assert artifacts
    for artifact in artifacts:
        assert artifact["id"] in parser.by_id, artifact["id"]
        tag, attributes = parser.by_id[artifact["id"]]
        if artifact["kind"] == "table":
            assert tag == "table" and "gridlab-table" in attributes["class"]
        elif artifact["kind"] == "figure":
            assert tag == "img" and "gridlab-figure" in attributes["class"]
            assert attributes.get("data-loaded") == "true", (artifact["id"], attributes)
            assert int(attributes["data-natural-width"]) > 0
        else:
            assert tag == "div" and "gridlab-fragment" in attributes["class"]
