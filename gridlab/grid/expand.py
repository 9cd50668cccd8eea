"""A validated `GridFile` -> the cells it names, each with a stable id, or every problem at once.

    >>> grid = expand(load_grid_file(path), file=str(path))
    >>> grid.cells[0].id, grid.cells[0].config.encoder
    ('3f9c2a17b0de', 'lstm')

A cell id is the first 12 hex digits of the sha256 of the cell's fully resolved config as canonical JSON
(sorted keys, defaults filled in), so it is the same on any machine and Python, whatever the key order
in the file, and two spellings of the same model (say `lr: 0.001` and `lr: 1.0e-3`) share it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gridlab.catalog.analyses import ANALYSES, Params
from gridlab.catalog.compatibility import analysis_incompatibilities, incompatibilities
from gridlab.config.schema import CellConfig, GridFile, ModelConfig, Resources
from gridlab.config.user import read_settings, settings_path
from gridlab.data.catalog import DATASETS
from gridlab.data.config import DataConfig
from gridlab.data.embedded import EMBEDDED_DATA
from gridlab.data.presence import check_presence
from gridlab.data.vectors import is_named, vector_source
from gridlab.errors import DataError, GridFileError
from gridlab.grid.paths import field_at, get_path, leaf_paths, set_path, validate_value
from gridlab.grid.problems import Problem, from_validation_error, location
from gridlab.grid.suggest import unknown
from gridlab.store.atomic import unwritable
from gridlab.store.layout import GridWorkspace, Results
from gridlab.store.store import Store

ID_LENGTH = 12
CELL_SCHEMA_VERSION = 1
# Fields added to the cell schema after ids were first handed out, with the value that means "as before":
# at that value a field is left out of the id payload, so adding a setting never renames the cells (and
# orphans the results) of grids that do not use it.
ID_NEUTRAL_FIELDS: dict[tuple[str, str], Any] = {
    ("data", "test_fraction"): None,
    ("data", "drop_titles"): False,
    ("data", "babi_labels"): "answers",
    ("data", "inword_punctuation"): "keep",
    ("data", "carve_unit"): "instance",
    ("data", "vocabulary"): "train",
    ("train", "attention_lr_scale"): 1.0,
    ("train", "attention_weight_decay"): False,
    ("model", "query_embedding"): "shared",
    ("model", "average_activation"): "relu",
    ("model", "pair_output"): "context_and_query",
    ("model", "word_attention_mode"): "learned",
    ("model", "pretrained"): None,
    ("model", "max_pieces"): 128,
    ("train", "optimizer"): "adam",
    ("train", "warmup"): None,
    # max_train took the first rows before it took a sample: a `head` cell is what such an id trained
    ("train", "subset"): "head",
}


@dataclass(frozen=True)
class Cell:
    id: str
    config: CellConfig
    axes: dict[str, Any]  # the grid-axis values that picked this cell, by axis path


@dataclass(frozen=True)
class ExpandedGrid:
    file: str
    spec: GridFile
    cells: list[Cell]
    analyses: dict[str, Params]
    axis_paths: list[str]
    collapsed: int = 0  # combinations that resolved to a cell already in the list
    warnings: list[str] = field(default_factory=list)
    resource_overrides: dict[str, Resources] = field(default_factory=dict)  # cell id -> its `resources.overrides`

    def train_resources(self, cell_id: str) -> Resources:
        """What this cell's trial asks Ray for: its matching `resources.overrides` entry, else `resources.train`."""
        return self.resource_overrides.get(cell_id, self.spec.resources.train)

    @property
    def data_dir(self) -> Path:
        return resolve_data_dir(self.spec.data_dir)

    @property
    def results_dir(self) -> Path:
        return self.workspace.path

    @property
    def store(self) -> Store:
        """`results_dir`, on this machine or in object storage: the one object that knows which."""
        return Store.of(self.spec.results_dir)

    @property
    def results(self) -> Results:
        """`results_dir` (its local copy, for an object store): what every grid written there shares (dataset
        cache, default tracking store)."""
        return self.store.results

    @property
    def tracking_uri(self) -> str:
        """Where the grid's launches track its runs: its `tracking_uri`, else the sqlite store of its results
        folder (the local mirror's, for an object store: that file stays on the machine that launched)."""
        return self.spec.tracking_uri or f"sqlite:///{self.results.tracking_db.resolve()}"

    @property
    def workspace(self) -> GridWorkspace:
        """`results_dir/<grid>`: this grid's models, parts, summary and launch records."""
        return self.results.grid(self.spec.name)


