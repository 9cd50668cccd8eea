"""pyproject.toml declares exactly what gridlab imports: every third-party module that gridlab/ imports (at any
depth, a function-level import included) comes from a declared distribution, and every declared distribution,
in the base dependencies and in each extra, provides a module that gridlab imports. Packages that gridlab finds
by name without importing them (the packaged word vectors and pretrained models: `importlib.util.find_spec`)
count as imported. Distribution names map to import names through the installed environment
(`importlib.metadata.packages_distributions`). The `test` extra is the test suite's and its tools' (pytest, ruff,
mypy), not gridlab's, and is left out."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "gridlab"
NOT_GRIDLABS = {"test"}  # extras that serve the tests, not the package


def imported_modules() -> dict[str, list[str]]:
    """Top-level third-party module -> the gridlab files that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "gridlab" and top not in sys.stdlib_module_names:
                    found.setdefault(top, []).append(str(path.relative_to(REPO)))
    return found


def located_modules() -> set[str]:
    """The packages gridlab locates by name (`find_spec`), from the catalogs that name them."""
    from gridlab.data.pretrained import PRETRAINED_MODELS
    from gridlab.data.vectors import VECTOR_SETS

    packaged = {v.packaged.module for v in VECTOR_SETS.values() if v.packaged is not None}
    return packaged | {m.module for m in PRETRAINED_MODELS.values()}


def declared() -> dict[str, set[str]]:
    """'base' and each extra (but `NOT_GRIDLABS`) -> its canonical distribution names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"base": project["dependencies"], **project.get("optional-dependencies", {})}
    return {
        group: {canonicalize_name(Requirement(r).name) for r in requirements}
        for group, requirements in groups.items()
        if group not in NOT_GRIDLABS
    }


def providers() -> dict[str, set[str]]:
    """Import name -> the canonical names of the installed distributions that provide it."""
    return {module: {canonicalize_name(d) for d in dists} for module, dists in packages_distributions().items()}


def undeclared(modules: set[str], groups: dict[str, set[str]], by_module: dict[str, set[str]]) -> list[str]:
    """The modules no declared distribution provides."""
    every = set().union(*groups.values())
    return sorted(m for m in modules if not by_module.get(m, set()) & every)


def unused(modules: set[str], groups: dict[str, set[str]], by_module: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per group, the declared distributions that provide none of the modules."""
    used = {dist for module in modules for dist in by_module.get(module, ())}
    return {group: sorted(names - used) for group, names in groups.items() if names - used}


def test_every_imported_module_comes_from_a_declared_distribution():
    imported = imported_modules()
    missing = undeclared({*imported, *located_modules()}, declared(), providers())
    assert {m: imported.get(m, ["(located by name)"])[:3] for m in missing} == {}, "declare them in pyproject.toml"


def test_every_declared_distribution_is_imported():
    found = unused({*imported_modules(), *located_modules()}, declared(), providers())
    assert found == {}, "nothing in gridlab/ imports them: remove them from pyproject.toml"


def test_the_comparison_names_an_undeclared_import_and_an_unused_declaration():
    """A module with several distributions (mlflow's) counts as declared through any of them."""
    by_module = {"yaml": {"pyyaml"}, "sklearn": {"scikit-learn"}, "mlflow": {"mlflow", "mlflow-skinny"}}
    groups = {"base": {"pyyaml", "mlflow", "networkx"}, "s3": {"boto3"}}
    assert undeclared({"yaml", "sklearn", "mlflow"}, groups, by_module) == ["sklearn"]
    assert unused({"yaml", "sklearn", "mlflow"}, groups, by_module) == {"base": ["networkx"], "s3": ["boto3"]}
