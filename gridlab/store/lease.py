"""One writer per grid across machines, where results live in S3: a lease object beside the grid's objects
(`<grid>/launch.lease`), taken with a conditional write (`If-None-Match: *`, so of two machines exactly one
creates it), renewed by its holder every `TTL_S / 3` seconds (`If-Match` on its own version) and deleted
when it lets go. A holder that is killed stops renewing: its lease expires after `TTL_S` and the next
launch takes it over (again conditionally, on the expired version); on the holder's own machine a relaunch
takes it at once once the holder's process is gone. `store.lock` takes it together with the
machine's own lock.

pyarrow's filesystems have no conditional writes, so this speaks S3 through boto3 (the `s3` extra,
`pip install 'gridlab[s3]'`); on S3 without it a launch stops with one line saying so, rather than run
unguarded. On another store (`gs://`) the lock holds on one machine only and `held` says so in a warning line.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

from gridlab.errors import GridlabError
from gridlab.store.layout import LEASE

TTL_S = 60.0


class LeaseTaken(GridlabError):
    """Another machine's launch or analyze holds the grid's lease."""


@contextmanager
def held(uri: str, grid: str, command: str, ttl_s: float = TTL_S) -> Iterator[None]:
    """Holds the lease of `grid` under the object-store prefix `uri` for the block (LeaseTaken at once if a
    live holder has it)."""
    parsed = urlparse(uri)
    client = _client(uri) if parsed.scheme == "s3" else None
    if client is None:
        _warn(
            f"warning: {uri}: one launch per grid is enforced on this machine only (a lease in the bucket needs "
            "S3); do not launch this grid from two machines at once"
        )
        yield
        return
    lease = _Lease(client, parsed.netloc, f"{parsed.path.strip('/')}/{grid}/{LEASE}".lstrip("/"), command, ttl_s)
    lease.take()
    try:
        yield
    finally:
        lease.release()


def _client(uri: str):
    try:
        import boto3
    except ImportError:
        raise GridlabError(
            f"{uri}: the grid's lease in the bucket needs boto3, which is not installed: pip install 'gridlab[s3]'"
        ) from None
    return boto3.client("s3")  # AWS_ENDPOINT_URL, credentials and region from the environment, as pyarrow


class _Lease:
    def __init__(self, client, bucket: str, key: str, command: str, ttl_s: float):
        self.client, self.bucket, self.key, self.ttl_s = client, bucket, key, ttl_s
        self.holder = {"host": socket.gethostname(), "pid": os.getpid(), "command": command}
        self.etag: str | None = None
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="gridlab-lease", daemon=True)

    def take(self) -> None:
        from botocore.exceptions import ClientError

        try:
            self.etag = self._put(IfNoneMatch="*")
        except ClientError as error:
            if not _precondition_failed(error):
                raise GridlabError(f"s3://{self.bucket}/{self.key}: {error}") from None
            current = self.client.get_object(Bucket=self.bucket, Key=self.key)
            holder = json.loads(current["Body"].read())
            if holder["expires"] > time.time() and not _dead_here(holder):
                raise LeaseTaken(_busy(self.key, holder)) from None
            try:  # expired, or its holder died on this machine: take it over unless another launch just did
                self.etag = self._put(IfMatch=current["ETag"])
            except ClientError as again:
                if _precondition_failed(again):
                    raise LeaseTaken(f"{self.key}: another launch took this grid's lease just now") from None
                raise
        self._renewer.start()

    def release(self) -> None:
        from botocore.exceptions import ClientError

        self._stop.set()
        self._renewer.join(timeout=10)
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=self.etag)
        except ClientError:  # taken over after we stalled past the TTL: it is no longer ours to delete
            pass

    def _put(self, **condition) -> str:
        body = json.dumps({**self.holder, "since": time.time(), "expires": time.time() + self.ttl_s})
        return self.client.put_object(Bucket=self.bucket, Key=self.key, Body=body.encode(), **condition)["ETag"]

    def _renew(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        while not self._stop.wait(self.ttl_s / 3):
            try:
                self.etag = self._put(IfMatch=self.etag)
            except (ClientError, BotoCoreError) as error:  # the store is unreachable, or the lease was taken
                _warn(f"warning: s3://{self.bucket}/{self.key}: lease not renewed ({str(error).splitlines()[0]})")


def _dead_here(holder: dict) -> bool:
    """Whether the lease's holder ran on this machine and is gone (a killed launch relaunched here need not
    wait for its lease to expire)."""
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, KeyError, ValueError, TypeError):
        return False
    return False


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _precondition_failed(error) -> bool:
    return error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict")


def _busy(key: str, holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return (
        f"{key}: `gridlab {holder.get('command')}` (pid {holder.get('pid')} on {holder.get('host')}, since {since}) "
        "holds this grid's lease; wait for it to end (status and report work meanwhile)"
    )
