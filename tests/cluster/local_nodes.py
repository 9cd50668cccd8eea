"""A Ray autoscaler node provider whose nodes are folders and processes of this machine, so that `ray up`,
the autoscaler and `ray down` run Ray's own launcher code end to end in a test, on a machine with no cloud,
no SSH server and no rsync.

Used from a cluster file (Ray's documented hook for a provider of one's own):

    provider:
      type: external
      module: tests.cluster.local_nodes.LocalNodeProvider
      state_dir: /tmp/.../nodes            # one home folder per node, and the nodes' state (a JSON file)
      image_python: /path/to/venv          # what each new node finds in ~/gridlab-env (see `_provision`)

Why not Ray's own fake providers (Ray 2.60): `type: fake_multinode` fails in `ray up` before any node exists,
since the wheel lacks the `fake_multi_node/example.yaml` that `_get_default_config` opens; given as an
external provider, `FakeMultiNodeProvider` reports a head that is already up, with no launch-config tag, so
`ray up` terminates it and fails (`KeyError: 'node'`): it is made for the autoscaler of a `ray start --head`
on a laptop, not for `ray up`. `fake_multinode_docker` needs a Docker daemon, `type: local` SSH and rsync.

A node here is a home folder: every command `ray up` runs on it (setup, `ray start`, `ray stop`) runs in a
login shell with HOME set to that folder, as SSH would run it, and carries the node's id in its environment;
terminating the node ends every process of this user that carries that id (Ray's and the MLflow server that
the start commands leave running), as terminating an instance would. All nodes share this machine's network
and process table: a second node would meet the head's fixed ports and its `ray stop` would stop the head's
Ray, so a test cluster of this provider is a head only.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sysconfig
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import psutil
from ray.autoscaler._private.command_runner import _with_environment_variables, _with_interactive
from ray.autoscaler._private.subprocess_output_util import ProcessRunnerError
from ray.autoscaler.command_runner import CommandRunnerInterface
from ray.autoscaler.node_provider import NodeProvider

NODE_ID_VARIABLE = "GRIDLAB_LOCAL_NODE"
NODE_ADDRESS = "127.0.0.1"
# What a fresh node's shell finds on PATH: the system's tools, never the test's virtual environment.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The test's environment reaches the nodes (credentials, the S3 endpoint), less what belongs to one machine.
NOT_INHERITED = ("HOME", "PATH", "VIRTUAL_ENV", "PYTHONHOME", "GRIDLAB_MIRROR_DIR", "RAY_", "PYTEST_")


class LocalNodeProvider(NodeProvider):
    """Nodes in `state_dir/<node id>/`, their tags in `state_dir/nodes.json`, shared by every process that
    loads this provider (`ray up`, the head's autoscaler, `ray down`)."""

    def __init__(self, provider_config: dict[str, Any], cluster_name: str) -> None:
        super().__init__(provider_config, cluster_name)
        self.state_dir = Path(provider_config["state_dir"])
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _state(self) -> Iterator[dict[str, dict[str, str]]]:
        """The nodes' tags by node id, read and written back under a lock (several processes share them)."""
        with open(self.state_dir / "nodes.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.state_dir / "nodes.json"
            nodes = json.loads(path.read_text()) if path.exists() else {}
            yield nodes
            path.write_text(json.dumps(nodes, indent=1))

    def non_terminated_nodes(self, tag_filters: dict[str, str]) -> list[str]:
        with self._state() as nodes:
            return [n for n, tags in nodes.items() if all(tags.get(k) == v for k, v in tag_filters.items())]

    def is_running(self, node_id: str) -> bool:
        with self._state() as nodes:
            return node_id in nodes

    def is_terminated(self, node_id: str) -> bool:
        return not self.is_running(node_id)

    def node_tags(self, node_id: str) -> dict[str, str]:
        with self._state() as nodes:
            return dict(nodes[node_id])

    def external_ip(self, node_id: str) -> str:
        return NODE_ADDRESS

    def internal_ip(self, node_id: str) -> str:
        return NODE_ADDRESS

    def set_node_tags(self, node_id: str, tags: dict[str, str]) -> None:
        with self._state() as nodes:
            nodes[node_id].update(tags)

    def create_node(self, node_config: dict[str, Any], tags: dict[str, str], count: int) -> None:
        for _ in range(count):
            with self._state() as nodes:
                node_id = f"node-{len(list(self.state_dir.glob('node-*'))):02d}"
                nodes[node_id] = dict(tags)
                home = self.state_dir / node_id
                home.mkdir()
            _provision(home, Path(self.provider_config["image_python"]))

    def terminate_node(self, node_id: str) -> None:
        end_processes(node_id)
        with self._state() as nodes:
            nodes.pop(node_id, None)

    def get_command_runner(self, log_prefix: str, node_id: str, *args: Any, **kwargs: Any) -> LocalCommandRunner:
        environment = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)}
        environment |= {"HOME": str(self.state_dir / node_id), "PATH": SYSTEM_PATH, NODE_ID_VARIABLE: node_id}
        return LocalCommandRunner(log_prefix, environment)

    @staticmethod
    def bootstrap_config(cluster_config: dict[str, Any]) -> dict[str, Any]:
        return cluster_config


