"""A tiny randomly initialised BERT saved as a Hugging Face folder, for the pretrained encoder's tests: 2
layers, 4 heads, hidden 16, a word-piece vocabulary of single letters and digits and their ## forms, so every
word of the synthetic and SST datasets splits into several pieces."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

SPECIAL_PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_tiny_bert(folder: Path) -> Path:
    """The folder, holding config.json, model.safetensors and a tokenizer; the same weights every time."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    characters = string.ascii_lowercase + string.digits
    pieces = SPECIAL_PIECES + list(characters) + [f"##{c}" for c in characters] + ["the", "##ing", "good", "bad"]
    BertTokenizer(vocab={piece: i for i, piece in enumerate(pieces)}, do_lower_case=True).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(pieces),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
