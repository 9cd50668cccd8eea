"""Writes a report folder from the sections' artifacts:

    report/
      index.html          one self-contained page (inline CSS, figures inlined as PNG data, no external assets):
                          contents, one section per paper, tables as <table id=... class="gridlab-table">,
                          figures as <img id=... class="gridlab-figure">, fragments inline, a "Missing" list
      <table id>.md       Markdown, numbers rounded for reading
      <table id>.csv      the same table at full precision
      <figure id>.png     matplotlib (Agg), dpi 110
      <fragment id>.html  each fragment as a page of its own
      report.json         the manifest: every artifact (id, kind, section, files, the cells whose rows it
                          read and the commits that trained them), what is missing, and the report's
                          provenance (grid file, its content hash, the commit that rendered it)

    >>> manifest = render_report([SectionResult("jain_wallace", "Jain & Wallace (2019)", artifacts, [])],
    ...                          Path("runs/quick/report"), title="quick")

The folder is built as a hidden temporary sibling and renamed into place at the end, so a reader never sees
a half-written report: a failure leaves the previous report as it was and removes the temporary folder.
Replacing an existing report is two renames (old out of the way, new in), then the old one is deleted.
An existing folder that is not a gridlab report (no report.json, not empty) is never replaced.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gridlab.errors import GridlabError
from gridlab.report.artifacts import Artifact, Figure, Fragment, Provenance, Table
from gridlab.store.atomic import publish_folder, replaced, staging_folder, write_text
from gridlab.text import counted

MANIFEST = "report.json"
MANIFEST_VERSION = 2  # 2: cells and commits per section and artifact, the report's provenance
DPI = 110
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class SectionResult:
    """One section as the report shows it: rendered (its analyses ran, artifacts built) or missing."""

    id: str
    title: str
    artifacts: list[Artifact] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    rendered: bool = True  # False: none of its analyses ran; listed under missing, no empty section
    cells: tuple[str, ...] = ()  # the cells whose rows its artifacts were computed from, sorted


def render_report(
    sections: list[SectionResult], out: Path, title: str, intro: str = "", provenance: Provenance | None = None
) -> dict:
    """Writes the folder `out` (replacing a previous report there) and returns the manifest it wrote."""
    _check_ids(sections)
    out = Path(out)
    _check_replaceable(out)
    staging = staging_folder(out)
    try:
        manifest = _write_all(sections, staging, title, intro, provenance)
        publish_folder(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _check_ids(sections: list[SectionResult]) -> None:
    seen: dict[str, str] = {}
    for section in sections:
        for artifact in section.artifacts:
            if not _ID.match(artifact.id):
                raise ValueError(f"artifact id {artifact.id!r} of section {section.id} is not a safe file stem")
            if artifact.id in seen:
                raise ValueError(
                    f"artifact id {artifact.id!r} used twice (sections {seen[artifact.id]} and {section.id})"
                )
            seen[artifact.id] = section.id
    for reserved in ("index", "report"):
        if reserved in seen:
            raise ValueError(f"artifact id {reserved!r} would overwrite the report's own files")


def _check_replaceable(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).is_file())):
        raise GridlabError(
            f"{out} exists and is not a gridlab report (no {MANIFEST}); choose another --out or remove it"
        )


# ---------------------------------------------------------------- files


def _write_all(
    sections: list[SectionResult], folder: Path, title: str, intro: str, provenance: Provenance | None
) -> dict:
    entries = []
    for section in sections:
        for artifact in section.artifacts:
            files = _write_artifact(artifact, folder)
            entries.append(
                {
                    "id": artifact.id,
                    "kind": _kind(artifact),
                    "section": section.id,
                    "title": artifact.title,
                    "files": files,
                    **_trace(section, provenance),
                }
            )
    manifest = {
        "version": MANIFEST_VERSION,
        "title": title,
        "index": "index.html",
        "provenance": _provenance_entry(provenance),
        "sections": [
            {
                "id": s.id,
                "title": s.title,
                "rendered": s.rendered,
                "artifacts": [a.id for a in s.artifacts],
                "missing": list(s.missing),
                **_trace(s, provenance),
            }
            for s in sections
        ],
        "artifacts": entries,
        "missing": [f"{s.title}: {line}" for s in sections for line in s.missing],
    }
    write_text(folder / "index.html", _index_html(sections, title, intro, folder, provenance))
    write_text(folder / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def _trace(section: SectionResult, provenance: Provenance | None) -> dict:
    """The cells a section's artifacts were computed from, and the commits that trained them."""
    trained = provenance.trained_with(section.cells) if provenance else []
    return {"cells": list(section.cells), "trained_with": trained}


