"""Jain & Wallace's own trainer and evaluator, importable in a bench worker, fed gridlab's prepared data.

    commit = export(JW_GIT, EXPORT)             # their code paths, out of a clone or bare mirror
    install(EXPORT, PEERS)                      # perf-peers' shims, then the few more their trainer needs
    dataset = jw_dataset(splits, embeddings, folder, "sst")   # their Dataset class on gridlab's token ids

J&W's preprocessing (spaCy's retired `en` model, torchtext's vector aliases) does not install on a current stack,
so their trainer reads the token-id sequences gridlab prepares (same vocabulary, same embedding matrix): both
sides train on the same sequences, which is the fairer comparison. The sequences go through J&W's own
`Dataset` class (their length filter, their test/dev sort, their balanced `pos_weight`) from a pickle shaped
like their vectorizer's, as their `SST_dataset` / `IMDB_dataset` loaders read it.

Shims beyond `../shared/perf-peers/shims/peer_shims.py` (allennlp stubs, the `Transparency` package alias,
uint8 masks): `Transparency.preprocess.vectorizer` and `IPython` as empty modules (imported by their
`common_code`, used only by plotting and notebooks), `pandas.io.json.normalize` as pandas' current
`_normalize` (their metrics flatten sklearn's report with `nested_to_record`), matplotlib on Agg.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

# What their SST/IMDB pipeline runs, and nothing of their notebooks, plots or preprocessing.
JW_PATHS = (
    "__init__.py",
    "model",
    "configurations.py",
    "Trainers/TrainerBC.py",
    "Trainers/DatasetBC.py",
    "Trainers/__init__.py",
    "common_code",
    "LICENSE",
)
JW_MIN_LENGTH = {"sst": 5, "imdb": 6}  # their SST_dataset / IMDB_dataset: keep instances longer than this


def export(jw_git: Path, out: Path) -> str:
    """Write J&W's code paths to out/jw/Transparency (perf-peers' layout) and return the commit exported."""
    target = out / "jw" / "Transparency"
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(jw_git), "archive", "HEAD", "--", *JW_PATHS], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    commit = subprocess.run(
        ["git", "--git-dir", str(jw_git), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (out / "jw" / "COMMIT").write_text(commit + "\n")
    return commit


def exported_commit(out: Path) -> str:
    """The commit `export` wrote to `out`, or "unknown" for an export made otherwise."""
    path = out / "jw" / "COMMIT"
    return path.read_text().strip() if path.is_file() else "unknown"


def _empty_module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so submodules resolve
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


def install(export_dir: Path, peers_dir: Path) -> None:
    """Make `Transparency.Trainers.TrainerBC` and `Transparency.Trainers.DatasetBC` importable."""
    sys.path.insert(0, str(peers_dir / "shims"))
    import matplotlib
    import pandas.io.json
    import pandas.io.json._normalize
    import peer_shims

    matplotlib.use("Agg")
    peer_shims.install(export_dir)
    _empty_module("Transparency.preprocess")
    _empty_module("Transparency.preprocess.vectorizer")
    _empty_module("IPython")
    _empty_module("IPython.core")
    for name in ("IPython.display", "IPython.core.display"):
        _empty_module(name, HTML=str, display=lambda *args, **kwargs: None)
    sys.modules["pandas.io.json.normalize"] = pandas.io.json._normalize
    pandas.io.json.normalize = pandas.io.json._normalize


def jw_sequences(ids: list[list[int]]) -> list[list[int]]:
    """J&W's sequences carry their <SOS>/<EOS>; gridlab's ids 2 and 3 are the same specials (PAD 0 on both)."""
    return [[2, *row, 3] for row in ids]


def write_vec(path: Path, splits: dict[str, tuple[list[list[int]], list[int]]], embeddings: Any) -> None:
    """Pickle gridlab's splits as J&W's vectorizer leaves them (`seq_text`, `label`, `embeddings`, `vocab_size`,
    `word_dim`): what their dataset loaders read. Needs none of their code (the parent writes it, untimed)."""
    vec = types.SimpleNamespace(
        seq_text={split: jw_sequences(ids) for split, (ids, _) in splits.items()},
        label={split: list(labels) for split, (_, labels) in splits.items()},
        embeddings=embeddings,
        vocab_size=int(embeddings.shape[0]),
        word_dim=int(embeddings.shape[1]),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(vec))


def jw_dataset(path: Path, name: str, outputs: Path):
    """J&W's `Dataset` (length filter, dev/test sorted, balanced `pos_weight`) as their `SST_dataset` /
    `IMDB_dataset` build it from `path`; their models save under `outputs`."""
    from Transparency.Trainers import DatasetBC

    dataset = DatasetBC.Dataset(name=name, path=str(path), min_length=JW_MIN_LENGTH[name])
    DatasetBC.set_balanced_pos_weight(dataset)
    dataset.basepath = str(outputs)
    return dataset
