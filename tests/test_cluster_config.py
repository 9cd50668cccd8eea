"""cluster.yaml, checked offline: Ray's own JSON schema, then Ray's own preparation and validation of an
autoscaler config (what `ray up` does before it touches AWS), then what gridlab relies on.

Not called: `ray.autoscaler._private.aws.config.bootstrap_aws` and the AWS provider's
`fillout_available_node_types_resources` (what `ray up` does next): both need boto3, credentials and the
network. `prepare_config` and `validate_config` are private Ray API, valid for the Ray this repo installs."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest
import ray.autoscaler
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from ray.autoscaler._private.util import prepare_config, validate_config

from tests.test_lock import LOCKS, lock_pins

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def cluster_config(path: Path = REPO / "cluster.yaml") -> tuple[dict, dict]:
    """A cluster config as written and as `ray up` prepares it (Ray's AWS defaults merged, `setup_commands`
    put in front of `head_setup_commands` and `worker_setup_commands`). cluster.yaml is the one place that
    holds the nodes' setup and start commands; a test that runs them takes them from here."""
    config = yaml.safe_load(path.read_text())
    prepared = prepare_config(json.loads(json.dumps(config)))  # no network
    validate_config(prepared)
    return config, prepared


@pytest.fixture(scope="module")
def config() -> dict:
    return cluster_config()[0]


@pytest.fixture(scope="module")
def prepared() -> dict:
    return cluster_config()[1]


def test_valid_against_rays_schema(config: dict):
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)  # also catches unknown keys: the schema forbids them


def test_ray_prepares_it_without_its_defaults_leaking_in(config: dict, prepared: dict):
    assert prepared["provider"]["type"] == "aws"
    # every command list is ours: an omitted one would bring Ray's defaults (a nightly Ray wheel, a conda env)
    for key in (
        "setup_commands",
        "head_setup_commands",
        "worker_setup_commands",
        "head_start_ray_commands",
        "worker_start_ray_commands",
        "initialization_commands",
    ):
        assert key in config, key
    assert "ray-wheels" not in json.dumps(prepared) and "anaconda3" not in json.dumps(prepared)
    # prepare_config puts the common setup in front of the head's and workers' own
    assert prepared["head_setup_commands"] == config["setup_commands"] + config["head_setup_commands"]
    assert prepared["worker_setup_commands"] == config["setup_commands"] + config["worker_setup_commands"]


def test_head_has_no_gpu_and_runs_the_mlflow_server(prepared: dict):
    head = prepared["available_node_types"][prepared["head_node_type"]]
    assert head["resources"].get("GPU", 0) == 0 and head["resources"]["CPU"] == 0  # no trial lands on the head
    assert head["max_workers"] == 0 and head["node_config"]["InstanceType"].startswith("m5.")
    start = " ".join(prepared["head_start_ray_commands"])
    assert "ray start --head" in start and "--autoscaling-config=~/ray_bootstrap_config.yaml" in start
    assert "mlflow server" in start and "--port 5000" in start
    assert "--workers 1" in start and "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false" in start  # 2 processes, not 15
    assert "MLFLOW_DISABLE_TELEMETRY=true" in start
    assert "--backend-store-uri sqlite:///$HOME/" in start  # the head's own disk, not the NFS share
    assert "--artifacts-destination s3://" in start


def test_gpu_workers_autoscale_from_zero(prepared: dict):
    workers = {name: t for name, t in prepared["available_node_types"].items() if name != prepared["head_node_type"]}
    assert len(workers) == 1
    gpu = next(iter(workers.values()))
    assert gpu["resources"]["GPU"] >= 1 and gpu["resources"]["CPU"] >= 1
    assert gpu["min_workers"] == 0 and 1 <= gpu["max_workers"] <= prepared["max_workers"]
    assert gpu["node_config"]["InstanceType"].startswith("g5.")
    assert "ray start --address=$RAY_HEAD_IP:6379" in " ".join(prepared["worker_start_ray_commands"])


def installs(commands: list[str]) -> list[str]:
    """The `pip install` commands of a node, whitespace normalised."""
    return [" ".join(c.split()) for c in commands if re.search(r"\bpip install\b", c)]


