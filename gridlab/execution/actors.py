"""Analyses on Ray: shards queued to a pool of actors (resources from `resources.analysis`), each actor
loading a model once per cell and writing one Parquet part per analysis and shard.

    >>> dispatcher = AnalysisDispatcher(expanded, emit=print)
    >>> dispatcher.submit(plan_jobs(expanded, cell_ids={cell_id})[0])   # as soon as a model is trained
    >>> dispatcher.drain()                                                # wait for every queued shard

The pool grows while shards are queued and gives its actors back when the queue is empty, so that idle
analysis actors never hold CPUs that Tune's training trials are waiting for. Training comes first: while a
launch's trials run or wait, the pool takes only what they leave of the cluster (`leave_to_training`), so a
grid ends on analyses, which spread over every actor, and not on a last trial followed by its analyses.

Parts that exist are skipped, so a relaunch writes nothing new and a deleted part is rewritten alone. An actor
that dies is restarted and its shard retried (`max_restarts`, `max_task_retries`): a crash costs only the shard
in flight. An actor whose worker imported another gridlab than the driver's (`codebase`) fails each shard it is
given, naming both.

A node that is lost (its raylet killed, the machine gone) makes its actors unreachable at once, and Ray spends
their restarts and retries within a second, long before the cluster declares the node dead. Such a shard is
not a failed shard: it goes back to the queue for a new actor, which Ray places on a live node, at most
`NODE_LOSS_REQUEUES` times per shard (a node lost again and again is a cluster to fix, and the shard then fails
as any other). A shard whose analysis raised, or whose actor died on a node that is alive, fails as before.
"""

from __future__ import annotations

import re
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray import cloudpickle
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayError

from gridlab.analyses.base import Analysis
from gridlab.analyses.registry import ANALYSES, IMPLEMENTATIONS, is_plugin
from gridlab.execution.codebase import Codebase, ForeignCode
from gridlab.execution.plan import (
    ShardJob,
    check_part_params,
    check_part_shards,
    check_shard_order,
    not_implemented,
    plan_jobs,
)
from gridlab.execution.progress import Status
from gridlab.execution.ray_session import report_lost_node
from gridlab.execution.runner import ShardOutcome, ShardRunner
from gridlab.grid.expand import ExpandedGrid
from gridlab.results.summary import log_summaries, write_summary
from gridlab.runtime import pick_device, quiet_environment, set_torch_threads
from gridlab.store.store import Store
from gridlab.store.timings import record_model, record_shard
from gridlab.text import counted, duration

NODE_LOSS_REQUEUES = 3  # times a shard goes back to the queue because its actor's node was lost
NODE_DIED = re.compile(r"its node has died\. Node Id: ([0-9a-f]+)")  # the GCS's cause of an ActorDiedError


@ray.remote(max_restarts=2, max_task_retries=2)
class AnalysisActor:
    def __init__(
        self,
        grid_results: str,
        data_dir: str,
        cache_dir: str,
        device: str,
        cpus: float,
        gpus: float,
        plugins: dict[str, type[Analysis]],
        code: Codebase,
        store: Store | None = None,
    ):
        self.mismatch = code.mismatch()
        if self.mismatch is not None:  # nothing of this worker's gridlab runs; `run` fails each shard with why
            return
        quiet_environment(local_ray=False)
        if store is not None:  # results in object storage: upload the parts written here, fetch models
            store.activate()
        set_torch_threads(cpus)
        self.runner = ShardRunner(
            Path(grid_results),
            Path(data_dir),
            Path(cache_dir),
            pick_device(device, gpus),
            {**IMPLEMENTATIONS, **plugins},
        )

    def run(self, job: ShardJob) -> ShardOutcome:
        if self.mismatch is not None:
            raise ForeignCode(self.mismatch)
        return self.runner.run(job)


@dataclass
class AnalysisReport:
    written: int = 0
    skipped: int = 0
    not_implemented: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "cell shard N: error" for shards that raised
    requeued: int = 0  # shards sent back to the queue because their node was lost
    lost_nodes: list[str] = field(default_factory=list)  # ids of the nodes lost while shards ran on them


