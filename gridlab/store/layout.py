"""The one place that names the folders and files of a results directory. Every other module asks here.

results_dir/                        Results: shared by every grid written there
    mlflow.db, mlartifacts/         the default tracking store and its artifacts
    cache/                          CacheFiles: prepared datasets and vectors, keyed by content
    <grid>/                         GridWorkspace: one grid's results
        launches.jsonl              a line at the start and end of every launch (wall time)
        tune/launch-NNN/            one Ray Tune experiment per launch; <cell>/result.json per trial, and
                                    <cell>/checkpoint_NNNNNN/ (Tune's own names)
            gridlab-launch.json     its cells, its launch key, finished or not
            gridlab-seal.hmac       a keyed digest of the Tune state it unpickles on restore (`execution.seal`)
        launch.lock, launch.lease   the one launch per grid: on this machine, and in the bucket (`store.lock`)
        models/<cell id>/           a trained (or failed) cell: the files of CellFiles
        analyses/<analysis>/cell=<cell id>/part-NNNNN.parquet    one part per shard
        analyses/shard-order.json   how shards cut the test instances (length order; parts without it: file order)
        analyses/shards.jsonl       a line per analysed shard: its instances and seconds (`store.timings`)
        summary.parquet             one row per cell and analysis
        tracking/                   TrackingFiles: what MLflow is told, journaled first, and how much was sent
        report/, annotation/        where `gridlab report` and `gridlab annotate` write by default
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePath


class CellFiles:
    """File names inside a cell's model folder (`models/<cell id>/`)."""

    MODEL = "model.pt"  # the kept epoch's weights
    CONFIG = "config.json"  # the resolved cell config (what the id hashes)
    DATA = "data.json"  # the dataset reference: cache key, vocabulary digest, label names, row counts
    HISTORY = "history.json"  # per-epoch train loss and dev metrics
    METRICS = "metrics.json"  # final metrics, test included; with MODEL, it means "trained"
    FAILURE = "failure.json"  # why the last attempt failed
    TRACKING = "tracking.json"  # the cell's MLflow run id
    TRAINED = (MODEL, CONFIG, DATA, HISTORY, METRICS)  # what a finished trial leaves


class TrackingFiles:
    """File names inside a grid's `tracking/` folder (`tracking.journal`)."""

    JOURNAL = "journal.jsonl"  # every record MLflow is to be told, in the order it happened
    SENT = "sent.json"  # for each tracking store, how many of the journal's records it has taken


class CacheFiles:
    """Names inside the data cache (`Results.cache`): a folder per prepared dataset and key, the vectors of each
    vocabulary, and the datasets' row counts."""

    META = "meta.json"  # a prepared entry's vocabularies and labels; written last, so it means "complete"
    ROW_COUNTS = "rows.json"  # the datasets' row counts, keyed by their files' checksums (`data.inventory`)
    VECTORS = "vectors"  # a vocabulary's rows of a vector source, one file per key (`data.vectors`)

    @staticmethod
    def prepared(dataset_id: str, key: str) -> str:
        """A prepared dataset's entry (`data.prepare`): its splits' tables and META."""
        return f"{dataset_id}/{key}"

    @staticmethod
    def split(name: str) -> str:
        """A prepared entry's table of one split."""
        return f"{name}.parquet"

    @staticmethod
    def vectors(key: str) -> str:
        """The vectors of one vocabulary and source (pretrained or trained word2vec), keyed by content."""
        return f"{CacheFiles.VECTORS}/{key}.npz"


@dataclass(frozen=True)
class Results:
    """`results_dir`: the grids' folders and what they share."""

    path: Path

    def grid(self, name: str) -> GridWorkspace:
        return GridWorkspace(self.path / name)

    @property
    def cache(self) -> Path:
        return self.path / CACHE

    @property
    def tracking_db(self) -> Path:
        return self.path / TRACKING_DB

    @property
    def artifacts(self) -> Path:
        return self.path / ARTIFACTS


