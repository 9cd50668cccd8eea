"""Results in object storage: `results_dir: s3://bucket/prefix` (or `gs://`), through pyarrow's filesystems.

Every process works on a local mirror of the results folder (`mirror_folder`) and the object store is its
durable home: what a process publishes through `store.atomic` (a model folder, a Parquet part, a summary, a
launch record) is uploaded as soon as it is in place locally (`pushed`), and a command starts by bringing
the grid's objects down (`Mirror.pull`) and sending up what an earlier, killed process had published locally
but not uploaded (`Mirror.push_missing`). An object is written by one PUT, which object stores make visible
whole or not at all, so a reader never sees half a part; a model folder's `metrics.json` goes last, and a
folder without it is not "trained" (`store.models`). Files whose names start with a dot (the atomic writers'
temporaries) never travel.

    >>> mirror = Mirror.of("s3://bucket/prefix")     # AWS_ENDPOINT_URL picks an S3-compatible server
    >>> mirror.local                                 # ~/.cache/gridlab/mirror/s3/bucket/prefix
    >>> mirror.pull("sst-grid"); mirror.push_missing("sst-grid")

A process writes through the mirrors named in `GRIDLAB_MIRRORS` (set by `activate`; a local Ray's workers
inherit it, and an analysis actor activates its grid's mirror itself, on whichever node it runs), so a part
written by an actor is uploaded by that actor, and an actor on another node fetches the model it needs
(`bring_down`). What Tune saves with an experiment names `portable` locations, so a launch resumed on another
machine writes to that machine's mirror.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyarrow import fs as pafs

from gridlab.errors import GridlabError
from gridlab.store.layout import ARTIFACTS, CACHE, LAUNCH_MARKER, LEASE, LOCK, TRACKING_DB, TUNE_CHECKPOINT, CellFiles
from gridlab.store.temporary import new_file

SCHEMES = ("s3", "gs")
MIRRORS_ENV = "GRIDLAB_MIRRORS"  # JSON {local folder: object-store URI} of the mirrors a process writes through
MIRROR_DIR_ENV = "GRIDLAB_MIRROR_DIR"  # where local mirrors live (default ~/.cache/gridlab/mirror)
LAST = (CellFiles.METRICS,)  # uploaded after the rest of a folder: its presence means the folder is complete
# Entries of a results folder (or of a grid's folder) that are not mirrored: prepared datasets (rebuilt from
# the data where needed), the default sqlite tracking store (a server's URI is the shared choice), the grid's
# lock file (`store.lock`: one launch per grid on a machine) and its lease in the bucket (`store.lease`).
LOCAL_ONLY = (CACHE, TRACKING_DB, ARTIFACTS, LOCK, LEASE)
# Tune's checkpoints live in the store under tune/ (Tune writes and reads them there itself); a command never
# needs a copy, so `pull` leaves them where they are.
REMOTE_ONLY = TUNE_CHECKPOINT


def is_remote(location: str | os.PathLike) -> bool:
    """Whether a results_dir names an object store (`s3://...`, `gs://...`)."""
    return urlparse(str(location)).scheme in SCHEMES


def mirror_folder(uri: str) -> Path:
    """The local folder that mirrors `uri`: one per bucket and prefix, under $GRIDLAB_MIRROR_DIR."""
    parsed = urlparse(uri)
    base = Path(os.environ.get(MIRROR_DIR_ENV) or Path.home() / ".cache" / "gridlab" / "mirror")
    return base / parsed.scheme / parsed.netloc / parsed.path.strip("/")


def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem for `uri` and the root path inside it. For S3 the standard AWS_ENDPOINT_URL
    (an S3-compatible server) and region are honoured explicitly, whatever this pyarrow version reads itself."""
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return _connect(uri, os.environ.get("AWS_ENDPOINT_URL"), region)