def test_every_node_runs_cis_python_in_one_environment(prepared: dict):
    common = " ".join(" ".join(c.split()) for c in prepared["setup_commands"])
    versions = set(re.findall(r"--python (\d+\.\d+\.\d+)\b", common))
    assert len(versions) == 1, f"one exact Python for every node, not {versions}"
    python = Version(versions.pop())
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert python in requires, f"cluster.yaml's Python {python} is outside pyproject.toml's {requires}"
    for lock in LOCKS:  # the Python the locks were resolved for
        assert f"autogenerated by pip-compile with Python {python.major}.{python.minor}\n" in (REPO / lock).read_text()
    # an environment of another Python (an earlier cluster.yaml's) is replaced, not reused
    assert f"sys.version_info[:3] != {python.release}" in common and "rm -rf ~/gridlab-env" in common
    assert "--managed-python" in common  # never the AMI's own Python
    assert "echo 'source ~/gridlab-env/bin/activate' >> ~/.bashrc" in common  # every later command runs in it
    for key in ("head_setup_commands", "worker_setup_commands"):  # the common setup comes first (prepare_config)
        assert prepared[key][: len(prepared["setup_commands"])] == prepared["setup_commands"]


def test_every_node_installs_gridlab_from_its_lock(config: dict, prepared: dict):
    assert config["file_mounts"]["~/gridlab"] == "." and ".gitignore" in config["rsync_filter"]  # this checkout
    assert "cluster" in PYPROJECT["project"]["optional-dependencies"]
    target = '"$HOME/gridlab[cluster]"'
    node_locks = {"head_setup_commands": "requirements.lock", "worker_setup_commands": "requirements-cuda.lock"}
    for key, lock in node_locks.items():
        own = installs(prepared[key][len(prepared["setup_commands"]) :])
        assert len(own) == 1 and own[0].endswith(f" {target}"), f"{key}: one install, of gridlab, not {own}"
        assert f" -c ~/gridlab/{lock} " in own[0], f"{key} must install with {lock}'s pins"
    # anything else installed pins its version: the bootstrap's uv
    for command in installs(prepared["setup_commands"]):
        assert re.fullmatch(r".*pip install -q [A-Za-z0-9_.-]+==[0-9.]+\)?", command), command
    cpu_index = "--extra-index-url https://download.pytorch.org/whl/cpu"  # where the lock's torch==2.13.0+cpu is
    assert any(cpu_index in c for c in installs(prepared["head_setup_commands"]))
    workers = installs(prepared["worker_setup_commands"])
    assert not any("download.pytorch.org" in c for c in workers)
    # `torch==2.13.0` admits 2.13.0+cpu (PEP 440 ignores local labels): constraints-cuda.txt rules it out
    assert any(" -c ~/gridlab/constraints-cuda.txt " in c for c in workers)


def test_ray_is_the_locks_on_every_node_and_where_ray_up_runs(config: dict):
    pins = {lock: lock_pins(lock)["ray"] for lock in LOCKS}
    assert len(set(pins.values())) == 1, pins
    locked = pins["requirements.lock"]
    # `ray up` prepares the config with the local Ray: it must be the nodes'
    assert Version(ray.__version__) == locked, f"ray up runs Ray {ray.__version__}, the nodes get {locked}"
    assert "ray[default]" in " ".join(PYPROJECT["project"]["optional-dependencies"]["cluster"])
    text = yaml.safe_dump(config)  # a Ray pinned beside the lock would override it
    assert not re.search(r"\bray(\[[a-z,]+\])?\s*[=<>~]", text), "cluster.yaml pins Ray itself"


def test_every_ray_process_authenticates_with_the_same_token(config: dict, prepared: dict):
    starts = [
        c for c in prepared["head_start_ray_commands"] + prepared["worker_start_ray_commands"] if "ray start" in c
    ]
    assert len(starts) == 2 and all("RAY_AUTH_MODE=token" in c for c in starts)
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"  # Ray's default token path


def test_nothing_listens_beyond_the_heads_loopback_but_ray_itself(prepared: dict):
    start = " ".join(prepared["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in start and "0.0.0.0" not in start
    assert "mlflow server --host 127.0.0.1" in start


def test_no_shared_file_system_results_go_to_s3(config: dict, prepared: dict):
    text = json.dumps(prepared).lower()
    assert "efs" not in text and "nfs" not in text and "mount -t" not in text
    assert config["file_mounts"]["~/gridlab-data"] == "./data"  # the datasets, copied to every node
    worker = next(t for n, t in prepared["available_node_types"].items() if n != prepared["head_node_type"])
    assert worker["node_config"]["IamInstanceProfile"] == {"Name": "ray-autoscaler-v1"}  # S3 for trials and actors
