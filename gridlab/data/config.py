"""`DataConfig`: the `data:` section of a grid, i.e. how a cell's dataset is read and preprocessed.

Every field is part of a cell's resolved config (and so of its id). `DatasetSpec.resolve` fills the dataset's own
defaults (J&W's minimum counts and length filters) and blanks fields that do not apply to the dataset, so
that, say, `babi_size` never changes the id of an `sst` cell.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gridlab.data.synthetic import SyntheticConfig

# Whose words a cell's vocabulary holds: a tokenizer is no label information, so reading dev and test words by
# their spelling leaks nothing; giving them trained embeddings would need them in train.
Vocabulary = Literal["train", "all"]


class DataConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    derive_splits: bool = Field(
        False, description="carve splits missing from a partial copy out of what exists (recorded in results)"
    )
    min_count: int | None = Field(None, ge=1, description="vocabulary minimum count in train (dataset default)")
    min_length: int | None = Field(None, ge=1, description="drop instances with fewer tokens (dataset default)")
    max_length: int | None = Field(None, ge=1, description="drop instances with more tokens (dataset default)")
    dev_fraction: float | None = Field(
        0.1, gt=0, lt=1, description="share of train carved as dev when none is official"
    )
    test_fraction: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="pool every official split and carve this share as test, then dev_fraction of the rest as "
        "dev (J&W's 20News: 0.2 and 0.2); null keeps the official splits",
    )
    split_seed: int = Field(0, ge=0, description="seed of every carved or derived split")
    carve_unit: Literal["instance", "premise"] = Field(
        "premise",
        description="pair datasets whose splits are carved from pooled rows (derive_splits, test_fraction): the pairs "
        "that share a premise (their text) go to one split together, as SNLI's own splits share no premise, or each "
        "pair alone (then a test premise sits in train with its other hypotheses, and their labels)",
    )
    babi_size: Literal["10k", "1k"] | None = Field(None, description="bAbI training-set size (default 10k)")
    babi_labels: Literal["answers", "vocabulary"] = Field(
        "answers",
        description="bAbI's classes: the answers seen in train, or every word of the training stories and questions "
        "(J&W's output layer)",
    )
    synthetic: SyntheticConfig | None = Field(None, description="parameters of the synthetic task")
    strip_punctuation: bool = Field(False, description="drop tokens made only of punctuation (J&W's preprocessing)")
    inword_punctuation: Literal["keep", "split", "separate"] = Field(
        "keep",
        description="tokens with punctuation inside: kept whole, split at it (J&W's SST: n't -> n t) or split with "
        "it as a token of its own (J&W's 20News: n't -> n ' t)",
    )
    drop_titles: bool = Field(False, description="AG News: the description without its title, as J&W read it")
    vocabulary: Vocabulary | None = Field(
        None,
        description="the words that get an id: train's (at least min_count times; the rest are <unk>, as a model "
        "that learns an embedding per word needs), or every split's (an encoder that reads a word by its "
        "spelling, the pretrained one, so no word is unknown); default: all for encoder pretrained, else train",
    )

    def may_pool(self) -> bool:
        """Whether the splits may be carved from the pooled rows (`prepare._raw_splits`): with a test fraction,
        or with derived splits (which pool only where the copy lacks a split: the setting is kept either way)."""
        return bool(self.test_fraction) or self.derive_splits
