"""The Tune trainable: a plain function of one cell's parameters that trains it and reports every epoch.

    >>> tune.with_resources(tune.with_parameters(train_cell, code=Codebase.here()), {"cpu": 1, "gpu": 0})

Each epoch reports the dev metrics together with a checkpoint of the whole training state, so a trial
whose worker dies, or whose driver is killed, resumes from its last finished epoch (`tune.get_checkpoint`).
The last report carries the final checkpoint: the best epoch's weights, config, dataset reference,
history and test metrics, computed once on the selected weights. The driver publishes that folder into
the model store. A NaN/inf loss is a deterministic failure, not a crash: it is reported as the trial's
final result with its reason (so Tune does not retry it) and the driver records the cell as failed. So is a
worker that imported another gridlab than the driver's (`codebase`): the cell fails with both locations.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import ray
import torch
from ray import tune

from gridlab.config.schema import CellConfig
from gridlab.data.prepare import PreparedDataset, load_dataset
from gridlab.errors import resource_fault
from gridlab.execution.codebase import Codebase
from gridlab.models.embeddings import initial_embeddings
from gridlab.models.factory import build_model
from gridlab.runtime import pick_device, quiet_environment, set_torch_threads
from gridlab.store.layout import TUNE_CHECKPOINT, CellFiles
from gridlab.store.models import data_reference, write_trained
from gridlab.store.provenance import gridlab_commit
from gridlab.store.store import Store
from gridlab.training.loop import NonFiniteLoss, Trainer, UndefinedSelection, evaluate

RESOURCE_FAULT = "resource_fault"  # the result key of a trial that a full or unwritable disk stopped
TRAINER_STATE = "trainer.pt"  # in a Tune checkpoint (not a results file): the trainer's state after an epoch


def trial_params(
    cell_id: str,
    config: CellConfig,
    data_dir: Path,
    cache_dir: Path,
    device: str,
    cpus: float,
    gpus: float,
    trial_dir: Path | str,
) -> dict[str, Any]:
    """Everything a trial needs, as plain JSON-able values (Tune stores them with the experiment).
    `trial_dir` is where Tune persists this trial's checkpoints (storage path / experiment / cell id): a
    folder, or an object-store URI."""
    return {
        "cell_id": cell_id,
        "cell": config.model_dump(mode="json"),
        "data_dir": str(data_dir.resolve()),
        "trial_dir": str(trial_dir),
        "cache_dir": str(cache_dir.resolve()),
        "device": device,
        "cpus": cpus,
        "gpus": gpus,
    }


def cell_id_of(trial) -> str:
    return trial.config["trial"]["cell_id"]


def train_cell(config: dict[str, Any], code: Codebase) -> None:
    """A Tune trial: `_train_cell`, with a full or unwritable disk reported as such (the driver stops the launch
    with one line) instead of an error that Tune would retry into the same wall. `code` is the driver's gridlab:
    a worker that imported another one fails the cell before it trains (retrying on it would not help)."""
    mismatch = code.mismatch()
    if mismatch is not None:
        _report_failure(mismatch, epoch=0)
        return
    try:
        _train_cell(config)
    except Exception as error:
        fault = resource_fault(error, where=str(Path(config["trial"]["cache_dir"]).parent))
        if fault is None:
            raise
        tune.report({RESOURCE_FAULT: str(fault)})


def _train_cell(config: dict[str, Any]) -> None:
    params = config["trial"]
    quiet_environment(local_ray=False)
    set_torch_threads(params["cpus"])
    cell = CellConfig.model_validate(params["cell"])
    device = pick_device(params["device"], params["gpus"])
    data_dir, cache_dir = Path(params["data_dir"]), Path(params["cache_dir"])
    data = load_dataset(cell.dataset, data_dir, cache_dir, cell.data)
    try:
        trainer = Trainer(
            build_model(cell, data, initial_embeddings(cell, data, data_dir, cache_dir)), data, cell, device
        )
    except UndefinedSelection as failure:  # a property of the cell's data: retrying cannot help
        _report_failure(str(failure), epoch=0)
        return

    resumed_from = 0
    with _resume_point(params["trial_dir"]) as checkpoint:
        if checkpoint is not None:
            if _is_final(checkpoint):  # finished before the driver could publish it
                tune.report(
                    json.loads((checkpoint / CellFiles.METRICS).read_text()),
                    checkpoint=tune.Checkpoint.from_directory(str(checkpoint)),
                )
                return
            trainer.load_state_dict(torch.load(checkpoint / TRAINER_STATE, map_location=device, weights_only=True))
            resumed_from = trainer.epoch

    try:
        while not trainer.finished:
            record, improved = trainer.run_epoch()
            metrics = {
                "epoch": record.epoch,
                "train_loss": record.train_loss,
                "improved": improved,
                **{f"dev_{k}": v for k, v in record.dev.items()},
            }
            with tempfile.TemporaryDirectory() as folder:
                torch.save(trainer.state_dict(), Path(folder) / TRAINER_STATE)
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
    except NonFiniteLoss as failure:
        _report_failure(str(failure), epoch=trainer.epoch + 1)
        return
    _report_final(trainer, data, cell, params["cell_id"], device, resumed_from)


def _report_failure(reason: str, epoch: int) -> None:
    """A failed cell is a result (its reason is shown by `gridlab status`), not a trial error to retry."""
    tune.report({"failed": True, "failure_reason": reason, "epoch": epoch})


@contextmanager
def _resume_point(trial_dir: str) -> Iterator[Path | None]:
    """The furthest complete checkpoint of this trial, as a local folder for the block: Tune's own, or one in
    the trial's folder (on disk or in object storage) that Tune's experiment state had not recorded yet when
    the driver died (the state is saved every few seconds)."""
    known = tune.get_checkpoint()
    with ExitStack() as copies:
        candidates = [Path(copies.enter_context(known.as_directory()))] if known is not None else []
        candidates += _stored_checkpoints(trial_dir, copies)
        best: Path | None = None
        best_epoch: float = -1
        for folder in candidates:
            epoch = checkpoint_epoch(folder)
            if epoch > best_epoch:
                best, best_epoch = folder, epoch
        yield best


@contextmanager
def final_checkpoint(trial_dir: str) -> Iterator[Path | None]:
    """The trial's final checkpoint (a trained cell's files) in its folder, as a local folder for the block;
    None when the trial never finished. The driver reads it when Tune reports an error for a trial that had
    in fact finished: a restored experiment whose saved state names a checkpoint deleted since."""
    with ExitStack() as copies:
        yield next((f for f in _stored_checkpoints(trial_dir, copies) if _is_final(f)), None)


def _stored_checkpoints(trial_dir: str, copies: ExitStack) -> list[Path]:
    """Every checkpoint folder in the trial's folder, local (object storage: copied for `copies`' lifetime)."""
    return copies.enter_context(Store.subfolders(trial_dir, TUNE_CHECKPOINT))


def _is_final(folder: Path) -> bool:
    return all((folder / name).is_file() for name in CellFiles.TRAINED)


def checkpoint_epoch(folder: Path) -> float:
    """How far a checkpoint got: inf for a final one, the epoch for a trainer state, -1 if unusable (a kill
    can cut a copy short: checkpoints are copied into place, not renamed)."""
    if _is_final(folder):
        return float("inf")
    try:
        return torch.load(folder / TRAINER_STATE, map_location="cpu", weights_only=True)["epoch"]
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, pickle.UnpicklingError):
        return -1


def _report_final(
    trainer: Trainer, data: PreparedDataset, config: CellConfig, cell_id: str, device: torch.device, resumed_from: int
) -> None:
    result = trainer.select_best()
    test = evaluate(trainer.model, data.splits["test"], device, target_vocab=data.target_vocab)
    metric = trainer.metric
    assigned = ray.get_runtime_context().get_assigned_resources()  # what Ray gave the trial: its threads, its GPU
    metrics = {
        "final": True,
        "epochs_trained": trainer.epoch,
        "best_epoch": result.best_epoch,
        f"best_dev_{metric}": trainer.best,
        **{f"test_{k}": v for k, v in test.items()},
        "resumed_from_epoch": resumed_from,  # 0: trained in one go; k: continued after epoch k's checkpoint
        "node_id": ray.get_runtime_context().get_node_id(),
        "cpus": assigned.get("CPU", 0.0),
        "gpus": assigned.get("GPU", 0.0),
        "device": str(device),
        "gridlab_commit": gridlab_commit(),  # the code that trained it, for the studies' records
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_trained(
            folder,
            cell_id,
            config.model_dump(mode="json"),
            trainer.model.state_dict(),
            data_reference(data),
            metrics,
            [{"epoch": r.epoch, "train_loss": r.train_loss, **r.dev} for r in result.history],
        )
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
