"""The S3-compatible server of tests/store, for the cluster that keeps its results there."""

from tests.store.conftest import object_store, s3_endpoint  # noqa: F401
