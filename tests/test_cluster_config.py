"""cluster.yaml, checked offline: Ray's own JSON schema, then Ray's own preparation and validation of an
autoscaler config (what `ray up` does before it touches AWS), then what gridlab relies on.

Not called: `ray.autoscaler._private.aws.config.bootstrap_aws` and the AWS provider's
`fillout_available_node_types_resources` (what `ray up` does next): both need boto3, credentials and the
network. `prepare_config` and `validate_config` are private Ray API, valid for the Ray this repo installs."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import ray.autoscaler
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

REPO = Path(__file__).resolve().parent.parent
TORCH_PIN = next(line for line in (REPO / "constraints.txt").read_text().split() if line.startswith("torch=="))


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((REPO / "cluster.yaml").read_text())


@pytest.fixture(scope="module")
def prepared(config: dict) -> dict:
    prepared = prepare_config(json.loads(json.dumps(config)))  # merges Ray's AWS defaults.yaml; no network
    validate_config(prepared)
    return prepared


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


def test_every_node_installs_gridlab_with_the_constraints_and_the_right_torch(config: dict, prepared: dict):
    assert config["file_mounts"]["~/gridlab"] == "." and ".gitignore" in config["rsync_filter"]
    for key in ("head_setup_commands", "worker_setup_commands"):
        commands = prepared[key]
        torch_line = next(i for i, c in enumerate(commands) if f"pip install -q {TORCH_PIN}" in c)
        gridlab_line = next(i for i, c in enumerate(commands) if "-c ~/gridlab/constraints.txt" in c)
        assert torch_line < gridlab_line and commands[gridlab_line].rstrip().split("#")[0].split()[-1] == "~/gridlab"
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu"
    assert any(cpu_index in c for c in prepared["head_setup_commands"])  # no CUDA wheels on the CPU head
    assert not any(cpu_index in c for c in prepared["worker_setup_commands"])  # PyPI's CUDA build on GPU nodes


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