def _provision(home: Path, image_python: Path) -> None:
    """What the node's image holds before `ray up` runs anything: `~/gridlab-env`, a virtual environment of the
    test's Python that sees the test's installed packages (a `.pth` file) and has their commands (`ray`,
    `mlflow`) in its bin/. It stands in for the environment that cluster.yaml's setup commands make with uv
    (a CPython download), whose own check then finds it; `pip install -c <lock>` still installs into it what
    the test's environment lacks, and gridlab from the node's copy of the checkout."""
    env = home / "gridlab-env"
    venv.EnvBuilder(symlinks=True, with_pip=True).create(env)
    outer = subprocess.run(
        [image_python / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(sysconfig.get_path("purelib", vars={"base": str(env)})) / "image.pth").write_text(outer + "\n")
    for distribution in importlib.metadata.distributions(path=[outer]):
        for entry in distribution.entry_points.select(group="console_scripts"):
            script = env / "bin" / entry.name
            if script.exists():
                continue
            top = entry.attr.split(".")[0]
            script.write_text(
                f"#!{env}/bin/python\nimport sys\nfrom {entry.module} import {top}\nsys.exit({entry.attr}())\n"
            )
            script.chmod(0o755)


def end_processes(node_id: str, grace_s: float = 10.0) -> int:
    """Ends every process of this user that runs for `node_id` (its id in the environment); how many."""
    mine = []
    for process in psutil.process_iter(["uids"]):
        try:
            if process.info["uids"].real == os.getuid() and process.environ().get(NODE_ID_VARIABLE) == node_id:
                mine.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    for process in mine:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(mine, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return len(mine)


class LocalCommandRunner(CommandRunnerInterface):
    """Runs a node's commands as Ray's SSH runner would on the node (`bash --login -i`, Ray's variables
    exported first), and copies its file mounts as rsync would."""

    def __init__(self, log_prefix: str, environment: dict[str, str]) -> None:
        self.log_prefix = log_prefix
        self.environment = environment
        self.home = environment["HOME"]

    def run(
        self,
        cmd: str | None = None,
        timeout: int = 120,
        exit_on_fail: bool = False,
        port_forward: Any = None,
        with_output: bool = False,
        environment_variables: dict[str, object] | None = None,
        run_env: str = "auto",
        ssh_options_override_ssh_key: str = "",
        shutdown_after_run: bool = False,
    ) -> str:
        command = _with_interactive(_with_environment_variables(cmd or "true", environment_variables or {}))
        result = subprocess.run(
            " ".join(command),
            shell=True,
            cwd=self.home,
            env=self.environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if with_output else None,
        )
        if result.returncode != 0:
            if exit_on_fail:
                raise click.ClickException(f"Command failed: {cmd}")
            raise ProcessRunnerError("Command failed", "ssh_command_failed", code=result.returncode, command=cmd)
        return result.stdout if with_output else ""

    def _local(self, path: str) -> Path:
        """A node path (`~/...` is the node's home) on this machine."""
        return Path(self.home) / path[2:] if path.startswith("~/") else Path(path)

    def run_rsync_up(self, source: str, target: str, options: dict[str, Any] | None = None) -> None:
        _copy(Path(source), self._local(target), gitignore=".gitignore" in ((options or {}).get("rsync_filter") or []))

    def run_rsync_down(self, source: str, target: str, options: dict[str, Any] | None = None) -> None:
        _copy(self._local(source), Path(target), gitignore=False)

    def remote_shell_command_str(self) -> str:
        return f"HOME={self.home} bash --login\n"


def _copy(source: Path, target: Path, gitignore: bool) -> None:
    """rsync's `source/ target/` (a folder's contents) or `source target`; with `gitignore` (cluster.yaml's
    `rsync_filter: [.gitignore]`) only the files that git does not ignore, as that filter keeps."""
    if not source.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        return
    if gitignore and (source / ".git").exists():
        listed = subprocess.run(
            ["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        for name in filter(None, (n.decode() for n in listed)):
            if (source / name).is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / name, target / name)
        return
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
