"""The one results object: a results_dir, a folder on this machine or an object-store prefix, and what the other
packages hold of it. Where it lies is the store's business: for `s3://` (or `gs://`) it keeps a local working
copy (`store.remote`'s mirror) that every command reads and writes as it would a local folder, and it owns
the sync between that copy and the bucket.

    >>> store = Store.of("s3://bucket/runs")        # or Store.of(Path("runs")): a folder here
    >>> store.local                                  # where this machine reads and writes it
    >>> store.sync("quick")                          # a command's start: the grid's objects brought down
    >>> store.grid("quick").summary                  # every name from `store.layout`
    >>> Store.portable(path), Store.resolved(text)   # locations saved with a Tune experiment, across machines

A local store makes `sync`, `upload_pending`, `activate` and `bring_down` no-ops, so a caller never asks which
kind it holds. The static methods act on the mirrors this process writes through (`activate`, inherited by
Ray's workers), not on one store: a pickled tracker or callback only knows its paths.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyarrow import fs as pafs

from gridlab.store import remote as mirrors
from gridlab.store.layout import GridWorkspace, Results


@dataclass(frozen=True)
class Store:
    """A results_dir: `local` is this machine's folder of it; `uri` its object-store prefix, None for a folder."""

    local: Path
    uri: str | None = None

    @staticmethod
    def of(results_dir: str | os.PathLike[str]) -> Store:
        """The store of a results_dir as a grid file names it: a path, or an `s3://` / `gs://` URI."""
        if mirrors.is_remote(results_dir):
            mirror = mirrors.Mirror.of(str(results_dir))
            return Store(mirror.local, mirror.uri)
        return Store(Path(results_dir))

    @staticmethod
    def names_object_store(location: str | os.PathLike[str]) -> bool:
        """Whether `location` is an object-store URI rather than a path."""
        return mirrors.is_remote(location)

    @property
    def remote(self) -> bool:
        return self.uri is not None

    @property
    def results(self) -> Results:
        """The layout of the local folder: what every grid written there shares (data cache, tracking store)."""
        return Results(self.local)

    def grid(self, name: str) -> GridWorkspace:
        """`results_dir/<grid>` on this machine: one grid's models, parts, summary and launch records."""
        return self.results.grid(name)

    # A command's start and end -------------------------------------------------------------------------------

    def sync(self, grid_name: str) -> None:
        """Before a command reads or writes the grid: bring its objects down, send up what a killed process
        published here but did not upload, and upload what this process (and its Ray workers) publishes."""
        if self._mirror is not None:
            mirrors.sync(self._mirror, grid_name)

    def upload_pending(self, grid_name: str) -> None:
        """After a command: what it appended to (launch and shard logs, the tracking journal) goes up too."""
        if self._mirror is not None:
            mirrors.upload_pending(self._mirror, grid_name)

    def activate(self) -> None:
        """Make this process (an actor on another node, say) upload what it publishes under `local`."""
        if self._mirror is not None:
            mirrors.activate(self._mirror)

    # Reading and writing where it lies -----------------------------------------------------------------------

    @property
    def filesystem(self) -> pafs.FileSystem:
        """pyarrow's filesystem of the store itself (the bucket; this machine's disk for a folder)."""
        return self._mirror.filesystem if self._mirror is not None else pafs.LocalFileSystem()

    def in_place(self, grid_name: str) -> tuple[pafs.FileSystem, GridWorkspace]:
        """A grid read where it lies, nothing mirrored: the filesystem and the grid's layout inside it."""
        if self._mirror is None:
            return pafs.LocalFileSystem(), GridWorkspace(self.grid(grid_name).path.resolve())
        return self._mirror.filesystem, GridWorkspace(Path(self._mirror.root) / grid_name)

    def key(self, path: Path) -> str:
        """A local path inside the store as `filesystem` names it (an object key; the path for a folder)."""
        return self._mirror.key(path) if self._mirror is not None else str(path)

    def where(self, path: Path) -> Path | str:
        """A local path inside the store as another machine finds it: its URI in the bucket, or the path."""
        return f"{self._mirror.uri}/{self._mirror.relative(path)}" if self._mirror is not None else path

    @property
    def _mirror(self) -> mirrors.Mirror | None:
        return mirrors.Mirror(self.local, self.uri) if self.uri is not None else None

    # Across machines: the mirrors this process writes through ------------------------------------------------

    @staticmethod
    def portable(path: Path) -> str:
        """`path` as a location a process on another machine resolves to its own copy (`resolved`): its URI
        where it lies in an active mirror, else the path. What Tune saves with an experiment is in this form."""
        return mirrors.portable(path)

    @staticmethod
    def resolved(location: str | Path) -> Path:
        """The local path of a `portable` location on this machine."""
        return mirrors.resolved(location)

    @staticmethod
    def portable_tracking_uri(uri: str) -> str:
        """A sqlite tracking URI whose file lies in a mirror, in `portable` form (other URIs as they are)."""
        return mirrors.portable_tracking_uri(uri)

    @staticmethod
    def resolved_tracking_uri(uri: str) -> str:
        return mirrors.resolved_tracking_uri(uri)

    @staticmethod
    def bring_down(path: Path) -> None:
        """Where `path` lies in an active mirror, download what the bucket holds under it and this machine
        lacks: a model published by the head for an actor on a worker, or parts written on other nodes."""
        mirrors.bring_down(path)

    @staticmethod
    @contextmanager
    def subfolders(location: str | Path, prefix: str) -> Iterator[list[Path]]:
        """The folders directly under `location` (a path or an object-store URI) whose names start with
        `prefix`, as local folders for the block: temporary copies, for a bucket."""
        if not mirrors.is_remote(location):
            folder = Path(location)
            yield sorted(folder.glob(f"{prefix}*")) if folder.is_dir() else []
            return
        with ExitStack() as copies:
            uris = mirrors.subfolders(str(location), prefix)
            yield [copies.enter_context(mirrors.local_copy(uri)) for uri in uris]
