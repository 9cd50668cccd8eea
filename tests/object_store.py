"""An S3-compatible server on 127.0.0.1 (moto's), started by the tests, with one empty bucket per test: the
fixtures `s3_endpoint` (one server per session) and `object_store`, offered to every folder by tests/conftest.py."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str
    bucket: str

    def uri(self, prefix: str) -> str:
        return f"s3://{self.bucket}/{prefix}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def object_store(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> ObjectStore:
    """A fresh bucket, the environment pointing at the server, and mirrors kept under this test's folder."""
    import boto3

    for name, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "GRIDLAB_MIRROR_DIR": str(tmp_path / "mirror"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GRIDLAB_MIRRORS", raising=False)
    bucket = f"gridlab-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return ObjectStore(s3_endpoint, bucket)
