"""The import rules of docs/architecture.md: every package of gridlab sits in one layer, and a module imports
only from its own layer or the layers below (a function-level import counts too). `grid/` knows nothing of
the analyses' code, the models' code or how a grid is run; what it validates against is declared in
`catalog/`, below it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gridlab"

# Lowest first. A package may import from its own layer and every layer before it.
LAYERS: list[set[str]] = [
    {"__init__", "errors", "runtime", "store", "text"},  # __init__: the version only
    {"data"},
    {"config"},
    {"catalog"},
    {"grid"},
    {"models"},
    {"training"},
    {"analyses"},
    {"results", "tracking"},
    {"execution"},
    {"report", "annotate", "api"},
    {"studies"},
    {"cli", "__main__"},
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}
# The root package's one import from above: `gridlab.open`, which imports the API when called (and names its
# type for checkers only), so `import gridlab` stays the version and an environment variable.
ROOT_ENTRY = "api"


# An analysis folder's `__init__.py` is its declaration: torch-free, read by the catalog (which finds it), so it
# sits in the catalog's layer; the folder's `compute.py` and the shared modules of analyses/ sit in their own.
DECLARATIONS = {p.parent.name for p in (PACKAGE / "analyses").glob("*/compute.py")}


def owner(path: Path) -> str:
    """The top-level package (or module) of gridlab a file belongs to (the catalog, for a declaration)."""
    parts = path.relative_to(PACKAGE).parts
    if parts[0] == "analyses" and len(parts) == 3 and parts[1] in DECLARATIONS and parts[2] == "__init__.py":
        return "catalog"
    return parts[0].removesuffix(".py")


def layer_name(module: str) -> str:
    """The package whose layer a module of gridlab (`gridlab.x.y`) counts in."""
    parts = module.split(".")
    return "catalog" if parts[1:2] == ["analyses"] and len(parts) == 3 and parts[2] in DECLARATIONS else parts[1]


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level gridlab package) of every import of gridlab in a module, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gridlab."):
            if node.module == "gridlab.analyses":  # its modules: declarations, or the analyses' own code
                found += [(node.lineno, layer_name(f"{node.module}.{a.name}")) for a in node.names]
            else:
                found.append((node.lineno, layer_name(node.module)))
        elif isinstance(node, ast.ImportFrom) and node.module == "gridlab":  # a subpackage, or the root's names
            found += [(node.lineno, a.name if a.name in LAYER_OF else "__init__") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, layer_name(a.name)) for a in node.names if a.name.startswith("gridlab.")]
    return found


def upward_imports() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = owner(path)
        for line, target in imported(ast.parse(path.read_text(encoding="utf-8"))):
            if LAYER_OF[target] > LAYER_OF[source] and (source, target) != ("__init__", ROOT_ENTRY):
                problems.append(f"{path.relative_to(PACKAGE)}:{line}: {source} imports {target} (a layer above)")
    return problems


def test_every_package_has_a_layer():
    packages = {owner(p) for p in PACKAGE.rglob("*.py")}
    assert packages <= set(LAYER_OF), f"add {sorted(packages - set(LAYER_OF))} to LAYERS and docs/architecture.md"


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports() == []


def test_grid_is_told_about_analyses_and_models_by_the_catalog():
    for path in (PACKAGE / "grid").rglob("*.py"):
        targets = {t for _, t in imported(ast.parse(path.read_text(encoding="utf-8")))}
        assert not targets & {"analyses", "models", "execution", "training"}, path


def torch_importers(package: str) -> list[str]:
    found = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "torch" or n.startswith("torch.") for n in names):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_reports_studies_and_annotation_read_rows_only():
    """No torch in report/, studies/ and annotate/, directly or through what they import: they read rows, never a
    model, and of the analyses only their declarations."""
    assert [torch_importers(p) for p in ("report", "studies", "annotate")] == [[], [], []]
    probe = (
        "import sys, gridlab.report.build, gridlab.studies.report, gridlab.studies.fidelity_doc, "
        "gridlab.annotate.export, gridlab.annotate.score; "
        "from gridlab.studies.sections.registry import load_sections; load_sections(); "
        f"declared = {sorted(f'gridlab.analyses.{d}' for d in DECLARATIONS)!r}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' "
        "or m.startswith('gridlab.analyses.') and m not in declared))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def loaded_by(statement: str) -> str:
    """The top-level packages of torch, ray, pandas and pyarrow that a fresh interpreter has after `statement`."""
    probe = (
        f"import sys; {statement}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'ray', 'pandas', 'pyarrow'}))"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def test_the_python_api_is_light():
    """`import gridlab` is the version; the API it opens reads rows (pandas, pyarrow) and never loads torch or Ray."""
    assert loaded_by("import gridlab") == "[]"
    assert loaded_by("import gridlab.api") == "['pandas', 'pyarrow']"


def analyses_named(path: Path) -> list[str]:
    """'file:line: id' for each analysis id a module's code names: in a string (docstrings aside, which may give
    one as an example) or in an import of an analysis's folder."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    word = re.compile(r"\b(" + "|".join(sorted(DECLARATIONS)) + r")\b")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {w}" for w in word.findall(node.value)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {m}" for m in modules if word.search(m)]
    return found


def test_running_planning_and_reporting_name_no_analysis():
    """What a grid-scope analysis needs (its peers, the rows to drop), whether rows are worth heatmaps, which
    cells an analysis applies to: the machinery asks the declarations, so a new analysis edits none of it. The
    report's sections are left out: each presents the rows of analyses it names, as the studies' sections do."""
    folders = ["execution", "grid", "results", "tracking", "cli"]
    paths = [p for f in folders for p in (PACKAGE / f).rglob("*.py")] + sorted((PACKAGE / "report").glob("*.py"))
    assert DECLARATIONS and "seed_variance" in DECLARATIONS  # the scan looks for something
    assert [hit for path in paths for hit in analyses_named(path)] == []