@functools.lru_cache(maxsize=16)
def _connect(uri: str, endpoint: str | None, region: str) -> tuple[pafs.FileSystem, str]:
    parsed = urlparse(uri)
    root = f"{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")
    if parsed.scheme == "s3":
        options: dict = {"region": region}
        if endpoint:
            endpoint_url = urlparse(endpoint)
            options.update(endpoint_override=endpoint_url.netloc or endpoint, scheme=endpoint_url.scheme or "https")
        return pafs.S3FileSystem(**options), root
    filesystem, path = pafs.FileSystem.from_uri(uri)
    return filesystem, path.rstrip("/")


@dataclass(frozen=True)
class Mirror:
    """A local folder and the object-store prefix it mirrors."""

    local: Path
    uri: str

    @staticmethod
    def of(uri: str) -> Mirror:
        return Mirror(mirror_folder(uri), uri.rstrip("/"))

    @property
    def filesystem(self) -> pafs.FileSystem:
        return _filesystem(self.uri)[0]

    @property
    def root(self) -> str:
        return _filesystem(self.uri)[1]

    def relative(self, path: Path) -> str:
        """A local path inside the mirror, relative to its root (as a key below the prefix)."""
        return path.resolve().relative_to(self.local.resolve()).as_posix()

    def key(self, path: Path) -> str:
        """The object key of a local path inside the mirror."""
        return f"{self.root}/{self.relative(path)}"

    def contains(self, path: Path) -> bool:
        return path.resolve().is_relative_to(self.local.resolve())

    def push(self, path: Path) -> None:
        """Upload a file, or every file of a folder (`LAST` names after the rest), to its key."""
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in sorted((f for f in files if _travels(self.relative(f))), key=lambda f: f.name in LAST):
            pafs.copy_files(
                str(file),
                self.key(file),
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=self.filesystem,
            )

    def pull(self, sub: str = "") -> int:
        """Download the objects under `sub` that the mirror lacks or holds at another size (Tune's checkpoints
        aside); returns how many. Each lands under a temporary name and is renamed into place."""
        count = 0
        for info in self._objects(sub):
            if f"/{REMOTE_ONLY}" in info.path:
                continue
            target = self.local / info.path[len(self.root) + 1 :]
            if target.is_file() and target.stat().st_size == info.size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = new_file(target.parent, f".{target.name}.", ".tmp")  # the umask's modes, as if local
            try:
                pafs.copy_files(
                    info.path,
                    str(temporary),
                    source_filesystem=self.filesystem,
                    destination_filesystem=pafs.LocalFileSystem(),
                )
                os.replace(temporary, target)
            finally:
                if os.path.exists(temporary):
                    os.unlink(temporary)
            count += 1
        return count

    def push_missing(self, sub: str = "") -> int:
        """Upload the local files under `sub` that the store lacks or holds at another size (published
        locally by a process killed before its upload); returns how many."""
        remote = {info.path: info.size for info in self._objects(sub)}
        folder = self.local / sub
        local = (
            sorted(p for p in folder.rglob("*") if p.is_file() and _travels(self.relative(p)))
            if folder.is_dir()
            else []
        )
        missing = [p for p in local if remote.get(self.key(p)) != p.stat().st_size]
        for path in sorted(missing, key=lambda p: p.name in LAST):
            self.push(path)
        return len(missing)

    def _objects(self, sub: str) -> list[pafs.FileInfo]:
        base = f"{self.root}/{sub}".rstrip("/")
        infos = self.filesystem.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        return [i for i in infos if i.type == pafs.FileType.File and _travels(i.path[len(self.root) :])]


def _travels(key: str) -> bool:
    """Hidden names below the mirror's root (temporaries, staging folders) and `LOCAL_ONLY` stay local, and the
    files at the top of a Tune experiment (`<grid>/tune/launch-NNN/`) other than gridlab's marker stay in the
    store: Tune and the seal of its state (`execution.seal`) read and write them there, and a copy pulled at a
    command's start would be pushed back over their newer versions at its end (a size that differs)."""
    parts = key.strip("/").split("/")
    if len(parts) == 4 and parts[1] == "tune" and parts[3] != LAUNCH_MARKER:
        return False
    return not set(parts[:2]) & set(LOCAL_ONLY) and not any(part.startswith(".") for part in parts)