def _provenance_entry(provenance: Provenance | None) -> dict:
    if provenance is None:
        return {}
    return {
        "grid_file": provenance.grid_file,
        "grid_hash": provenance.grid_hash,
        "rendered_with": provenance.rendered_with,
    }


def _kind(artifact: Artifact) -> str:
    return {Table: "table", Figure: "figure", Fragment: "fragment"}[type(artifact)]


def _write_artifact(artifact: Artifact, folder: Path) -> list[str]:
    if isinstance(artifact, Table):
        write_text(folder / f"{artifact.id}.md", table_markdown(artifact))
        write_text(folder / f"{artifact.id}.csv", artifact.frame.to_csv(index=False))
        return [f"{artifact.id}.md", f"{artifact.id}.csv"]
    if isinstance(artifact, Figure):
        target = folder / f"{artifact.id}.png"
        with replaced(target) as partial:
            artifact.figure.savefig(partial, dpi=DPI, format="png", bbox_inches="tight")
        artifact.figure.clear()  # no pyplot: nothing else holds it, this frees the artists now
        return [target.name]
    if isinstance(artifact, Fragment):
        page = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(artifact.title)}'
            f"</title><style>{CSS}</style></head><body><h1>{_e(artifact.title)}</h1>\n{artifact.html}\n"
            f'<p class="caption">{_e(artifact.caption)}</p></body></html>\n'
        )
        write_text(folder / f"{artifact.id}.html", page)
        return [f"{artifact.id}.html"]
    raise TypeError(f"not a report artifact: {artifact!r}")


# ---------------------------------------------------------------- Markdown


def readable(table: Table) -> pd.DataFrame:
    """What a reader sees: `display` when the section gave one, else the frame with rounded numbers."""
    return table.display if table.display is not None else table.frame


