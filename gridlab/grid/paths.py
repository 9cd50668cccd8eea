"""Dotted paths into the cell schema (`train.lr`, `data.synthetic.n_classes`): what a grid axis, an
exclude entry or an override names, and how to read, write and type-check the value found there."""

from __future__ import annotations

import types
import typing
from functools import lru_cache
from typing import Any, Union, cast

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from gridlab.config.schema import CellConfig
from gridlab.grid.suggest import unknown


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel inside `Model` or `Model | None`, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None


@lru_cache(maxsize=None)
def leaf_paths(model: type[BaseModel] = CellConfig, prefix: str = "") -> tuple[str, ...]:
    """Every settable scalar path of a model, e.g. ('dataset', ..., 'train.lr', 'data.synthetic.seed')."""
    paths: list[str] = []
    for name, field in model.model_fields.items():
        inner = _model_in(field.annotation)
        if inner is None:
            paths.append(prefix + name)
        else:
            paths.extend(leaf_paths(inner, f"{prefix}{name}."))
    return tuple(paths)


def field_at(path: str) -> FieldInfo:
    """The schema field a dotted path names; a `ValueError` with a did-you-mean when there is none."""
    model: type[BaseModel] | None = CellConfig
    field: FieldInfo | None = None
    walked = ""
    for part in path.split("."):
        if model is None or part not in model.model_fields:
            options = [p for p in leaf_paths() if p.startswith(walked)] if walked else list(leaf_paths())
            raise ValueError(unknown("key", path, options))
        field = model.model_fields[part]
        model = _model_in(field.annotation)
        walked += part + "."
    if model is not None:
        raise ValueError(
            f"'{path}' is a section, not a value "
            f"(expected one of its keys, e.g. '{path}.{next(iter(model.model_fields))}')"
        )
    assert field is not None
    return field


@lru_cache(maxsize=None)
def _adapter(path: str) -> TypeAdapter:
    field = field_at(path)
    assert field.annotation is not None  # every field of the schema is declared with a type
    if not field.metadata:
        return TypeAdapter(field.annotation)
    # an Annotated form built at run time: a valid type for pydantic, one mypy cannot evaluate statically
    return TypeAdapter(cast(Any, typing.Annotated[(field.annotation, *field.metadata)]))


def validate_value(path: str, value: Any) -> Any:
    """The value as the schema would store it at `path` (pydantic's ValidationError if it cannot)."""
    return _adapter(path).validate_python(value)


def get_path(config: dict[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Write `value` at `path`, creating sections that are absent or null."""
    *parents, leaf = path.split(".")
    node = config
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value