def activate(mirror: Mirror) -> None:
    """Make this process (and the processes it starts, Ray's workers included) upload what it publishes
    under `mirror.local`."""
    mirrors = _active()
    mirrors[str(mirror.local)] = mirror.uri
    os.environ[MIRRORS_ENV] = json.dumps(mirrors, sort_keys=True)


def _active() -> dict[str, str]:
    return json.loads(os.environ.get(MIRRORS_ENV) or "{}")


def mirror_of(path: Path) -> Mirror | None:
    """The active mirror that holds `path`, if any."""
    for local, uri in _active().items():
        mirror = Mirror(Path(local), uri)
        if mirror.contains(path):
            return mirror
    return None


def pushed(path: Path) -> None:
    """Called by `store.atomic` once `path` (a file or a folder) is in place: upload it where it is mirrored."""
    mirror = mirror_of(path)
    if mirror is not None:
        mirror.push(path)


def sync(mirror: Mirror, grid_name: str) -> None:
    """Before a command reads or writes a grid kept in object storage: bring its objects down, send up what a
    killed process published locally but did not upload, and make this process (and its Ray workers)
    upload what it publishes."""
    activate(mirror)
    with _reaching(mirror):
        mirror.pull(grid_name)
        mirror.push_missing(grid_name)


def upload_pending(mirror: Mirror, grid_name: str) -> None:
    """After a command: the files it appended to (launch and shard logs, the tracking journal), which are not
    published through `store.atomic`."""
    with _reaching(mirror):
        mirror.push_missing(grid_name)


@contextmanager
def _reaching(mirror: Mirror) -> Iterator[None]:
    """An unreachable or refusing store is one line (`GridlabError`), not pyarrow's traceback."""
    try:
        yield
    except OSError as error:
        raise GridlabError(f"results_dir {mirror.uri}: {str(error).splitlines()[0]}") from None


def subfolders(uri: str, prefix: str) -> list[str]:
    """The URIs of the folders directly under the object-store folder `uri` whose names start with `prefix`."""
    filesystem, root = _filesystem(uri)
    infos = filesystem.get_file_info(pafs.FileSelector(root, allow_not_found=True))
    scheme = urlparse(uri).scheme
    return sorted(
        f"{scheme}://{info.path}"
        for info in infos
        if info.type == pafs.FileType.Directory and info.base_name.startswith(prefix)
    )


@contextmanager
def local_copy(uri: str) -> Iterator[Path]:
    """A temporary local copy of the object-store folder `uri`, for the block."""
    filesystem, root = _filesystem(uri)
    with tempfile.TemporaryDirectory() as folder:
        pafs.copy_files(root, folder, source_filesystem=filesystem, destination_filesystem=pafs.LocalFileSystem())
        yield Path(folder)


def portable(path: Path) -> str:
    """`path` as a location that a process on another machine resolves to its own copy (`resolved`): its
    object-store URI where it lies in an active mirror, else the path itself. What Tune saves with an
    experiment (its callbacks) holds locations in this form, so a launch resumed elsewhere writes here."""
    mirror = mirror_of(path)
    return f"{mirror.uri}/{mirror.relative(path)}" if mirror is not None else str(path)


def resolved(location: str | Path) -> Path:
    """The local path of a `portable` location on this machine (its mirror's copy for a URI)."""
    return mirror_folder(str(location)) if is_remote(location) else Path(location)


def portable_tracking_uri(uri: str) -> str:
    """A sqlite tracking URI whose file lies in a mirror, in `portable` form (other URIs as they are)."""
    prefix = "sqlite:///"
    return prefix + portable(Path(uri[len(prefix) :])) if uri.startswith(prefix) else uri


def resolved_tracking_uri(uri: str) -> str:
    prefix = "sqlite:///"
    return prefix + str(resolved(uri[len(prefix) :])) if uri.startswith(prefix) else uri


def bring_down(path: Path) -> None:
    """Where `path` lies in an active mirror, download what the store holds under it and this machine lacks:
    on a cluster, a trained model published by the head for an actor on a worker, or the parts written by
    actors on other nodes for the driver's summary."""
    mirror = mirror_of(path)
    if mirror is not None:
        mirror.pull(mirror.relative(path))