def cell_text(value: object) -> str:
    """A table cell for reading: floats to 3 decimals (thousands as integers), nulls as '–'."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3f}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (no tabulate dependency); '|' in cells is escaped."""

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    header = [str(c) for c in frame.columns]
    numeric = [
        pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]) for c in frame.columns
    ]
    lines = [row(header), "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    lines += [row([cell_text(v) for v in values]) for values in frame.itertuples(index=False, name=None)]
    return "\n".join(lines)


def table_markdown(table: Table) -> str:
    if table.markdown is not None:
        return table.markdown
    parts = [f"# {table.title}", "", markdown_table(readable(table))]
    if table.caption:
        parts += ["", table.caption]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- index.html

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:1.5rem;color:#1d2329;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{border-bottom:2px solid #d8dee4;padding-bottom:.2rem;margin-top:2.5rem}
h3{font-size:1.05rem;margin:1.6rem 0 .4rem}
nav ol{columns:2;font-size:.95rem}
.gridlab-table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0;display:block;overflow-x:auto}
.gridlab-table th,.gridlab-table td{border:1px solid #d0d7de;padding:.2rem .45rem;white-space:nowrap}
.gridlab-table th{background:#f3f5f7;text-align:left}
.gridlab-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.gridlab-table tbody tr:nth-child(even){background:#fafbfc}
.gridlab-figure{max-width:100%;height:auto;border:1px solid #e1e4e8}
.gridlab-fragment{border:1px solid #e1e4e8;padding:.5rem;overflow-x:auto}
.caption{color:#57606a;font-size:.88rem;margin:.2rem 0 .6rem;max-width:70rem}
.files{font-size:.8rem;color:#57606a}.files a{color:#0969da}
.missing{background:#fff8e6;border-left:4px solid #d4a72c;padding:.4rem .9rem;font-size:.9rem}
.missing ul{margin:.2rem 0}
"""

# Marks each image once it has (not) loaded, so a headless browser can check the figures really load.
SCRIPT = """
function gridlabMark(img){img.dataset.loaded=(img.complete&&img.naturalWidth>0)?"true":"false";
img.dataset.naturalWidth=String(img.naturalWidth);}
window.addEventListener("load",function(){document.querySelectorAll("img.gridlab-figure").forEach(gridlabMark);});
"""


def provenance_text(provenance: Provenance) -> str:
    """The report's line on where its numbers come from."""
    return (
        f"Grid file {provenance.grid_file} ({provenance.grid_hash}); rendered with {provenance.rendered_with}. "
        f"Each section names the cells whose rows it read and the commits that trained them; {MANIFEST} lists "
        "them by id for every table and figure."
    )


def section_trace_text(section: SectionResult, provenance: Provenance) -> str:
    """'Rows of 6 cells, trained with git 45d7ca9...': what this section's tables and figures were computed from."""
    if not section.cells:
        return "Rows of no trained cell."
    trained = ", ".join(provenance.trained_with(section.cells))
    return f"Rows of {counted(len(section.cells), 'cell')}, trained with {trained}."


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _html_table(table: Table) -> str:
    frame = readable(table)
    numeric = [
        pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]) for c in frame.columns
    ]
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    body = []
    for values in frame.itertuples(index=False, name=None):
        cells = "".join(
            f'<td class="num">{_e(cell_text(v))}</td>' if n else f"<td>{_e(cell_text(v))}</td>"
            for v, n in zip(values, numeric)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table id="{_e(table.id)}" class="gridlab-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _artifact_html(artifact: Artifact, folder: Path) -> str:
    title = f'<h3 id="{_e(artifact.id)}-title">{_e(artifact.title)}</h3>'
    caption = f'<p class="caption">{_e(artifact.caption)}</p>' if artifact.caption else ""
    if isinstance(artifact, Table):
        files = (
            f'<p class="files"><a href="{_e(artifact.id)}.csv">{_e(artifact.id)}.csv</a> · '
            f'<a href="{_e(artifact.id)}.md">{_e(artifact.id)}.md</a></p>'
        )
        return f"{title}\n{_html_table(artifact)}\n{caption}\n{files}"
    if isinstance(artifact, Figure):
        png = base64.b64encode((folder / f"{artifact.id}.png").read_bytes()).decode("ascii")
        image = (  # inlined: index.html is one file that can be mailed; the PNG beside it is for papers
            f'<img id="{_e(artifact.id)}" class="gridlab-figure" src="data:image/png;base64,{png}" '
            f'alt="{_e(artifact.title)}" onload="gridlabMark(this)" onerror="gridlabMark(this)">'
        )
        return f"{title}\n{image}\n{caption}"
    return f'{title}\n<div id="{_e(artifact.id)}" class="gridlab-fragment">{artifact.html}</div>\n{caption}'


def _missing_html(lines: list[str]) -> str:
    if not lines:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return f'<div class="missing"><strong>Missing</strong><ul>{items}</ul></div>'


def _index_html(
    sections: list[SectionResult], title: str, intro: str, folder: Path, provenance: Provenance | None
) -> str:
    shown = [s for s in sections if s.rendered]
    absent = [s for s in sections if not s.rendered]
    toc = "".join(f'<li><a href="#{_e(s.id)}">{_e(s.title)}</a></li>' for s in shown)
    if absent:
        toc += '<li><a href="#missing-sections">Not in this report</a></li>'
    parts = [f"<h1>{_e(title)}</h1>"]
    if intro:
        parts.append(f'<p class="caption">{_e(intro)}</p>')
    if provenance is not None:
        parts.append(f'<p class="caption">{_e(provenance_text(provenance))}</p>')
    parts.append(f"<nav><h2>Contents</h2><ol>{toc}</ol></nav>")
    for section in shown:
        body = "\n".join(_artifact_html(a, folder) for a in section.artifacts)
        traced = f'<p class="caption">{_e(section_trace_text(section, provenance))}</p>' if provenance else ""
        parts.append(
            f'<section id="{_e(section.id)}"><h2>{_e(section.title)}</h2>\n{traced}{body}\n'
            f"{_missing_html(section.missing)}</section>"
        )
    if absent:
        items = "".join(f"<li><strong>{_e(s.title)}</strong>{_missing_html(s.missing)}</li>" for s in absent)
        parts.append(
            f'<section id="missing-sections"><h2>Not in this report</h2>'
            f'<p class="caption">None of these sections\' analyses have rows for this grid.</p>'
            f"<ul>{items}</ul></section>"
        )
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )
