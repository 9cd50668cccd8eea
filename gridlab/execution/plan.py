"""What analysis work a grid has left: its trained models' test instances cut into shards (`instances` of
the test split, a fixed random sample when the split has more, shortest first, in runs of `shard_size`), and
for each (cell, shard) the analyses whose Parquet part is not written yet. A shard is named by its index, so
its part file is the same whoever runs it, and planning again after a crash finds exactly the parts that
are missing.

The analysed rows are a sample (`batching.sample_rows`), not the split's head: IMDB's test split lists its
negative reviews first, and its first 1000 rows are one class. They are cut in length order
(`batching.analysis_order`) so that every batch holds instances of similar length and the analyses do little
padded work; the rows keep their test-set `instance_id`. A workspace whose parts were cut another way (an
earlier gridlab: the split's head, in file order) is refused (`check_shard_order`): mixing two layouts would
analyse some instances twice and others never. So are parts computed with other analysis parameters than the
grid now gives (`check_part_params`), or cut from another sample than its `instances` and `shard_size` now give
(`check_part_shards`): a relaunch skips existing parts, whatever they were computed with.

    >>> jobs, existing = plan_jobs(expanded)                   # every trained cell
    >>> jobs, _ = plan_jobs(expanded, cell_ids={"1ae91328ef63"})  # one model that just finished training
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gridlab.analyses.registry import IMPLEMENTATIONS
from gridlab.catalog.analyses import ANALYSES
from gridlab.errors import BadInput, GridlabError
from gridlab.grid.expand import Cell, ExpandedGrid
from gridlab.results.parts import part_params, part_shard
from gridlab.results.shards import Shard, plan_shards, rows_in_test_split
from gridlab.store.atomic import write_json
from gridlab.store.layout import GridWorkspace, shard_of
from gridlab.store.models import ModelStore

SHARD_ORDER = {
    "rows": "a fixed random sample of `instances` test rows (batching.sample_rows), all when there are fewer",
    "order": "length",
    "ties": "test-set position",
}


@dataclass(frozen=True)
class ShardJob:
    grid: str
    cell_id: str
    shard: Shard
    analyses: dict[str, dict] = field(default_factory=dict)  # analysis id -> params (JSON)
    batch_size: int = 32  # shards start at multiples of it, so an instance's batch never depends on sharding
    peers: tuple[str, ...] = ()  # the cells its grid-scope analyses compare it with (their `peers` rule)

    def keys(self) -> set[tuple[str, int, str]]:
        """(cell, shard, analysis) of every part this job writes."""
        return {(self.cell_id, self.shard.index, a) for a in self.analyses}


def plan_jobs(
    grid: ExpandedGrid, only: list[str] | None = None, cell_ids: set[str] | None = None
) -> tuple[list[ShardJob], int]:
    """Jobs with at least one missing part, for the trained cells (all, or `cell_ids` and their seed peers);
    and how many parts of those cells already exist.

    A grid-scope analysis of a cell is planned once every peer its declaration names (`AnalysisInfo.peers`)
    has finished training (trained or failed) and at least one is trained; until then it is left for a later
    plan. Analyses with other peers go in jobs of their own.

    Each per-model analysis is a job of its own, ahead of the cell's shards of instances: one of them trains an
    adversary or five (tens of minutes on IMDB), so together in one job they would run one after another on one
    actor while the others idle, and a killed worker would cost all of them.
    """
    store = ModelStore(grid.workspace.models)
    states = {c.id: store.cell(c.id).state() for c in grid.cells}
    configs = {c.id: c.config.model_dump(mode="json") for c in grid.cells}
    peer_rules = grid_peers(list(grid.analyses), configs)
    wanted_cells = _with_peers(cell_ids, peer_rules) if cell_ids is not None else set(configs)
    jobs, existing = [], 0
    for cell in grid.cells:
        if cell.id not in wanted_cells or states[cell.id] != "trained":
            continue
        analyses = _applicable(grid, cell, only)
        peers: dict[str, tuple[str, ...]] = {}
        for analysis in [a for a in analyses if a in peer_rules]:
            group = peer_rules[analysis].get(cell.id, [])
            peers[analysis] = tuple(p for p in group if states[p] == "trained")
            if not peers[analysis] or any(states[p] == "pending" for p in group):
                del analyses[analysis], peers[analysis]
        if not analyses:
            continue
        rows = rows_in_test_split(grid.workspace, cell.id)
        per_model = {a: p for a, p in analyses.items() if ANALYSES[a].scope == "model"}
        per_instance = {a: p for a, p in analyses.items() if a not in per_model}
        whole_split = Shard(0, 0, rows, rows)  # a per-model analysis's one part, as shard 0
        units = [(whole_split, {a: p}) for a, p in per_model.items()]
        units += [(shard, per_instance) for shard in plan_shards(rows, grid.spec.instances, grid.spec.shard_size)]
        for shard, planned in units:
            missing = {a: p for a, p in planned.items() if not grid.workspace.part(a, cell.id, shard.index).exists()}
            existing += len(planned) - len(missing)
            for job_peers, job_analyses in _by_peers(missing, peers):
                job = ShardJob(grid.spec.name, cell.id, shard, job_analyses, grid.spec.analysis_batch_size, job_peers)
                jobs.append(job)
    return jobs, existing


def check_shard_order(workspace: GridWorkspace) -> None:
    """Refuse parts whose shards were cut another way (an earlier gridlab: the split's head in file order)."""
    if workspace.shard_order.is_file():
        if json.loads(workspace.shard_order.read_text()) == SHARD_ORDER:
            return
    elif not workspace.has_parts():
        return
    raise GridlabError(
        f"{workspace.analyses}: these parts were cut from other test rows by an earlier gridlab (shards are now "
        "a fixed sample in length order); move that folder aside (trained models are kept) and relaunch to redo "
        "the analyses"
    )


def check_part_params(grid: ExpandedGrid, only: list[str] | None = None) -> None:
    """Refuse parts of the grid's cells computed with other parameters than its `analyses` now give: a relaunch
    skips every part that exists, so their rows would pass for the new parameters'. A parameter that a part
    does not record was added to gridlab since, and the part was computed as its default computes: it is
    compared as that default (a grid that sets another value is refused). Parts written before parts recorded
    their parameters are not compared."""
    cells = {c.id for c in grid.cells}
    for analysis, params in grid.analyses.items():
        if only is not None and analysis not in only:
            continue
        wanted = params.model_dump(mode="json")
        defaults = type(params).model_construct().model_dump(mode="json")
        for path in grid.workspace.parts_of(analysis, cells):
            recorded = part_params(path)
            if recorded is None:
                continue
            computed = {k: recorded.get(k, defaults.get(k)) for k in wanted}
            if computed != wanted:
                folder = grid.workspace.analysis(analysis)
                raise BadInput(
                    f"{grid.file}: analyses.{analysis}: the parts in {folder} were computed with {computed} "
                    f"(e.g. {path.parent.name}), the grid now gives {wanted}; restore those parameters, or move "
                    "that folder aside (trained models are kept) and relaunch to recompute"
                )


def check_part_shards(grid: ExpandedGrid, only: list[str] | None = None) -> None:
    """Refuse per-instance parts cut from another sample than the grid's `instances` and `shard_size` now give
    (another grid sharing the results folder, or an edited grid): a relaunch would add the missing shards of
    the new cut beside them, analysing some instances twice and others never. Parts written before parts
    recorded their shard are not compared."""
    store = ModelStore(grid.workspace.models)
    for cell in grid.cells:
        analyses = [a for a in _applicable(grid, cell, only) if ANALYSES[a].scope != "model"]
        if not analyses or store.cell(cell.id).state() != "trained":
            continue
        planned = plan_shards(rows_in_test_split(grid.workspace, cell.id), grid.spec.instances, grid.spec.shard_size)
        cuts = {s.index: s.extent() for s in planned}
        for analysis in analyses:
            for path in grid.workspace.parts_of(analysis, {cell.id}):
                recorded = part_shard(path)
                if recorded is None or recorded == cuts.get(shard_of(path)):
                    continue
                population = planned[0].population if planned else 0
                raise BadInput(
                    f"{grid.file}: instances: {path} holds test instances {recorded['start']}-{recorded['stop']} "
                    f"of a sample of {recorded['population']}; the grid now cuts {population} in shards of "
                    f"{grid.spec.shard_size}; set `instances` and `shard_size` as they were, or move "
                    f"{path.parent} aside (trained models are kept) and relaunch to recompute"
                )


@dataclass(frozen=True)
class ReusablePart:
    """A part another grid wrote that this grid would write the same (`reusable_parts`)."""

    analysis: str
    source: Path  # the other grid's part
    target: Path  # this grid's part it stands for
    shard: Shard | None  # the test instances of a per-instance part; None for a per-model part


def reusable_parts(grid: ExpandedGrid, cell: Cell, source: GridWorkspace) -> list[ReusablePart]:
    """The parts another grid wrote of a cell both grids hold that this grid has not, and would compute exactly
    as they were computed: with the same parameters and, for a per-instance part, over the same shard of the
    same sample. Grid-scope analyses are left out, as their rows depend on the peers each grid
    holds, and so are parts that do not record their parameters or shard (an earlier gridlab): nothing says how
    they were computed."""
    planned = plan_shards(rows_in_test_split(source, cell.id), grid.spec.instances, grid.spec.shard_size)
    cuts = {s.index: s for s in planned}
    reusable = []
    for analysis, params in _applicable(grid, cell, None).items():
        scope = ANALYSES[analysis].scope
        if scope == "grid":
            continue
        for path in source.parts_of(analysis, {cell.id}):
            index = shard_of(path)
            if scope == "model":
                shard, same_rows = None, index == 0
            else:
                shard = cuts.get(index)
                same_rows = shard is not None and part_shard(path) == shard.extent()
            target = grid.workspace.part(analysis, cell.id, index)
            if same_rows and part_params(path) == params and not target.exists():
                reusable.append(ReusablePart(analysis, path, target, shard))
    return reusable


def mark_shard_order(workspace: GridWorkspace) -> None:
    """Record, before the first part is written, how this workspace's shards are cut."""
    if not workspace.shard_order.is_file():
        write_json(workspace.shard_order, SHARD_ORDER)


def not_implemented(grid: ExpandedGrid, only: list[str] | None = None) -> list[str]:
    return [a for a in grid.analyses if a not in IMPLEMENTATIONS and (only is None or a in only)]


def grid_peers(analyses: list[str], configs: Mapping[str, dict]) -> dict[str, dict[str, list[str]]]:
    """Each grid-scope analysis among `analyses` -> every cell's peers, by its declaration's rule (the cells'
    resolved configs: id -> JSON)."""
    return {a: rule(configs) for a in analyses if (rule := ANALYSES[a].peers) is not None}


def _with_peers(cell_ids: set[str], rules: dict[str, dict[str, list[str]]]) -> set[str]:
    return set(cell_ids) | {p for peers in rules.values() for c in cell_ids for p in peers.get(c, [])}


def _by_peers(
    analyses: dict[str, dict], peers: dict[str, tuple[str, ...]]
) -> list[tuple[tuple[str, ...], dict[str, dict]]]:
    """`analyses` cut into jobs by the peers they compare with; those that need none ride with the first set."""
    first = next((peers[a] for a in analyses if a in peers), ())
    groups: dict[tuple[str, ...], dict[str, dict]] = {}
    for analysis, params in analyses.items():
        groups.setdefault(peers.get(analysis, first), {})[analysis] = params
    return list(groups.items())


def _applicable(grid: ExpandedGrid, cell: Cell, only: list[str] | None) -> dict[str, dict]:
    return {
        a: params.model_dump(mode="json")
        for a, params in grid.analyses.items()
        if a in IMPLEMENTATIONS and (only is None or a in only) and ANALYSES[a].applies(cell.config)
    }
