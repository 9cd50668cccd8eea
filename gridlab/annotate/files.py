"""The files of an annotation folder, and atomic writes for them.

    runs/<grid>/annotation/
      items.csv              the blinded sheet: item_id, text, top_tokens, prediction, answer (empty)
      INSTRUCTIONS.md        what annotators are asked, and how to return their answers
      key.parquet            hidden: item_id -> cell, instance, condition, top token positions, label, pred
      answers-<name>.csv     one per annotator: a filled copy of items.csv
      kappa.csv ...          written by `gridlab annotate score`

Every file is written to a hidden temporary file beside it and renamed into place, so a killed command
never leaves half a sheet or half a table.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ITEMS = "items.csv"
INSTRUCTIONS = "INSTRUCTIONS.md"
KEY = "key.parquet"
ANSWERS_GLOB = "answers-*.csv"
FOLDER = "annotation"


def default_folder(grid_results: Path) -> Path:
    """Where a grid's annotation files live unless --out / --dir says otherwise."""
    return grid_results / FOLDER


def write_text(path: Path, text: str) -> None:
    """`text` into `path` atomically (exactly as given: no newline translation)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
