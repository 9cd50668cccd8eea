"""What a grid has to tell its tracking server, kept on disk first: one JSON line per record
(`tracking/journal.jsonl`) and the count of lines the server has taken (`tracking/sent.json`). Tracking is a
record of the work, not a precondition for it: when the server is down the records wait here and the next
`gridlab launch` or `gridlab track` sends them, each once, in order.

    >>> journal = TrackingJournal(workspace.tracking)
    >>> journal.append({"op": "epoch", "cell_id": "1ae9...", "step": 3, "metrics": {...}})
    >>> for index, record in journal.unsent(): ...; journal.mark_sent(index + 1)

Only the process that holds the grid's lock (`store.lock`) writes or sends, so lines are never interleaved.
A record sent just before a crash and not yet counted is sent again once; every other record exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gridlab.store.atomic import write_json
from gridlab.store.remote import portable, resolved


class TrackingJournal:
    def __init__(self, folder: Path):
        self.folder = folder

    def __getstate__(self) -> dict:  # saved with a Tune experiment: resolved again where it is restored
        return {"folder": portable(self.folder)}

    def __setstate__(self, state: dict) -> None:
        self.folder = resolved(state["folder"])

    @property
    def records(self) -> Path:
        return self.folder / "journal.jsonl"

    @property
    def sent_file(self) -> Path:
        return self.folder / "sent.json"

    def append(self, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.records, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record, sort_keys=True) + "\n")
            stream.flush()

    def sent(self) -> int:
        """How many records (from the first) the server has taken."""
        return int(json.loads(self.sent_file.read_text())["sent"]) if self.sent_file.is_file() else 0

    def mark_sent(self, count: int) -> None:
        write_json(self.sent_file, {"sent": count})

    def unsent(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, record) of every record not sent yet, in the order they were written."""
        start = self.sent()
        return ((index, record) for index, record in self.written() if index >= start)

    def written(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, record) of every record, in the order they were written. A last line cut off by a crash
        mid-write is skipped: the record it held was never acted on."""
        if not self.records.is_file():
            return
        with open(self.records, encoding="utf-8") as stream:
            for index, line in enumerate(stream):
                try:
                    yield index, json.loads(line)
                except json.JSONDecodeError:
                    return

    def backlog(self) -> int:
        return sum(1 for _ in self.unsent())
