"""Checksums of dataset files, and their verification against the known public releases."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from gridlab.data.spec import DatasetSpec

CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """sha256 of a file, memoised per (path, size, mtime) so repeated loads hash each file once."""
    stat = path.stat()
    return _sha256(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


Verdict = Literal["ok", "mismatch", "missing", "unverified"]


@dataclass(frozen=True)
class FileCheck:
    """The outcome for one release file: `unverified` means present under another name whose
    checksum gridlab does not know (e.g. an uncompressed copy), which is not an error."""

    path: str
    verdict: Verdict
    found: Path | None
    detail: str = ""


def verify_files(spec: DatasetSpec, data_dir: Path) -> list[FileCheck]:
    folder = data_dir / spec.folder
    checks = []
    for release_file in spec.files:
        found = release_file.locate(folder)
        if found is None:
            checks.append(FileCheck(release_file.path, "missing", None))
        elif found.name != Path(release_file.path).name:
            checks.append(FileCheck(release_file.path, "unverified", found, f"found as {found.name}"))
        elif release_file.sha256 is None:
            checks.append(FileCheck(release_file.path, "unverified", found, "no published checksum"))
        else:
            actual = sha256_file(found)
            if actual == release_file.sha256:
                checks.append(FileCheck(release_file.path, "ok", found))
            else:
                checks.append(
                    FileCheck(
                        release_file.path,
                        "mismatch",
                        found,
                        f"sha256 {actual[:12]}…, expected {release_file.sha256[:12]}…",
                    )
                )
    return checks
