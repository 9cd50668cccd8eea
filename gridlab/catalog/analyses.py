"""What an analysis declaration is made of, and where the declarations are found. Each analysis is a folder
`gridlab/analyses/<id>/` whose `__init__.py` declares it (`INFO`: an `AnalysisInfo`, with its parameter class)
without torch, and whose `compute.py` computes it. `ANALYSES` finds the declarations by scanning that package
on first use, so grid validation, planning and reports read them without importing torch, and no list names
them; a plug-in package of the same shape is added with `add_package` (docs/analyses.md#adding-one).

    >>> ANALYSES["permutation"].params(n=50).n
    50
    >>> ANALYSES["permutation"].rows.names
    ['tvd_median', 'tvd_mean', 'tvd_max']
    >>> ANALYSES["layer_permutation"].summarised("accuracy_2_layers")
    True
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal, get_args

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gridlab.config.schema import CellConfig
from gridlab.data.catalog import DATASETS

Ranking = Literal[
    "attention",
    "random",
    "gradient",
    "grad_x_attention",
    "leave_one_out",
    "norm_attention",
    "integrated_gradients",
    "attention_rollout",
    "attention_flow",
    "norm_rollout",
]
Scope = Literal["instance", "model", "grid"]
BUILT_IN_PACKAGE = "gridlab.analyses"
COMPUTE = "compute"  # the module of an analysis folder that computes it (torch); `__init__` declares it


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def unique(values: list) -> list:
    """A list parameter's validator: the same value twice would compute (and write) the same rows twice."""
    if len(set(values)) != len(values):
        raise ValueError(f"values must not repeat (got {values})")
    return values


class NoParams(Params):
    pass


RANKINGS: tuple[Ranking, ...] = get_args(Ranking)  # every ranking, in the order of the analyses' columns
# Rankings read off a Transformer encoder's self-attention layers: they do not apply to other cells, whose
# analyses skip them (`gridlab plan` says so) instead of failing.
TRANSFORMER_RANKINGS: frozenset[Ranking] = frozenset({"attention_rollout", "attention_flow", "norm_rollout"})
ERASURE_RANKINGS: tuple[Ranking, ...] = ("attention", "random", "gradient", "grad_x_attention")  # S&S's four


SELF_ATTENTION_ENCODERS = ("transformer", "pretrained")
RANKING_NEEDS = {name: "encoder transformer or pretrained" for name in TRANSFORMER_RANKINGS}  # for `gridlab plan`


def ranking_applies(ranking: str, cell: CellConfig) -> bool:
    """Whether a ranking can be computed for a cell."""
    return ranking not in TRANSFORMER_RANKINGS or cell.encoder in SELF_ATTENTION_ENCODERS


class RankedParams(Params):
    """Parameters of an analysis that compares rankings of the attention items (docs/analyses.md#rankings)."""

    rankings: list[Ranking] = Field(min_length=1)
    ig_steps: int = Field(50, ge=1, description="integration steps of integrated_gradients")

    _rankings_unique = field_validator("rankings")(unique)


# Every ranking but attention flow, whose max-flows grow with T^3 per instance: asked for by name on short texts.
FAITHFULNESS_RANKINGS: tuple[Ranking, ...] = tuple(r for r in RANKINGS if r != "attention_flow")


Applies = Callable[[CellConfig], bool]  # whether an analysis applies to a cell (its resolved config)
# A grid-scope analysis's peers: every cell's resolved config (cell id -> JSON) -> each cell's peer cells
PeerRule = Callable[[Mapping[str, dict]], dict[str, list[str]]]


def classifier_cells(cell: CellConfig) -> bool:
    """`applies` of the analyses that read a classifier's output (every task but translation)."""
    return DATASETS[cell.dataset].task != "translation"


def learned_attention_cells(cell: CellConfig) -> bool:
    """`applies` of the analyses that test a model's own attention (W&P's tests, J&W's adversary): a classifier
    trained with learned attention, not one whose weights were fixed to uniform or random."""
    return classifier_cells(cell) and cell.attention_mode == "learned"


def every_cell(cell: CellConfig) -> bool:
    return True