def resolve_data_dir(configured: Path | None, shipped: bool = True) -> Path:
    """The grid's `data_dir`, else $GRIDLAB_DATA, else the user's `gridlab config set data_dir`, else ./data,
    else (`shipped`, for reading only) the data shipped with gridlab: SST's binary split, what
    grids/quick.yaml needs besides the generated task."""
    return data_dir_source(configured, shipped)[0]


def data_dir_source(configured: Path | None, shipped: bool = True) -> tuple[Path, str]:
    """`resolve_data_dir` and where that folder came from, in words a person can act on."""
    if configured is not None:
        return configured, "given"
    if os.environ.get("GRIDLAB_DATA"):
        return Path(os.environ["GRIDLAB_DATA"]), "$GRIDLAB_DATA"
    if "data_dir" in (settings := read_settings()):
        return Path(settings["data_dir"]), f"data_dir in {settings_path()}"
    local = Path("data")
    if local.is_dir() or not shipped:
        return local, "./data"
    return EMBEDDED_DATA, "the SST files shipped with gridlab: no $GRIDLAB_DATA, no data_dir setting, no ./data"


def cell_id(config: CellConfig) -> str:
    cell = config.model_dump(mode="json")
    for (section, name), neutral in ID_NEUTRAL_FIELDS.items():
        if cell[section].get(name, neutral) == neutral:
            cell[section].pop(name, None)
    if cell["train"].get("max_train") is None:  # no subset without max_train: full-data cells keep their ids
        cell["train"].pop("subset", None)
    payload = {"schema": CELL_SCHEMA_VERSION, "cell": cell}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:ID_LENGTH]


def expand(spec: GridFile, file: str, check_data: bool = True) -> ExpandedGrid:
    """Every cell of the grid, or a GridFileError listing every problem found."""
    problems: list[Problem] = []
    blocks = spec.grid if isinstance(spec.grid, list) else [spec.grid]
    prefixes = [("grid", i) for i in range(len(blocks))] if isinstance(spec.grid, list) else [("grid",)]
    block_axes = [_validate_axes(block, problems, prefix) for block, prefix in zip(blocks, prefixes)]
    excludes = [_validate_conditions(entry, ("exclude", i), problems) for i, entry in enumerate(spec.exclude)]
    overrides = [
        (
            _validate_conditions(o.when, ("overrides", i, "when"), problems),
            _validate_settings(o.set, ("overrides", i, "set"), problems),
        )
        for i, o in enumerate(spec.overrides)
    ]
    resource_conditions = [
        _validate_conditions(o.when, ("resources", "overrides", i, "when"), problems)
        for i, o in enumerate(spec.resources.overrides)
    ]
    analyses = _validate_analyses(spec.analyses, problems)
    if problems:
        raise GridFileError(file, problems)

    warnings: list[str] = []
    base = {"model": spec.model.model_dump(), "train": spec.train.model_dump(), "data": spec.data.model_dump()}
    combos = [dict(zip(axes, values)) for axes in block_axes for values in itertools.product(*axes.values())]
    axis_paths = list(dict.fromkeys(path for axes in block_axes for path in axes))
    kept = [c for c in combos if not any(_matches(c, entry) for entry in excludes)]
    for i, entry in enumerate(excludes):
        if not any(_matches(c, entry) for c in combos):
            warnings.append(f"exclude[{i}] matches no cell")
    cells: list[Cell] = []
    seen: set[str] = set()
    used_overrides: set[int] = set()
    for combo in kept:
        config = _resolve_cell(base, combo, overrides, used_overrides, problems)
        if config is None:
            continue
        cell = Cell(cell_id(config), config, combo)
        if cell.id not in seen:
            seen.add(cell.id)
            cells.append(cell)
    warnings += [f"overrides[{i}] matches no cell" for i in range(len(overrides)) if i not in used_overrides]
    resource_overrides = _resource_overrides(cells, resource_conditions, spec, warnings)
    if problems:
        raise GridFileError(file, _dedupe(problems))
    if not cells:
        raise GridFileError(file, [("exclude" if spec.exclude else "grid", "no cells left (expected at least one)")])
    _check_compatibility(cells, analyses, problems)
    unusable = unwritable(Store.of(spec.results_dir).local)
    if unusable:
        problems.append(("results_dir", unusable))
    store = spec.tracking_uri.removeprefix("sqlite:///") if spec.tracking_uri else None
    if store and store != spec.tracking_uri and (unusable := unwritable(Path(store).parent)):
        problems.append(("tracking_uri", f"the MLflow store's folder: {unusable}"))
    if check_data:
        _check_datasets(cells, resolve_data_dir(spec.data_dir), dict(zip(prefixes, block_axes)), problems)
        _check_vectors(cells, resolve_data_dir(spec.data_dir), problems)
    if problems:
        raise GridFileError(file, _dedupe(problems))
    return ExpandedGrid(file, spec, cells, analyses, axis_paths, len(kept) - len(cells), warnings, resource_overrides)


