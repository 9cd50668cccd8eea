"""Starting a local Ray or joining a cluster, with a timeout on every connect.

A local Ray listens on loopback only (tests/execution/test_loopback.py checks every socket). Ray 2.60 binds
its gRPC servers (GCS, raylet, workers) to 127.0.0.1 when the node address is exactly 127.0.0.1 and to all
interfaces otherwise; and `ray.init` rewrites 127.0.0.1 to the machine's public address unless multi-machine
clusters are off, as they are by default on macOS and Windows (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`). So a
local Ray is started with clusters off, in the driver for the duration of `ray.init` and in the environment
its processes inherit. Set GRIDLAB_RAY_NODE_IP to choose another node address (then Ray binds everywhere).
Joining (`auto`, `ray://host:10001`, `host:port`) keeps the cluster's own settings; a connection that does not
come up in `timeout_s` (a login-token mismatch can hang for minutes) is a clear error instead of a silent wait.

A node that is lost makes Ray print, on the driver and whatever `log_to_driver` says (they are error messages),
the last 20 lines of its raylet's log once per agent of the node, a notice per retry of each task that ran
there, and the node's death: `one_line_per_lost_node` makes that one line per node.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from unittest import mock

import ray
from ray._private import ray_constants

from gridlab.errors import GridlabError
from gridlab.runtime import drop_reported_logs, quiet_environment, stop_on_sigterm

LOCAL_NODE_IP = "127.0.0.1"
CONNECT_TIMEOUT_S = 60.0


@contextmanager
def ray_session(address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> Iterator[None]:
    """Ray for the duration of a command; a Ray this process did not start is left running."""
    if ray.is_initialized():
        yield
        return
    local = address in (None, "local")
    quiet_environment(local_ray=local)
    # address="local": always a new Ray, never one that another process left registered on this machine
    kwargs = (
        {
            "address": "local",
            "num_cpus": os.cpu_count(),
            "include_dashboard": False,
            "_node_ip_address": os.environ.get("GRIDLAB_RAY_NODE_IP", LOCAL_NODE_IP),
        }
        if local
        else {"address": address}
    )
    _init_with_timeout(kwargs, timeout_s, address or "a local Ray")
    try:
        yield
    finally:
        ray.shutdown()


def _init_with_timeout(kwargs: dict, timeout_s: float, target: str) -> None:
    """Joining is first tried in a child process with a deadline (ray.init itself has none and hangs on a
    token mismatch); only a cluster that answered is joined in this process."""
    if kwargs["address"] != "local":
        probe = f"import ray; ray.init(address={kwargs['address']!r}, logging_level='error'); ray.shutdown()"
        try:
            subprocess.run([sys.executable, "-c", probe], check=True, timeout=timeout_s, capture_output=True)
        except subprocess.TimeoutExpired:
            raise GridlabError(
                f"could not connect to {target} within {timeout_s:.0f}s (check the address and "
                "that RAY_AUTH_MODE matches the cluster's)"
            ) from None
        except subprocess.CalledProcessError as error:
            last = (error.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise GridlabError(f"could not connect to {target}: {last[0]}") from None
    # ray.init reads the flag from a constant set when Ray was imported; the environment has it for the rest
    clusters_off = kwargs["address"] == "local"
    flag = mock.patch.object(ray_constants, "ENABLE_RAY_CLUSTER", False) if clusters_off else nullcontext()
    with flag:
        ray.init(logging_level=logging.WARNING, log_to_driver=False, **kwargs)
    stop_on_sigterm()  # ray.init installs a handler that aborts on SIGTERM
    drop_reported_logs()  # a full disk or an interrupt is one line of gridlab's, not Tune's tracebacks and lists
    one_line_per_lost_node()


# What Ray's driver-side error listener prints when a node is lost, and what gridlab makes of it
RAYLET_DIED = "Raylet is terminated. Termination is unexpected."  # then the last 20 lines of its log
TASK_RETRIED = re.compile(r"^Task \S+ failed\. There are \d+ retries remaining")  # one per retry
NODE_DEAD = re.compile(r"^The node with node id: ([0-9a-f]+) and address: (\S+) .*has been marked dead")


_reported: set[str] = set()  # the nodes whose loss this driver has told


def report_lost_node(node_id: str, address: str | None = None) -> None:
    """The one line for a lost node, the first time this driver learns of it: from the cluster, which declares
    a node dead only after its heartbeats stopped for a while, or sooner from an analysis shard it cost."""
    if node_id not in _reported:
        _reported.add(node_id)
        where = f" ({address})" if address else ""
        print(f"ray: lost node {node_id[:12]}{where}: it stopped answering", file=sys.stderr, flush=True)


def one_line_per_lost_node() -> None:
    """Wrap the printer of Ray's driver-side error listener (`ray._private.worker.print_to_stdstream`, looked
    up on each message) so that a lost node is one line on stderr (`report_lost_node`): the
    tails of its raylet's log (one per agent of the node that noticed) and the notices of each retry of a
    task that ran there are dropped (gridlab reports what they cost). Every other message is printed as
    before."""
    from ray._private import worker

    printer = worker.print_to_stdstream
    if getattr(printer, "gridlab_filtered", False):
        return

    def filtered(data: dict, ignore_prefix: bool) -> None:
        text = "\n".join(data.get("lines", []))
        if data.get("pid") != "raylet":
            printer(data, ignore_prefix)
        elif (dead := NODE_DEAD.match(text)) is not None:
            report_lost_node(dead.group(1), dead.group(2))
        elif not (text.startswith(RAYLET_DIED) or TASK_RETRIED.match(text)):
            printer(data, ignore_prefix)

    filtered.gridlab_filtered = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = filtered