@dataclass(frozen=True)
class AnalysisInfo:
    """An analysis as validation, planning, the runner and reports see it, torch-free."""

    id: str  # also its folder's name
    summary: str  # what its rows hold, in a line (`gridlab plan`, docs)
    params: type[Params]
    scope: Scope
    applies: Applies = every_cell
    needs: str = ""  # the condition `applies` checks, in words, for `gridlab plan`
    # its rows are per instance and worth a heatmap beside them: the report's heatmaps show cells that have them
    heatmaps: bool = False
    # grid scope only: whom a cell is compared with. The planner waits for a cell's peers to train, and a
    # retrained cell's peers lose their rows of this analysis (they compared against the old model)
    peers: PeerRule | None = None
    # its own columns, one value per row (the runner adds the common ones, results/parts.py)
    rows: pa.Schema = field(kw_only=True)
    # the names its per-model summary may have (`<id>.<name>` in summary.parquet and MLflow), each measured or
    # absent; a `{field}` in a name stands for a whole number read from the parameters or the rows (a class,
    # a k, a layer count)
    summary_columns: tuple[str, ...] = field(kw_only=True)

    def __post_init__(self) -> None:
        if (self.scope == "grid") != (self.peers is not None):
            raise ValueError(f"analysis {self.id}: a grid-scope analysis, and only one, says who its peers are")
        if not isinstance(self.rows, pa.Schema):
            raise ValueError(f"analysis {self.id}: rows must be a pyarrow schema, not {type(self.rows).__name__}")
        if not self.summary_columns or isinstance(self.summary_columns, str):
            raise ValueError(f"analysis {self.id}: summary_columns must be a non-empty tuple of names")

    def summarised(self, name: str) -> bool:
        """Whether `name` is one of the summary's declared columns."""
        return self.summary_column(name) is not None

    def summary_column(self, name: str) -> str | None:
        """The declared column that `name` is (itself, or the template whose `{field}`s it fills with whole
        numbers: `accuracy_2_layers` is `accuracy_{layers}_layers`); None for a name not declared."""
        return next((column for column, pattern in self._summary_patterns if pattern.fullmatch(name)), None)

    @cached_property
    def _summary_patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(c, re.compile(re.sub(r"\\\{\w+\\\}", r"\\d+", re.escape(c)))) for c in self.summary_columns]


class Declarations(Mapping[str, AnalysisInfo]):
    """Analysis id -> its declaration, found in the folders of the packages added (gridlab's own first), in
    folder-name order. Scanned on first use: a declaration imports this module, so the scan cannot run while
    it loads."""

    def __init__(self, *packages: str) -> None:
        self._packages = list(packages)
        self._found: dict[str, AnalysisInfo] | None = None
        self._package_of: dict[str, str] = {}

    def add_package(self, package: str) -> list[str]:
        """Declares every analysis folder of `package` (a plug-in: the same shape as gridlab's own); the ids
        found. Adding a package again is a no-op; an id already taken by another analysis is an error."""
        if package not in self._packages:
            self._packages.append(package)
        if self._found is None:
            self._scan()
            return [a for a, p in self._package_of.items() if p.rsplit(".", 1)[0] == package]
        return self._add(package)

    def package(self, analysis_id: str) -> str:
        """The module path of an analysis's folder (`gridlab.analyses.permutation`)."""
        self._declared()
        return self._package_of[analysis_id]

    def forget(self, package: str) -> None:
        """Undoes `add_package` (tests that add a toy package and leave the catalog as they found it)."""
        self._packages.remove(package)
        for analysis_id in [a for a, p in self._package_of.items() if p.rsplit(".", 1)[0] == package]:
            del self._declared()[analysis_id], self._package_of[analysis_id]

    def __getitem__(self, analysis_id: str) -> AnalysisInfo:
        return self._declared()[analysis_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared())

    def __len__(self) -> int:
        return len(self._declared())

    def _declared(self) -> dict[str, AnalysisInfo]:
        if self._found is None:
            self._scan()
        assert self._found is not None
        return self._found

    def _scan(self) -> None:
        self._found = {}
        for package in self._packages:
            self._add(package)

    def _add(self, package: str) -> list[str]:
        assert self._found is not None
        added = []
        for folder in analysis_folders(package):
            info = declaration(folder)
            known = self._package_of.get(info.id)
            if known is not None and known != folder:
                raise ValueError(f"{folder}: analysis id '{info.id}' is already declared by {known}")
            self._found[info.id], self._package_of[info.id] = info, folder
            added.append(info.id)
        return added


def analysis_folders(package: str) -> list[str]:
    """The subpackages of `package` that are analyses (they hold a `compute` module), by name; shared code
    (gridlab's `importance/`, plain modules) is not one. Only the declarations are imported, never `compute`."""
    paths = importlib.import_module(package).__path__
    folders = []
    for found in sorted(pkgutil.iter_modules(paths), key=lambda m: m.name):
        location = Path(getattr(found.module_finder, "path", "")) / found.name
        if found.ispkg and any(m.name == COMPUTE for m in pkgutil.iter_modules([str(location)])):
            folders.append(f"{package}.{found.name}")
    return folders


def computation(folder: str) -> Callable[[str], object]:
    """An analysis folder's module `__getattr__`: a name its declaration does not define (`run`, `VERSION`) comes
    from its `compute` module, imported on first use. Importing the folder stays torch-free, and code written
    before the split (`gridlab.analyses.permutation.run`, as ../shared/perf-peers calls it) keeps working."""

    def forwarded(name: str) -> object:
        if name.startswith("__"):  # Python's own probes (__path__, __file__, ...) never load the computation
            raise AttributeError(f"module {folder!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{folder}.{COMPUTE}"), name)

    return forwarded


def declaration(folder: str) -> AnalysisInfo:
    """An analysis folder's `INFO`, checked: it is an `AnalysisInfo` named as its folder."""
    info = vars(importlib.import_module(folder)).get("INFO")  # not getattr: that would import `compute`
    if not isinstance(info, AnalysisInfo):
        raise ValueError(f"{folder}/__init__.py: expected INFO, the analysis's AnalysisInfo")
    if info.id != folder.rsplit(".", 1)[1]:
        raise ValueError(f"{folder}/__init__.py: INFO.id is '{info.id}', expected its folder's name")
    return info


ANALYSES = Declarations(BUILT_IN_PACKAGE)
