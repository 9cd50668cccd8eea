"""Process hygiene for Ray, MLflow and torch, set once in the driver and again in every trial and actor.

Ray 2.60 and MLflow 3.17 phone home by default, and a local Ray enables login tokens that other processes
must then share; torch keeps the thread count of a reused Ray worker. These helpers pin all of that so a
grid behaves the same on a laptop, in CI and on a cluster.
"""

from __future__ import annotations

import logging
import os
import signal

from gridlab.errors import resource_fault

QUIET_DEFAULTS = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
    "RAY_AIR_NEW_OUTPUT": "0",  # Tune's own progress tables: gridlab prints its own progress
}
# A local Ray started by gridlab has no login token and no other machines (so it binds loopback only:
# `execution.ray_session`); a cluster the user joins keeps whatever settings it has.
LOCAL_RAY = {"RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def quiet_environment(local_ray: bool) -> None:
    """Set the defaults above unless the user set them; child processes (Ray workers) inherit them."""
    for key, value in {**QUIET_DEFAULTS, **(LOCAL_RAY if local_ray else {})}.items():
        os.environ.setdefault(key, value)


def stop_on_sigterm() -> None:
    """SIGTERM (`kill`, a scheduler, a container stop) stops the command as Ctrl-C does: Ray Tune's own SIGINT
    handler first (trials checkpoint, the launch resumes), exit 130. Installed again after `ray.init`, whose
    crash handler would otherwise abort the driver with a stack dump. A shell starts a background command
    (`gridlab launch ... &`, as long grids run) with SIGINT ignored, and Python then leaves it ignored: the
    stop would be swallowed wherever Tune's handler is not installed (the analyses after training), so
    Ctrl-C's handling is put back first."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))


class _ReportedByGridlab(logging.Filter):
    """Drops Ray's log records of what gridlab reports itself, in one line: a full or unwritable disk
    (`errors.resource_fault`, with Ray's tracebacks), and on an interrupt Tune's notice that it is stopping,
    its advice to resume with `Tuner.restore` (`gridlab launch` does that) and its list of trials without
    results (trials that never started; gridlab counts cells from its model store, not from Tune's results)."""

    INTERRUPT_RECORDS = ("Stop signal received", "Experiment has been interrupted", "Failed to fetch metrics for")

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and resource_fault(error) is not None:
            return False
        return not record.getMessage().startswith(self.INTERRUPT_RECORDS)


def drop_reported_logs() -> None:
    """Install `_ReportedByGridlab` on Ray's log handler (Tune's loggers propagate to it), once."""
    for handler in logging.getLogger("ray").handlers:
        if not any(isinstance(f, _ReportedByGridlab) for f in handler.filters):
            handler.addFilter(_ReportedByGridlab())


def set_torch_threads(cpus: float) -> None:
    import torch

    torch.set_num_threads(max(1, int(cpus)))


def pick_device(requested: str, gpus: float):
    """`auto`: CUDA when this trial or actor was given a GPU share and CUDA works, else CPU."""
    import torch

    if requested == "cpu" or (requested == "auto" and (gpus <= 0 or not torch.cuda.is_available())):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        from gridlab.errors import GridlabError

        raise GridlabError("device: cuda was requested but this worker has no usable CUDA device")
    return torch.device("cuda")
