"""`seed_variance` declared (docs/analyses.md#seed_variance): attention JSD between models that differ only in seed
(W&P). Torch-free: validation, planning and reports read it; `compute.py` computes it."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pyarrow as pa

from gridlab.catalog.analyses import AnalysisInfo, NoParams, computation, learned_attention_cells


def peers_of(config: dict, candidates: dict[str, dict]) -> list[str]:
    """Ids of the candidate cells (id -> resolved config, JSON) equal to `config` but for the seed, by seed."""
    key = _seedless(config)
    same = [(c["seed"], cell_id) for cell_id, c in candidates.items() if c["seed"] != config["seed"]]
    return [cell_id for seed, cell_id in sorted(same) if _seedless(candidates[cell_id]) == key]


def seed_peers(configs: Mapping[str, dict]) -> dict[str, list[str]]:
    """`peers_of` for every cell at once (cell id -> its peers, by seed), in one pass over the cells: a grid
    of n cells is planned in O(n), where n calls of `peers_of` would take O(n^2)."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for cell_id, config in configs.items():
        groups.setdefault(_seedless(config), []).append((config["seed"], cell_id))
    peers: dict[str, list[str]] = {}
    for members in groups.values():
        ordered = sorted(members)
        for seed, cell_id in ordered:
            peers[cell_id] = [other for s, other in ordered if s != seed]
    return peers


def _seedless(config: dict) -> str:
    return json.dumps({k: v for k, v in config.items() if k != "seed"}, sort_keys=True)


SCHEMA = pa.schema(
    [
        ("other_seeds", pa.int64()),
        ("peer_cells", pa.string()),  # the compared cells' ids, comma-separated, in seed order
        ("jsd_seed_mean", pa.float64()),
        ("jsd_seed_max", pa.float64()),
        ("tvd_seed_mean", pa.float64()),
    ]
)


INFO = AnalysisInfo(
    "seed_variance",
    "attention JSD between models that differ only in seed (W&P)",
    NoParams,
    "grid",
    applies=learned_attention_cells,
    needs="a classifier with learned attention",
    heatmaps=True,
    peers=seed_peers,
    rows=SCHEMA,
    summary_columns=("jsd_seed_mean_mean", "jsd_seed_max_median", "tvd_seed_mean_mean"),
)

__getattr__ = computation(__name__)