class AnalysisDispatcher:
    """A queue of shard jobs in front of a pool of `AnalysisActor`s; driven by `pump` (never blocks long).
    With `only`, it runs those analyses of every job and leaves the others for a later launch."""

    def __init__(
        self,
        grid: ExpandedGrid,
        emit: Callable[[str], None],
        status: Status | None = None,
        only: list[str] | None = None,
    ):
        check_shard_order(grid.workspace)
        check_part_params(grid, only)
        check_part_shards(grid, only)
        self.grid = grid
        self.emit = emit
        self.show = status  # a live row for the analyses (a terminal), else None: a line per shard
        self.only = only
        self.report = AnalysisReport(not_implemented=not_implemented(grid, only))
        self._queue: deque[ShardJob] = deque()
        self._idle: list = []
        self._busy: dict[ray.ObjectRef, tuple[object, ShardJob]] = {}
        self._submitted: set[tuple[str, int, str]] = set()
        self._requeues: dict[frozenset[tuple[str, int, str]], int] = {}  # a job's parts -> times its node was lost
        self._shards = self._done = 0
        self._started = time.monotonic()
        self._shard_seconds = 0.0  # the analysed shards' own time, summed: their pace, whatever ran before
        self._for_training: tuple[float, float] = (0.0, 0.0)  # CPUs, GPUs kept for trials (`leave_to_training`)

    def submit(self, jobs: list[ShardJob]) -> int:
        """Queue the parts of these jobs that are not queued or running already; returns the shards queued."""
        queued = len(self._queue)
        for job in jobs:
            fresh = {
                a: p
                for a, p in job.analyses.items()
                if (job.cell_id, job.shard.index, a) not in self._submitted and (self.only is None or a in self.only)
            }
            if fresh:
                self._submitted |= {(job.cell_id, job.shard.index, a) for a in fresh}
                self._queue.append(ShardJob(job.grid, job.cell_id, job.shard, fresh, job.batch_size, job.peers))
                self._shards += 1
        added = len(self._queue) - queued
        self.pump()
        return added

    def pump(self, timeout: float = 0.0) -> None:
        """Collect finished shards (waiting up to `timeout` s for one), start queued ones, free idle actors."""
        if self._busy:
            ready, _ = ray.wait(list(self._busy), num_returns=1, timeout=timeout)
            for ref in ready:
                self._finish(ref)
        slots = self._slots()
        while self._queue and len(self._busy) < slots:
            actor = self._idle.pop() if self._idle else self._new_actor()
            job = self._queue.popleft()
            self._busy[actor.run.remote(job)] = (actor, job)
        self._release(self._idle)  # nothing queued for them, or their CPUs are kept for trials
        self._idle = []

    def leave_to_training(self, cpus: float, gpus: float) -> None:
        """Keep `cpus` and `gpus` of the cluster for training trials (those running or waiting): no new actor
        starts in them, and an actor that finishes its shard gives its CPU back. On 2 cores an adversary job
        holds one for tens of minutes; trials first, the analyses of every model share the actors at the end."""
        self._for_training = (cpus, gpus)

    def drain(self) -> AnalysisReport:
        """Block until every queued shard is written (or has failed)."""
        while self._queue or self._busy:
            self.pump(timeout=1.0)
        return self.report

    @property
    def running(self) -> bool:
        return bool(self._queue or self._busy)

    def close(self) -> None:
        self._release(self._idle + [actor for actor, _ in self._busy.values()])
        self._idle, self._busy = [], {}

    def _finish(self, ref: ray.ObjectRef) -> None:
        actor, job = self._busy.pop(ref)
        outcome = None
        try:
            outcome = ray.get(ref)
            self.report.written += len(outcome.paths)
            self._idle.append(actor)
            self._shard_seconds += outcome.seconds
            if outcome.padded_tokens:  # a shard of instances was analysed: its time feeds `gridlab plan`
                instances = job.shard.stop - job.shard.start
                record_shard(self.grid.workspace, job.cell_id, job.shard.index, instances, outcome.seconds)
            for analysis, seconds in outcome.model_seconds.items():
                record_model(self.grid.workspace, job.cell_id, analysis, seconds)
        except RayActorError as error:  # unreachable, or died more often than it may restart: give it up
            self._release([actor])
            node = lost_node(actor, error)
            if node is not None and self._requeue(job, node):
                return  # not done: it runs again, and its line comes then
            self._fail(job, error)
        except RayError as error:  # the analysis raised: the actor itself is fine
            self._fail(job, error)
            self._idle.append(actor)
        self._done += 1
        elapsed = time.monotonic() - self._started
        text = (
            f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] analyses: {self._done}/{self._shards} shards"
            f"{eta(self._shard_seconds, self._done, self._shards, self._slots())}, {self.report.written} parts "
            f"written{shard_cost(job, outcome)}"
        )
        if self.show is None or (self._done == self._shards and not self._queue):
            if self.show is not None:
                self.show("analyses", None)
            self.emit(text)
        else:
            self.show("analyses", text)

    def _requeue(self, job: ShardJob, node: str) -> bool:
        """Put the shard back in front of the queue for a new actor, unless its node was lost too often. The
        node's loss itself is one line (`ray_session.report_lost_node`), whoever learns of it first."""
        key = frozenset(job.keys())
        times = self._requeues.get(key, 0) + 1
        if times > NODE_LOSS_REQUEUES:
            return False
        self._requeues[key] = times
        self.report.requeued += 1
        self._queue.appendleft(job)
        if node not in self.report.lost_nodes:
            self.report.lost_nodes.append(node)
            if node != "unknown":
                report_lost_node(node)
        self.emit(
            f"analyses: shard {job.shard.index} of {job.cell_id} requeued: its node {node[:12]} stopped answering "
            f"({times} of {NODE_LOSS_REQUEUES} requeues)"
        )
        return True

    def _fail(self, job: ShardJob, error: Exception) -> None:
        last = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        self.report.failed.append(f"{job.cell_id} shard {job.shard.index} ({', '.join(job.analyses)}): {last}")
        self._submitted -= job.keys()  # a later run may try again
        self.emit(f"analyses: FAILED {self.report.failed[-1]}")

    def _slots(self) -> int:
        """Actors the cluster could hold at once (by CPUs, and GPUs when analyses ask for them) beside what is
        kept for training; at least one while nothing is kept."""
        resources, total = self.grid.spec.resources.analysis, ray.cluster_resources()
        cpus, gpus = self._for_training
        slots = int((total.get("CPU", 1) - cpus) // resources.cpu) if resources.cpu else 1
        if resources.gpu:
            slots = min(slots, int((total.get("GPU", 0) - gpus) // resources.gpu))
        return max(0 if cpus or gpus else 1, slots)

    def _new_actor(self):
        resources, spec = self.grid.spec.resources.analysis, self.grid.spec
        return AnalysisActor.options(num_cpus=resources.cpu, num_gpus=resources.gpu).remote(
            str(self.grid.results_dir.resolve()),
            str(self.grid.data_dir.resolve()),
            str(self.grid.results.cache.resolve()),
            spec.device,
            resources.cpu,
            resources.gpu,
            plugins(),
            Codebase.here(),
            self.grid.store,
        )

    @staticmethod
    def _release(actors: list) -> None:
        for actor in actors:
            ray.kill(actor)


def lost_node(actor, error: RayActorError) -> str | None:
    """The id of the node whose loss cost the actor (`error`), or None when the node is alive: the actor
    itself crashed (its restarts spent), and the shard fails like any other. A node that became unreachable
    (`ActorUnavailableError`) counts as lost: by the time the cluster declares it dead the shard is elsewhere."""
    if isinstance(error, ActorDiedError) and error.actor_init_failed:
        return None
    found = NODE_DIED.search(str(error))
    if found:
        return found.group(1)
    node = actor_node(actor)
    if isinstance(error, ActorUnavailableError) or error.preempted:
        return node or "unknown"
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    return node if node is not None and node not in alive else None


def actor_node(actor) -> str | None:
    """The node an actor was last placed on, from the cluster's actor table."""
    try:
        entry = ray._private.state.actors(actor_id=actor._actor_id.hex())
    except Exception:  # noqa: BLE001  the table is a diagnosis: without it the shard is judged by its error
        return None
    return (entry or {}).get("Address", {}).get("NodeID") or None


def eta(shard_seconds: float, done: int, total: int, parallel: int) -> str:
    """' (about 4m10s left)': the shards left at the mean time of those done, `parallel` at once; nothing
    before the first or after the last. (Not the time since the first was queued: that includes training.)"""
    if not done or done >= total:
        return ""
    return f" (about {duration(shard_seconds / done * (total - done) / max(1, parallel))} left)"


def shard_cost(job: ShardJob, outcome: ShardOutcome | None) -> str:
    """'; shard 2 of 1ae91328ef63: 256 instances in 41 s, padding efficiency 0.94, encoder pass 38%'."""
    if outcome is None or outcome.padding_efficiency is None:
        return ""
    text = (
        f"; shard {job.shard.index} of {job.cell_id}: {job.shard.stop - job.shard.start} instances in "
        f"{outcome.seconds:.0f} s, padding efficiency {outcome.padding_efficiency:.2f}"
    )
    share = outcome.encoder_share
    return text + (f", encoder pass {share:.0%}" if share is not None else "")


def plugins() -> dict[str, type[Analysis]]:
    """The analyses added in this process beyond gridlab's own (`registry.register`). Their folders are
    pickled by value, so that a plug-in package written by a script or a test also runs on workers that
    cannot import it."""
    found = {a: IMPLEMENTATIONS[a] for a in ANALYSES if is_plugin(a)}
    for analysis_id in found:
        cloudpickle.register_pickle_by_value(sys.modules[ANALYSES.package(analysis_id).rsplit(".", 1)[0]])
    return found


def run_analyses(
    grid: ExpandedGrid,
    emit: Callable[[str], None],
    only: list[str] | None = None,
    dispatcher: AnalysisDispatcher | None = None,
) -> AnalysisReport:
    """Run (or resume) the grid's analyses on every trained cell and wait for them. Ray must be up.

    With a `dispatcher` that already runs shards (started while training), only what it has not queued is added.
    """
    own = dispatcher is None
    dispatcher = dispatcher or AnalysisDispatcher(grid, emit)
    missing = not_implemented(grid, only)
    if missing:
        emit(f"analyses not implemented yet (validated, not run): {', '.join(missing)}")
    jobs, existing = plan_jobs(grid, only)
    dispatcher.report.skipped = existing
    dispatcher.leave_to_training(0.0, 0.0)  # training is over: the whole cluster is the analyses'
    try:
        added = dispatcher.submit(jobs)
        if added:
            emit(f"analyses: {added} shards to run ({existing} parts already written)")
        elif not dispatcher.running:
            emit(f"analyses: nothing to do ({existing} parts already written)")
        report = dispatcher.drain()
    finally:
        if own:
            dispatcher.close()
    return report


def summarize(grid: ExpandedGrid, tracker, emit: Callable[[str], None]) -> None:
    """summary.parquet from every part written so far (on any node), and the numbers on each cell's MLflow run."""
    Store.bring_down(grid.workspace.analyses)
    frame = write_summary(grid)
    if frame.empty:
        return
    before = tracker.journal.count()
    recorded = log_summaries(grid, frame, tracker)
    written = tracker.written_since(before)  # what the store took, not what was recorded for it
    waiting = f" ({recorded - written} waiting in the journal)" if written < recorded else ""
    emit(
        f"summaries: {counted(len(frame), 'cell')} in {grid.workspace.summary}, logged to {written} MLflow runs"
        f"{waiting}"
    )
