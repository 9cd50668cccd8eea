"""`gridlab data fetch`: download a dataset's (or a named vector set's) release files and verify them.

A mirror is any HTTP(S) or file URL laid out like the data directory (`<mirror>/<folder>/<file>`), e.g. a
lab's copy of the public releases, given by `--mirror` or $GRIDLAB_DATA_MIRROR. Each file is streamed to a
hidden `.part` file beside its destination, hashed on the way, and renamed into place only when its sha256
is the release's: an interrupted or corrupt download never looks like data.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gridlab.data.files import CHUNK, sha256_file
from gridlab.data.spec import DatasetSpec, SourceFile
from gridlab.data.vectors import VECTORS_FOLDER, VectorSet, vectors_folder
from gridlab.errors import ChecksumError, DataError
from gridlab.store.atomic import replaced

MIRROR_ENV = "GRIDLAB_DATA_MIRROR"
DATASETS_DOC = "docs/datasets.md"  # a section per data folder: what it is, where from, the files, the terms
TIMEOUT_S = 60


@dataclass(frozen=True)
class Fetched:
    path: Path
    downloaded: bool  # False: already there with the right checksum


def mirror_from_env() -> str | None:
    return os.environ.get(MIRROR_ENV) or None


def fetch_dataset(
    spec: DatasetSpec, data_dir: Path, mirror: str | None, progress: Callable[[str], None] = lambda _: None
) -> list[Fetched]:
    if not spec.files:
        raise DataError(f"dataset '{spec.id}' is generated and has no files to fetch")
    if not mirror:
        raise DataError(
            f"no mirror to fetch '{spec.id}' from (--mirror URL or ${MIRROR_ENV}); its release comes from "
            f"{spec.release}: put {expected_files(spec)} in {data_dir / spec.folder}/ "
            f"(see {DATASETS_DOC}#{spec.folder} in gridlab's repository)"
        )
    folder = data_dir / spec.folder
    base_url = f"{mirror.rstrip('/')}/{spec.folder}"
    fetched: list[Fetched] = []
    with _undone_on_failure(folder, fetched):
        for release_file in spec.files:
            fetched.append(_fetch_file(release_file, folder, f"{base_url}/{release_file.path}", progress))
    return fetched


def expected_files(spec: DatasetSpec) -> str:
    """The file names gridlab reads in the dataset's folder, with the other names each one may have."""
    return ", ".join(f.path + (f" (or {' or '.join(f.names)})" if f.names else "") for f in spec.files)


@contextmanager
def _undone_on_failure(folder: Path, fetched: list[Fetched]) -> Iterator[None]:
    """A dataset is fetched whole or not at all: on a failure, the files this fetch downloaded and the
    folders it created are removed (files that were there before stay)."""
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        yield
    except BaseException:
        for item in fetched:
            if item.downloaded:
                item.path.unlink(missing_ok=True)
        for path in created:  # deepest first
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        raise


def fetch_vectors(
    vector_set: VectorSet, data_dir: Path, mirror: str | None, progress: Callable[[str], None] = lambda _: None
) -> Fetched:
    """A named vector set's release file, from a mirror laid out as `<mirror>/vectors/<file>`, else from its
    publisher."""
    url = f"{mirror.rstrip('/')}/{VECTORS_FOLDER}/{vector_set.release.path}" if mirror else vector_set.url
    return _fetch_file(vector_set.release, vectors_folder(data_dir), url, progress)


def _fetch_file(release_file: SourceFile, folder: Path, url: str, progress: Callable[[str], None]) -> Fetched:
    destination = folder / release_file.path
    if destination.is_file() and _matches(release_file, destination):
        progress(f"{destination}: already present, {_verified(release_file)}")
        return Fetched(destination, downloaded=False)
    progress(f"{url} -> {destination}")
    with replaced(destination) as partial:  # a failed check leaves nothing behind
        digest = _download(url, partial)
        if release_file.sha256 is not None and digest != release_file.sha256:
            raise ChecksumError(
                f"{url}: sha256 {digest[:12]}… does not match the release's {release_file.sha256[:12]}…; "
                "nothing was written"
            )
        size = partial.stat().st_size
        if release_file.size is not None and size != release_file.size:
            raise ChecksumError(f"{url}: {size} bytes, the release has {release_file.size}; nothing was written")
    return Fetched(destination, downloaded=True)


def _matches(release_file: SourceFile, path: Path) -> bool:
    if release_file.sha256 is not None:
        return sha256_file(path) == release_file.sha256
    return release_file.size is None or path.stat().st_size == release_file.size


def _verified(release_file: SourceFile) -> str:
    return "checksum ok" if release_file.sha256 else "size ok (the publisher gives no checksum)"


def _download(url: str, target: Path) -> str:
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, open(target, "wb") as out:
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise DataError(f"{url}: download failed ({getattr(error, 'reason', error)})") from None
    return digest.hexdigest()