def raw_problems(document: dict[str, Any]) -> list[Problem]:
    """The problems of a raw grid file's axes and analyses, for a file that failed its schema elsewhere: the
    reader then gets every problem in one go rather than one stage per try. Sections not shaped as the schema
    wants are left to the schema's own messages."""
    problems: list[Problem] = []
    grid = document.get("grid")
    if isinstance(grid, dict) and grid:
        _validate_axes(grid, problems, ("grid",))
    elif isinstance(grid, list):
        for i, block in enumerate(grid):
            if isinstance(block, dict) and block:
                _validate_axes(block, problems, ("grid", i))
    analyses = document.get("analyses")
    if isinstance(analyses, dict) and all(isinstance(p, dict) or p is None for p in analyses.values()):
        _validate_analyses(analyses, problems)
    return problems


def _known_path(path: str, prefix: tuple, problems: list[Problem]) -> bool:
    """Whether `path` names a setting; where not, a problem at `prefix` with the did-you-mean."""
    try:
        field_at(path)
    except ValueError as error:
        problems.append((location(prefix), str(error)))
        return False
    return True


def _validate_axes(grid: dict[str, Any], problems: list[Problem], prefix: tuple) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    if not isinstance(grid, dict) or not grid:
        problems.append((location(prefix), "expected a non-empty mapping of axes to value lists"))
        return axes
    for path, raw in grid.items():
        where = location((*prefix, path))
        if not _known_path(path, prefix, problems):
            continue
        values = raw if isinstance(raw, list) else [raw]
        if not values:
            problems.append((where, "empty axis (expected a list of at least one value)"))
            continue
        checked = []
        for i, value in enumerate(values):
            try:
                checked.append(validate_value(path, value))
            except ValidationError as error:
                problems += from_validation_error(
                    error, None, (*prefix, path, i) if isinstance(raw, list) else (*prefix, path)
                )
        if len(checked) != len(values):
            continue
        duplicates = sorted(
            {_canonical(v) for v in checked if sum(_canonical(w) == _canonical(v) for w in checked) > 1}
        )
        if duplicates:
            problems.append((where, f"duplicate values {', '.join(duplicates)} (expected each value once)"))
            continue
        axes[path] = checked
    if "dataset" not in grid:
        problems.append((location((*prefix, "dataset")), "missing (required: the datasets to train on)"))
    return axes


def _validate_conditions(entry: dict[str, Any], prefix: tuple, problems: list[Problem]) -> dict[str, list[Any]]:
    """An exclude entry or an override's `when`: path -> accepted values (a list means any of them)."""
    conditions: dict[str, list[Any]] = {}
    if not isinstance(entry, dict) or not entry:
        problems.append((location(prefix), "expected a non-empty mapping of keys to values"))
        return conditions
    for path, raw in entry.items():
        if not _known_path(path, prefix, problems):
            continue
        values = raw if isinstance(raw, list) else [raw]
        try:
            conditions[path] = [validate_value(path, v) for v in values]
        except ValidationError as error:
            problems += from_validation_error(error, None, (*prefix, path))
    return conditions


