"""Reading a grid file: YAML (duplicate keys refused) -> `GridFile`, or every problem at once.

>>> spec = load_grid_file(Path("grids/quick.yaml"))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gridlab.config.schema import GridFile
from gridlab.errors import GridFileError
from gridlab.grid.expand import raw_problems
from gridlab.grid.problems import from_validation_error


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first given on line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> dict[str, Any]:
    """The file's top-level mapping, or a GridFileError saying why it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GridFileError(str(path), [("", f"cannot read the grid file ({error.strerror or error})")]) from None
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise GridFileError(str(path), [(where, f"invalid YAML: {error.problem or error.context}")]) from None
    except yaml.YAMLError as error:
        raise GridFileError(str(path), [("", f"invalid YAML: {error}")]) from None
    if not isinstance(document, dict):
        found = "an empty file" if document is None else f"a {type(document).__name__}"
        raise GridFileError(str(path), [("", f"found {found} (expected a mapping with at least `name` and `grid`)")])
    return document


def load_grid_file(path: Path) -> GridFile:
    document = read_yaml(path)
    bad_keys = [k for k in document if not isinstance(k, str)]
    if bad_keys:
        raise GridFileError(str(path), [("", f"top-level key {bad_keys[0]!r} is not a string")])
    try:
        return GridFile.model_validate(document)
    except ValidationError as error:
        problems = from_validation_error(error, GridFile)
        problems += [p for p in raw_problems(document) if p not in problems]  # every problem in one go
        raise GridFileError(str(path), problems) from None
