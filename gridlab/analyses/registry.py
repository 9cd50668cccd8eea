"""Every analysis gridlab runs: analysis id -> its class (`gridlab.analyses.base`), found from its declaration.
An analysis is a folder, `analyses/<id>/`: `__init__.py` declares it (torch-free, found by
`gridlab.catalog.analyses.ANALYSES` scanning this package) and `compute.py` holds its one class of a kind in
`base.py`, imported here when the analysis is first asked for. No list names them. A plug-in is a package of
such folders, added by name:

    >>> register("my_analyses")        # my_analyses/toy/__init__.py (INFO) and my_analyses/toy/compute.py
    ['toy']
    >>> IMPLEMENTATIONS["toy"].run(context, shared)
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from gridlab.analyses.base import Analysis

# ANALYSES and ErasureMultiParams: also read from here by ../shared/perf-peers/bench_peers.py (keep them importable)
from gridlab.analyses.erasure_multi import ErasureMultiParams
from gridlab.catalog.analyses import ANALYSES, BUILT_IN_PACKAGE, COMPUTE

__all__ = ["ANALYSES", "IMPLEMENTATIONS", "ErasureMultiParams", "is_plugin", "register"]


class Implementations(Mapping[str, type[Analysis]]):
    """Analysis id -> its class, for every declared analysis; a folder's `compute` is imported on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, type[Analysis]] = {}

    def __getitem__(self, analysis_id: str) -> type[Analysis]:
        if analysis_id not in self._loaded:
            self._loaded[analysis_id] = computation(ANALYSES.package(analysis_id), ANALYSES[analysis_id].id)
        return self._loaded[analysis_id]

    def __iter__(self) -> Iterator[str]:
        return iter(ANALYSES)

    def __len__(self) -> int:
        return len(ANALYSES)

    def forget(self, analysis_id: str) -> None:
        """Drops a loaded class (a test's toy, once its package is forgotten by the catalog)."""
        self._loaded.pop(analysis_id, None)


def computation(folder: str, analysis_id: str) -> type[Analysis]:
    """The one `Analysis` class that `<folder>.compute` defines for `analysis_id`."""
    module = importlib.import_module(f"{folder}.{COMPUTE}")
    found = [
        c
        for c in vars(module).values()
        if isinstance(c, type)
        and issubclass(c, Analysis)
        and c.__module__ == module.__name__
        and c.__dict__.get("info") is not None
        and c.info.id == analysis_id
    ]
    if len(found) != 1:
        raise TypeError(f"{module.__name__}: expected one Analysis class with info {analysis_id}, found {len(found)}")
    return found[0]


def register(package: str) -> list[str]:
    """Adds the analysis folders of a plug-in package to validation, planning, the runner and the summaries;
    the ids found."""
    return ANALYSES.add_package(package)


def is_plugin(analysis_id: str) -> bool:
    """Whether an analysis comes from outside gridlab (its modules travel to Ray's workers by value)."""
    return not ANALYSES.package(analysis_id).startswith(f"{BUILT_IN_PACKAGE}.")


IMPLEMENTATIONS = Implementations()