def _validate_settings(settings: dict[str, Any], prefix: tuple, problems: list[Problem]) -> dict[str, Any]:
    checked: dict[str, Any] = {}
    if not settings:
        problems.append((location(prefix), "expected a non-empty mapping of keys to values"))
    for path, value in settings.items():
        if not _known_path(path, prefix, problems):
            continue
        try:
            checked[path] = validate_value(path, value)
        except ValidationError as error:
            problems += from_validation_error(error, None, (*prefix, path))
    return checked


def _validate_analyses(requested: dict[str, dict | None], problems: list[Problem]) -> dict[str, Params]:
    analyses: dict[str, Params] = {}
    for analysis_id, params in requested.items():
        if analysis_id not in ANALYSES:
            problems.append(("analyses", unknown("analysis", analysis_id, list(ANALYSES))))
            continue
        model = ANALYSES[analysis_id].params
        try:
            analyses[analysis_id] = model.model_validate(params or {})
        except ValidationError as error:
            problems += from_validation_error(error, model, ("analyses", analysis_id))
    return analyses


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _matches(config: dict[str, Any], conditions: dict[str, list[Any]]) -> bool:
    """`config` is a nested config, or a combination of axis values keyed by dotted path (`model.embeddings`)."""
    return all(
        (config[path] if path in config else get_path(config, path)) in values for path, values in conditions.items()
    )


def _resource_overrides(
    cells: list[Cell], conditions: list[dict[str, list[Any]]], spec: GridFile, warnings: list[str]
) -> dict[str, Resources]:
    """Cell id -> the training resources of the last `resources.overrides` entry matching it."""
    chosen: dict[str, Resources] = {}
    for i, (when, entry) in enumerate(zip(conditions, spec.resources.overrides)):
        matching = [c.id for c in cells if _matches(c.config.model_dump(), when)]
        chosen.update(dict.fromkeys(matching, entry.train))
        if not matching:
            warnings.append(f"resources.overrides[{i}] matches no cell")
    return chosen


def _resolve_cell(base, combo, overrides, used_overrides: set[int], problems: list[Problem]) -> CellConfig | None:
    raw = copy.deepcopy(base)
    for path, value in combo.items():
        set_path(raw, path, value)
    for i, (when, settings) in enumerate(overrides):
        if _matches(raw, when):
            used_overrides.add(i)
            for path, value in settings.items():
                set_path(raw, path, value)
    try:
        config = CellConfig.model_validate(raw)
    except ValidationError as error:
        problems += [
            (f"cell {_describe(combo)}: {where}", what) for where, what in from_validation_error(error, CellConfig)
        ]
        return None
    return _normalise(config)


def _normalise(config: CellConfig) -> CellConfig:
    """Fill dataset-specific defaults and blank what does not apply, so equal models get equal ids."""
    spec = DATASETS[config.dataset]
    lam = (config.projection_lambda or 0.0) if config.projection == "sparsegen" else None
    model, train = config.model, config.train
    pretrained = model.embeddings is not None
    model = model.model_copy(
        update={
            "oov_init": (model.oov_init or "normal") if pretrained else None,
            "word2vec_extra": tuple(sorted(set(model.word2vec_extra))) if model.embeddings == "word2vec" else (),
        }
    )
    model = _blank_pretrained(config.encoder, model)
    selection = None if spec.task == "translation" else (train.selection_metric or "accuracy")
    return config.model_copy(
        update={
            "projection_lambda": lam,
            "data": spec.resolve(_vocabulary_default(config)),
            "model": model,
            "train": train.model_copy(update={"selection_metric": selection}),
        }
    )


def _vocabulary_default(config: CellConfig) -> DataConfig:
    """The pretrained encoder reads every split's words by their word pieces, so none is <unk>; a model that
    learns one embedding per word knows train's words only."""
    default = "all" if config.encoder == "pretrained" else "train"
    return config.data.model_copy(update={"vocabulary": config.data.vocabulary or default})


