"""Turning validation failures into `(where, what)` pairs, rendered by `GridFileError` as
`FILE: where: what`: one line each, with the expected form and a did-you-mean where one helps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from gridlab.grid.paths import _model_in
from gridlab.grid.suggest import unknown

Problem = tuple[str, str]
_QUOTED = re.compile(r"'([^']*)'")


def location(parts: Sequence[Any]) -> str:
    """('grid', 'encoder', 1) -> 'grid.encoder[1]'."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _model_at(model: type[BaseModel] | None, loc: Sequence[Any]) -> type[BaseModel] | None:
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        inner = _model_in(field.annotation)
        if inner is None and field.annotation is not None:
            args = getattr(field.annotation, "__args__", ())
            inner = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
        model = inner
    return model


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def from_validation_error(
    error: ValidationError, root: type[BaseModel] | None, prefix: Sequence[Any] = ()
) -> list[Problem]:
    """One problem per pydantic error, located from `prefix` (where `root` sits in the file)."""
    problems = []
    for item in error.errors(include_url=False):
        loc = [p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        where = location([*prefix, *loc])
        kind, message = item["type"], item["msg"]
        if kind == "extra_forbidden":
            model = _model_at(root, loc[:-1])
            options = list(model.model_fields) if model else []
            where = location([*prefix, *loc[:-1]])
            problems.append((where, unknown("key", loc[-1], options)))
        elif kind == "literal_error":
            options = _QUOTED.findall(item.get("ctx", {}).get("expected", ""))
            problems.append((where, unknown("value", item["input"], options)))
        elif kind == "missing":
            problems.append((where, "missing (required)"))
        elif kind == "value_error":
            problems.append((where, message.removeprefix("Value error, ")))
        else:
            message = message[0].lower() + message[1:]
            problems.append((where, f"got {_shown(item['input'])} (expected: {message})"))
    return problems
