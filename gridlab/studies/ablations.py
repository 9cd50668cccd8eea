"""Which run tests why a fidelity row lies outside its tolerance: entries of `ablations.yaml`, each with an
id, naming (paper, quantity, a selector on the other fidelity columns) -> the ablation grid, its --where
conditions, and a one-line finding.

    >>> entries = load_ablations()                       # gridlab/studies/ablations.yaml
    >>> ablation_text(row, entries, verdict="outside")   # 'sst_embeddings_jw_training, agnews_titles'
    >>> entries[0].finding, entries[0].command           # written once, on docs/fidelity/ablations.md

An outside row that no entry selects reads "no ablation yet": the reproduction is visibly unfinished there,
and nothing is filled in by guessing a cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gridlab.errors import GridlabError

ABLATIONS_FILE = Path(__file__).with_name("ablations.yaml")
NO_ABLATION = "no ablation yet"
Scalar = str | int | float | bool | None


class Ablation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    paper: str  # as the `paper` column prints it: "Jain & Wallace (2019)"
    quantity: tuple[str, ...]
    select: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)
    grid: str  # the ablation's grid file, relative to the repository
    where: tuple[str, ...] = ()
    finding: str = Field(min_length=1)

    @field_validator("quantity", "where", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("where")
    @classmethod
    def _conditions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for condition in value:
            if "=" not in condition:  # a YAML list split `dataset=a,b` at its comma
                raise ValueError(f"'{condition}' is not PATH=VALUE[,VALUE...]; quote a condition with commas")
        return value

    @field_validator("finding")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip():
            raise ValueError("a finding is one line")
        return value.strip()

    @property
    def command(self) -> str:
        return " ".join(["gridlab launch", self.grid, *(f"--where {w}" for w in self.where)])

    def selects(self, row: Mapping[str, Any]) -> bool:
        """Whether this entry speaks for a fidelity row (its paper, one of its quantities, every selector)."""
        if row.get("paper") != self.paper or row.get("quantity") not in self.quantity:
            return False
        for column, accepted in self.select.items():
            values = accepted if isinstance(accepted, list) else [accepted]
            if _text(row.get(column)) not in {_text(v) for v in values}:
                return False
        return True


def load_ablations(path: Path = ABLATIONS_FILE) -> list[Ablation]:
    """The entries of an ablations file; an absent file has none, a malformed one is an error that says where."""
    if not path.is_file():
        return []
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("ablations") or [], list):
        raise GridlabError(f"{path}: expected a mapping with an `ablations:` list")
    entries = raw.get("ablations") or []
    try:
        loaded = [Ablation.model_validate(entry) for entry in entries]
    except ValidationError as error:
        raise GridlabError(f"{path}: {error}") from None
    ids = [e.id for e in loaded]
    if repeated := sorted({i for i in ids if ids.count(i) > 1}):
        raise GridlabError(f"{path}: ids used twice: {', '.join(repeated)}")
    return loaded


def ablation_text(row: Mapping[str, Any], entries: list[Ablation], verdict: str) -> str:
    """The `ablation` cell of a fidelity row: the ids of every entry that selects it, else 'no ablation yet'
    where the row is outside its tolerance, else empty."""
    found = [e.id for e in entries if e.selects(row)]
    if found:
        return ", ".join(found)
    return NO_ABLATION if verdict == "outside" else ""


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).lower() if isinstance(value, bool) else str(value)