# The sizes a pretrained encoder takes from its own config: they are blanked to their defaults in its cells
PRETRAINED_FIXED = ("embedding_dim", "hidden_size", "attention_size", "transformer_layers", "transformer_heads")


def _blank_pretrained(encoder: str, model: ModelConfig) -> ModelConfig:
    """A pretrained encoder's cell keeps `model.pretrained` and `max_pieces` and blanks the sizes its model
    fixes; every other cell blanks the two, so a grid that names the model once gives its lstm cells the
    ids they had."""
    defaults = ModelConfig()
    if encoder == "pretrained":
        return model.model_copy(update={name: getattr(defaults, name) for name in PRETRAINED_FIXED})
    return model.model_copy(update={"pretrained": None, "max_pieces": defaults.max_pieces})


def _describe(combo: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in combo.items()) + "}"


def _check_compatibility(cells: list[Cell], analyses: dict[str, Params], problems: list[Problem]) -> None:
    for cell in cells:  # repeated reasons are deduplicated by the caller
        problems += incompatibilities(cell.config) + analysis_incompatibilities(cell.config, analyses)


def _check_datasets(
    cells: list[Cell], data_dir: Path, blocks: dict[tuple, dict[str, list]], problems: list[Problem]
) -> None:
    """Every dataset must be present (or partial with derive_splits) before anything is created."""
    checked = set()
    for cell in cells:
        data = cell.config.data
        key = (cell.config.dataset, data.derive_splits, data.babi_size)
        if key in checked:
            continue
        checked.add(key)
        try:
            check_presence(DATASETS[cell.config.dataset], data_dir, data)
        except DataError as error:
            problems.append((_dataset_location(cell.config.dataset, blocks), str(error)))


def _check_vectors(cells: list[Cell], data_dir: Path, problems: list[Problem]) -> None:
    """Every named vector set a cell starts from must be installed (a package or a file under data_dir)."""
    named = {e for c in cells if (e := c.config.model.embeddings) is not None and is_named(e)}
    for name in sorted(named):
        try:
            vector_source(name, data_dir)
        except DataError as error:
            problems.append(("model.embeddings", str(error)))


def _dataset_location(dataset: str, blocks: dict[tuple, dict[str, list]]) -> str:
    for prefix, axes in blocks.items():
        if dataset in axes.get("dataset", []):
            return location((*prefix, "dataset", axes["dataset"].index(dataset)))
    return "grid.dataset"


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


def restrict(grid: ExpandedGrid, where: list[str]) -> ExpandedGrid:
    """The grid's cells whose config matches every `path=value[,value…]` (e.g. `dataset=sst`, `seed=0,1`); a
    path given twice adds its values (`dataset=sst` and `dataset=imdb` as `dataset=sst,imdb`).

    Ids stay those of the full grid, so a restricted launch trains exactly the cells the full one would, and
    a later full launch skips them."""
    if not where:
        return grid
    conditions: dict[str, set[str]] = {}
    for condition in where:
        path, sep, values = condition.partition("=")
        path = path.strip()
        if not sep or not path or not values.strip():
            raise GridFileError(
                grid.file, [("--where", f"'{condition}': expected PATH=VALUE[,VALUE...] (e.g. dataset=sst)")]
            )
        if path not in leaf_paths():
            raise GridFileError(grid.file, [("--where", f"'{condition}': " + unknown("key", path, leaf_paths()))])
        conditions.setdefault(path, set()).update(v.strip() for v in values.split(","))
    cells = [
        c
        for c in grid.cells
        if all(_as_text(get_path(c.config.model_dump(mode="json"), p)) in values for p, values in conditions.items())
    ]
    if not cells:
        seen = {
            p: sorted({_as_text(get_path(c.config.model_dump(mode="json"), p)) for c in grid.cells}) for p in conditions
        }
        raise GridFileError(
            grid.file,
            [
                (
                    "--where",
                    f"no cell matches {' '.join(where)} (values in the grid: "
                    + "; ".join(f"{p}: {', '.join(v)}" for p, v in seen.items())
                    + ")",
                )
            ],
        )
    return dataclasses.replace(grid, cells=cells)


def _as_text(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
