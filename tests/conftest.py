"""Shared fixtures: the datasets the tests read, and a scratch results folder per test.

Two kinds of data. `data_dir` is `tests/excerpts/`: a few dozen records per split of every dataset, cut from
the releases in their own formats (see tests/excerpts/make_excerpts.py), always present, so the suite runs
on a machine with no data. `release_dir` is `$GRIDLAB_DATA`, the whole releases, for the tests marked
`release` (row counts of full splits, the release checksums, models trained on the full data); they skip
with the reason where it is not set, and fail instead where GRIDLAB_REQUIRE_DATA=1 (as CI sets).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.object_store import object_store, s3_endpoint  # noqa: F401  (fixtures: one S3 server per session)

REPO = Path(__file__).resolve().parent.parent
EXCERPTS = REPO / "tests" / "excerpts"
REQUIRE_DATA = "GRIDLAB_REQUIRE_DATA"
# Read once, before any test sets GRIDLAB_DATA for the commands it runs.
RELEASES = os.environ.get("GRIDLAB_DATA")


def _excerpt_checksums() -> dict[str, str]:
    """`<folder>/<file>` -> sha256 of the excerpt file, from tests/excerpts/SHA256SUMS."""
    lines = (EXCERPTS / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    return {name: digest for digest, name in (line.split("  ", 1) for line in lines)}


@pytest.fixture(scope="session", autouse=True)
def no_user_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's own `gridlab config` settings never reach the tests (nor the processes they start)."""
    os.environ["GRIDLAB_CONFIG"] = str(tmp_path_factory.mktemp("settings") / "settings.json")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`gpu` tests need CUDA; on a machine without it they are reported as skipped, with the reason. A test
    that reads `release_dir` must carry the `release` marker, so that `pytest -m release` runs them all."""
    import torch

    reads_release = [i for i in items if "release_dir" in getattr(i, "fixturenames", ())]
    unmarked = [i.nodeid for i in reads_release if "release" not in i.keywords]
    if unmarked:
        raise pytest.UsageError(f"tests that read release_dir need @pytest.mark.release: {', '.join(unmarked)}")
    if torch.cuda.is_available():
        return
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="no CUDA device on this machine"))


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> None:
    """The test models are tiny: one thread is fastest, and two threads crawl when the machine is busy.
    (The product sets its own thread count inside each trial and actor.)"""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The excerpts of every dataset (tests/excerpts): real records in the releases' formats, always here."""
    return EXCERPTS


@pytest.fixture(scope="session")
def release_dir() -> Path:
    """The folder of whole releases, $GRIDLAB_DATA (CI: ../shared/data), for tests marked `release`."""
    configured = RELEASES
    path = Path(configured) if configured else None
    if path is None or not (path / "sst").is_dir() or path.resolve() == EXCERPTS:
        reason = (
            f"needs the whole dataset releases: GRIDLAB_DATA={configured} is not a folder of them (no sst/)"
            if configured
            else "needs the whole dataset releases: set GRIDLAB_DATA to the data folder"
        )
        if os.environ.get(REQUIRE_DATA) == "1":
            pytest.fail(f"{reason} ({REQUIRE_DATA}=1 forbids skipping)")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def shipped_sst() -> Path:
    """The data folder shipped in the package (gridlab/data/embedded: SST-2's three release files, byte for
    byte): for SST tests whose data is read in other processes (Ray workers, a `gridlab` command), where
    the excerpts' own checksums below do not reach, and for tests of the release checksum on SST."""
    from gridlab.data.embedded import EMBEDDED_DATA

    return EMBEDDED_DATA


@pytest.fixture(scope="session", autouse=True)
def excerpts_checked_against_their_own_checksums() -> Iterator[None]:
    """Loading data verifies its files against the releases' sha256, which an excerpt cannot match. In this
    process a file that fails that check is accepted only if it is byte for byte the excerpt file of the
    same name (tests/excerpts/SHA256SUMS), so a copy of an excerpt that a test truncates or edits is still
    refused; every other file is verified as the product verifies it. `gridlab data check` is not patched:
    it reports the excerpts as the mismatches they are."""
    import dataclasses

    import gridlab.data.prepare as prepare
    from gridlab.data.files import sha256_file, verify_files

    excerpts = _excerpt_checksums()

    def verify(spec, folder: Path):
        checks = verify_files(spec, folder)
        for index, check in enumerate(checks):
            name = f"{spec.folder}/{check.path}"
            if check.verdict == "mismatch" and check.found and sha256_file(check.found) == excerpts.get(name):
                checks[index] = dataclasses.replace(check, verdict="ok", detail="a test excerpt")
        return checks

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prepare, "verify_files", verify)
        yield


@pytest.fixture(scope="session")
def publish_model():
    """`publish_model(models_dir, config, data, model, test_accuracy=0.0) -> cell id`: a model's folder as a
    finished trial leaves it, for tests that analyse or report a model without training it."""
    from gridlab.grid.expand import cell_id
    from gridlab.store.models import ModelStore, data_reference

    def publish(models: Path, config, data, model, test_accuracy: float = 0.0) -> str:
        identifier = cell_id(config)
        ModelStore(models).publish_trained(
            identifier,
            config=config.model_dump(mode="json"),
            weights=model.state_dict(),
            data_json=data_reference(data),
            metrics={"test_accuracy": test_accuracy},
            history=[],
        )
        return identifier

    return publish


def truncated_sst_copy(data_dir: Path, folder: Path) -> Path:
    """A copy of SST under `folder` whose training file is cut to its first half (a broken download);
    returns that file."""
    import shutil

    shutil.copytree(data_dir / "sst", folder / "sst", ignore=shutil.ignore_patterns("trees"))
    train = folder / "sst" / "stsa.binary.train"
    lines = train.read_text(encoding="utf-8").splitlines(keepends=True)
    train.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    return train
