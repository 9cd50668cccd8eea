"""Shared fixtures: where the real datasets are, and a scratch results folder per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _data_dir() -> Path:
    configured = os.environ.get("GRIDLAB_DATA")
    if configured:
        return Path(configured)
    sibling = REPO.parent / "shared" / "data"
    return sibling if sibling.is_dir() else REPO / "data"


@pytest.fixture(scope="session", autouse=True)
def no_user_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's own `gridlab config` settings never reach the tests (nor the processes they start)."""
    os.environ["GRIDLAB_CONFIG"] = str(tmp_path_factory.mktemp("settings") / "settings.json")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`gpu` tests need CUDA; on a machine without it they are reported as skipped, with the reason."""
    import torch

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
    """The folder of real public datasets (CI sets GRIDLAB_DATA=../shared/data)."""
    path = _data_dir()
    if not (path / "sst").is_dir():
        pytest.fail(f"real datasets not found under {path}: set GRIDLAB_DATA to the shared data folder")
    return path


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