@dataclass(frozen=True)
class GridWorkspace:
    """`results_dir/<grid>`: everything one grid produces."""

    path: Path

    @property
    def models(self) -> Path:
        return self.path / "models"

    @property
    def analyses(self) -> Path:
        return self.path / "analyses"

    @property
    def tracking(self) -> Path:
        return self.path / "tracking"

    @property
    def shard_log(self) -> Path:
        return self.analyses / "shards.jsonl"

    @property
    def shard_order(self) -> Path:
        return self.analyses / "shard-order.json"

    def analysis(self, analysis_id: str) -> Path:
        """Every part of one analysis: `pandas.read_parquet` of this folder reads all its cells."""
        return self.analyses / analysis_id

    def cell_parts(self, analysis_id: str, cell_id: str) -> Path:
        return self.analysis(analysis_id) / f"{CELL_PARTITION}{cell_id}"

    def part(self, analysis_id: str, cell_id: str, shard: int) -> Path:
        return self.cell_parts(analysis_id, cell_id) / f"part-{shard:05d}.parquet"

    def parts_of(self, analysis_id: str, cell_ids: set[str] | None = None) -> list[Path]:
        """The written parts of one analysis (of `cell_ids` only, when given), sorted."""
        return sorted(
            path
            for path in self.analysis(analysis_id).glob(f"{CELL_PARTITION}*/{PART}")
            if cell_ids is None or cell_of(path.parent) in cell_ids
        )

    def has_parts(self) -> bool:
        """Whether any analysis has written a part here."""
        return any(self.analyses.glob(f"*/{CELL_PARTITION}*/{PART}"))

    def cell_partitions(self, cell_id: str) -> list[Path]:
        """A cell's partition folders across every analysis."""
        return list(self.analyses.glob(f"*/{CELL_PARTITION}{cell_id}"))

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY

    @property
    def tune(self) -> Path:
        return self.path / "tune"

    def tune_experiments(self) -> list[Path]:
        """One Ray Tune experiment folder per launch, oldest first."""
        return sorted(self.tune.glob(f"{TUNE_EXPERIMENT}*")) if self.tune.is_dir() else []

    def next_tune_experiment(self) -> Path:
        return self.tune / f"{TUNE_EXPERIMENT}{len(self.tune_experiments()) + 1:03d}"

    def tune_results(self) -> list[Path]:
        """Ray Tune's per-trial result logs of every launch (one JSON line per report)."""
        return sorted(self.tune.glob(f"{TUNE_EXPERIMENT}*/*/result.json"))

    @property
    def launch_log(self) -> Path:
        return self.path / "launches.jsonl"

    @property
    def lock(self) -> Path:
        """Held by the one launch or analyze that writes this grid (`gridlab.store.lock`)."""
        return self.path / LOCK

    @property
    def annotation(self) -> Path:
        return self.path / "annotation"

    @property
    def report(self) -> Path:
        return self.path / "report"


CELL_PARTITION = "cell="  # hive-style partition folders, so readers get a `cell` column
PART = "part-*.parquet"  # a part's name inside its partition (`GridWorkspace.part`)
TUNE_EXPERIMENT = "launch-"  # tune/launch-NNN
LAUNCH_MARKER = "gridlab-launch.json"  # in a Tune experiment: its cells, its MLflow parent run, finished or not
# in a Tune experiment's storage: the HMAC of each state file Tune reads back on restore; not named *.json or
# *.pkl, so Tune's restore never copies it into its staging folder (and never uploads a stale copy back)
TUNE_SEAL = "gridlab-seal.hmac"
TUNE_CHECKPOINT = "checkpoint_"  # Tune's checkpoint folders in a trial's folder (checkpoint_NNNNNN)
SUMMARY = "summary.parquet"  # one row per cell and analysis
CACHE = "cache"
TRACKING_DB = "mlflow.db"
ARTIFACTS = "mlartifacts"
LOCK = "launch.lock"  # the grid's lock on this machine (`store.lock`)
LEASE = "launch.lease"  # the grid's lease in the bucket, for results in object storage (`store.lease`)


def cell_of(partition: PurePath) -> str:
    """The cell id of a `cell=<id>` partition folder."""
    return partition.name[len(CELL_PARTITION) :]


def is_part(path: PurePath) -> bool:
    """Whether a file below an analysis folder is one of its parts (`cell=<id>/part-NNNNN.parquet`), on disk or
    as an object key: a writer's hidden temporary beside it is not."""
    return path.parent.name.startswith(CELL_PARTITION) and fnmatchcase(path.name, PART)


def shard_of(part: Path) -> int:
    """The shard index of a `part-NNNNN.parquet` file (`GridWorkspace.part`)."""
    return int(part.stem.removeprefix(PART.split("*")[0]))
