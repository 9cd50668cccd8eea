"""The files of an annotation folder (by default the grid workspace's `annotation`, `gridlab.store.layout`):

      items.csv              the blinded sheet: item_id, text, top_tokens, prediction, answer (empty)
      INSTRUCTIONS.md        what annotators are asked, and how to return their answers
      key.parquet            hidden: item_id -> cell, instance, condition, top token positions, label, pred
      answers-<name>.csv     one per annotator: a filled copy of items.csv
      kappa.csv ...          written by `gridlab annotate score`

Every file is written atomically (`gridlab.store.atomic`), so a killed command never leaves half a sheet or
half a table.
"""

from __future__ import annotations

ITEMS = "items.csv"
INSTRUCTIONS = "INSTRUCTIONS.md"
KEY = "key.parquet"
ANSWERS_GLOB = "answers-*.csv"
