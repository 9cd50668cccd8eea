"""What a grid has to tell its tracking server, kept on disk first: one JSON line per record
(`tracking/journal.jsonl`) and, for each store it was sent to, the count of lines that store has taken
(`tracking/sent.json`). Tracking is a record of the work, not a precondition for it: when the server is down
the records wait here and the next `gridlab launch` or `gridlab track` sends them, each once, in order.

The journal lies in the grid's results folder and travels with it (a folder copied to another disk, results
in object storage relaunched from another machine), while a store stays where it is. So counts are kept per
store, named by the id a store carries on the grid's experiment (`tracking.runs`): a store that has never seen
the journal (another machine's own sqlite file, a new server) is sent every record from the first.

    >>> journal = TrackingJournal(workspace.tracking)
    >>> journal.append({"op": "epoch", "cell_id": "1ae9...", "step": 3, "metrics": {...}})
    >>> for index, record in journal.unsent(store): ...; journal.mark_sent(store, (index, record), uri)

Only the process that holds the grid's lock (`store.lock`) writes or sends, so lines are never interleaved.
A record sent just before a crash and not yet counted is sent again once; every other record exactly once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gridlab.store.atomic import write_json
from gridlab.store.layout import TrackingFiles
from gridlab.store.store import Store


class TrackingJournal:
    def __init__(self, folder: Path):
        self.folder = folder

    def __getstate__(self) -> dict:  # saved with a Tune experiment: resolved again where it is restored
        return {"folder": Store.portable(self.folder)}

    def __setstate__(self, state: dict) -> None:
        self.folder = Store.resolved(state["folder"])

    @property
    def records(self) -> Path:
        return self.folder / TrackingFiles.JOURNAL

    @property
    def sent_file(self) -> Path:
        return self.folder / TrackingFiles.SENT

    def append(self, record: dict[str, Any]) -> None:
        """Write the record, with an id of its own: a count is checked against the id of its last record."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.records, "a", encoding="utf-8") as stream:
            stream.write(json.dumps({**record, "id": uuid.uuid4().hex[:12]}, sort_keys=True) + "\n")
            stream.flush()

    def count(self) -> int:
        """How many records were written (a last line cut off by a crash not counted)."""
        return sum(1 for _ in self.written())

    # What each store has taken ----------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        """{"stores": {store id: {"sent": N, "skipped": [index, ...], "uri": ...}}}; a journal written before
        stores were told apart holds {"sent": N}, which `adopt` gives to the store it was sent to."""
        return json.loads(self.sent_file.read_text()) if self.sent_file.is_file() else {}

    def sent(self, store: str) -> int:
        """How many records (from the first) the store has taken. The count is that of the records up to the
        last one sent, found by its id: sent.json is uploaded with the results as soon as it is written and the
        journal only when a command ends, so after a killed command a count can meet a journal it was not
        counted in (another machine's), none of whose records that store has seen."""
        entry = self._state().get("stores", {}).get(store, {})
        count, last = int(entry.get("sent", 0)), entry.get("last")
        if last is None or not count:  # counted before records had ids
            return count
        ids = [record.get("id") for _, record in self.written()]
        if count <= len(ids) and ids[count - 1] == last:
            return count
        return ids.index(last) + 1 if last in ids else 0

    def skipped(self, store: str) -> list[int]:
        """The records the store could not take (they name a run no record created), by index."""
        return list(self._state().get("stores", {}).get(store, {}).get("skipped", []))

    def mark_sent(self, store: str, record: tuple[int, dict[str, Any]], uri: str, skipped: bool = False) -> None:
        """The store took the records up to `record` (index, record), or skipped that one."""
        index, last = record
        state = self._state()
        entry = state.setdefault("stores", {}).setdefault(store, {"sent": 0, "skipped": []})
        entry.update(sent=index + 1, last=last.get("id"), uri=uri)
        if skipped:
            entry["skipped"] = sorted({*entry.get("skipped", []), index})
        write_json(self.sent_file, state)

    def adopt(self, store: str, uri: str) -> None:
        """Give the count of a journal that did not tell stores apart to `store`: the store that journal was
        sent to (the grid's experiment was there before stores were named)."""
        state = self._state()
        if "sent" in state:
            legacy = int(state.pop("sent"))
            state.setdefault("stores", {})[store] = {"sent": legacy, "skipped": [], "uri": uri}
            write_json(self.sent_file, state)

    def store_at(self, uri: str) -> str | None:
        """The store last sent to at `uri`, for a count while it cannot be asked (a server that is down)."""
        found = [store for store, entry in self._state().get("stores", {}).items() if entry.get("uri") == uri]
        return found[-1] if found else None

    def unsent(self, store: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, record) of every record the store has not taken yet, in the order they were written."""
        start = self.sent(store)
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

    def backlog(self, store: str | None) -> int:
        """Records the store has not taken (every record for a store never sent to, or None: not known)."""
        return self.count() - (self.sent(store) if store is not None else 0)
