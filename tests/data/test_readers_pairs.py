"""The readers of bAbI, SICK, SNLI, the Zaidan movie rationales and Multi30k, checked on real data.

`data_dir` is the excerpts (tests/excerpts: the first records of each class or the first lines, in the release's
own formats); the tests marked `release` read the whole releases from $GRIDLAB_DATA. Counts come from each
folder's SOURCE.md; the hand-checked rows were read off the files with `zcat` / `tar -xzOf`.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from gridlab.data.examples import RawExample
from gridlab.data.readers.babi import BABI_FILES, BabiReader
from gridlab.data.readers.movies import MOVIES_FILES, MovieRationalesReader, strip_rationale_tags
from gridlab.data.readers.multi30k import MULTI30K_FILES, Multi30kReader
from gridlab.data.readers.sick import SICK_FILES, SickReader
from gridlab.data.readers.snli import SNLI_FILES, SnliReader
from gridlab.data.spec import SPLITS, SourceFile
from gridlab.errors import DataError

ALL_PRESENT = {"train": True, "dev": True, "test": True}
NONE_PRESENT = {"train": False, "dev": False, "test": False}
BABI_MEMBER = "tasks_1-20_v1-2/en-valid-10k/qa{task}_{part}.txt"


def read_all(reader, folder: Path) -> dict[str, list[RawExample]]:
    return {split: reader.read(folder, split) for split, present in reader.splits_present(folder).items() if present}


def by_id(examples: list[RawExample]) -> dict[str, RawExample]:
    return {example.source_id: example for example in examples}


def labels(examples: list[RawExample]) -> Counter[str]:
    return Counter(example.label for example in examples)


# --- the *_FILES constants -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "files", "count"),
    [
        ("babi", BABI_FILES, 1),
        ("sick", SICK_FILES, 1),
        ("snli", SNLI_FILES, 2),
        ("movie_rationales", MOVIES_FILES, 1),
        ("multi30k", MULTI30K_FILES, 10),
    ],
)
@pytest.mark.release
def test_source_files_match_the_stored_files(
    release_dir: Path, folder: str, files: tuple[SourceFile, ...], count: int
) -> None:
    data_dir = release_dir
    stored = {path.name for path in (data_dir / folder).iterdir() if path.name != "SOURCE.md"}
    assert len(files) == count
    assert {file.path for file in files} == stored
    for file in files:
        path = data_dir / folder / file.path
        assert path.stat().st_size == file.size, file.path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == file.sha256, file.path


# --- bAbI ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def babi_qa1(data_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(BabiReader(1, "10k"), data_dir / "babi")


@pytest.fixture(scope="module")
def babi_qa1_release(release_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(BabiReader(1, "10k"), release_dir / "babi")


@pytest.mark.release
@pytest.mark.parametrize("task", [1, 2])
def test_babi_10k_counts(release_dir: Path, babi_qa1_release: dict[str, list[RawExample]], task: int) -> None:
    reader = BabiReader(task, "10k")
    assert reader.splits_present(release_dir / "babi") == ALL_PRESENT
    read = babi_qa1_release if task == 1 else read_all(reader, release_dir / "babi")
    assert {split: len(rows) for split, rows in read.items()} == {"train": 9000, "dev": 1000, "test": 1000}


@pytest.mark.parametrize(("task", "size"), [(1, "10k"), (2, "10k"), (17, "1k"), (20, "1k")])
def test_babi_excerpt_counts(data_dir: Path, task: int, size: str) -> None:
    read = read_all(BabiReader(task, size), data_dir / "babi")  # type: ignore[arg-type]
    assert {split: len(rows) for split, rows in read.items()} == {"train": 30, "dev": 30, "test": 30}
    assert all(len(labels(rows)) > 1 for rows in read.values())


def test_babi_qa3_10k_has_no_train(data_dir: Path) -> None:
    reader = BabiReader(3, "10k")
    folder = data_dir / "babi"
    assert reader.splits_present(folder) == {"train": False, "dev": True, "test": True}
    assert len(reader.read(folder, "dev")) == 30
    with pytest.raises(DataError, match=re.escape(BABI_MEMBER.format(task=3, part="train"))):
        reader.read(folder, "train")


def test_babi_qa3_10k_first_dev_question(data_dir: Path) -> None:
    first = BabiReader(3, "10k").read(data_dir / "babi", "dev")[0]
    assert first.query == "Where was the apple before the kitchen?"
    assert first.label == "hallway"
    assert first.text.startswith("Sandra moved to the hallway. Sandra went back to the garden. Daniel journeyed")
    assert first.source_id == BABI_MEMBER.format(task=3, part="valid") + ":47"


@pytest.mark.parametrize(
    ("task", "counts"),
    [(1, (900, 100, 1000)), (17, (904, 96, 1000)), (18, (905, 95, 1000)), (20, (904, 96, 1000))],
)
@pytest.mark.release
def test_babi_1k_counts(release_dir: Path, task: int, counts: tuple[int, int, int]) -> None:
    read = read_all(BabiReader(task, "1k"), release_dir / "babi")
    assert tuple(len(read[split]) for split in SPLITS) == counts


def test_babi_story_grows_across_its_questions(babi_qa1: dict[str, list[RawExample]]) -> None:
    first, second, third = babi_qa1["train"][:3]
    assert first == RawExample(
        text="Mary moved to the bathroom. John went to the hallway.",
        label="bathroom",
        query="Where is Mary?",
        source_id=BABI_MEMBER.format(task=1, part="train") + ":3",
    )
    # Lines 4 and 5 join the story; the question on line 3 does not.
    assert second.text == first.text + " Daniel went back to the hallway. Sandra moved to the garden."
    assert (second.query, second.label) == ("Where is Daniel?", "hallway")
    assert third.text == second.text + " John moved to the office. Sandra journeyed to the bathroom."
    assert "?" not in third.text
    # Line 16 starts the second story, which sees only its own sentences.
    sixth = babi_qa1["train"][5]
    assert sixth.text == "Mary went to the bedroom. John journeyed to the bathroom."
    assert (sixth.query, sixth.label, sixth.source_id[-3:]) == ("Where is John?", "bathroom", ":18")


@pytest.mark.release
def test_babi_last_train_question(babi_qa1_release: dict[str, list[RawExample]]) -> None:
    last = babi_qa1_release["train"][-1]
    assert last.source_id == BABI_MEMBER.format(task=1, part="train") + ":27000"
    assert (last.query, last.label) == ("Where is John?", "office")
    assert last.text.startswith("John moved to the bathroom. Daniel went to the kitchen.")
    assert last.text.endswith("John went back to the office. Mary travelled to the bedroom.")


def test_babi_qa2_test_second_question_sees_new_sentences(data_dir: Path) -> None:
    first, second = BabiReader(2, "10k").read(data_dir / "babi", "test")[:2]
    assert first.text == (
        "Mary got the milk there. John moved to the bedroom. Sandra went back to the kitchen. "
        "Mary travelled to the hallway."
    )
    assert (first.query, first.label) == ("Where is the milk?", "hallway")
    assert second.text == first.text + " John got the football there. John went to the hallway."
    assert (second.query, second.label) == ("Where is the football?", "hallway")


@pytest.mark.release
def test_babi_list_answers_are_kept_as_written(release_dir: Path) -> None:
    data_dir = release_dir
    lists = by_id(BabiReader(8, "1k").read(data_dir / "babi", "train"))
    row = lists["tasks_1-20_v1-2/en-valid/qa8_train.txt:198"]
    assert (row.query, row.label) == ("What is Mary carrying?", "apple,football")
    assert row.text.startswith("Sandra moved to the office. Mary went back to the office.")
    assert row.text.endswith("Mary went back to the hallway. Mary took the football there.")
    path = BabiReader(19, "1k").read(data_dir / "babi", "test")[-1]
    assert (path.query, path.label) == ("How do you go from the garden to the hallway?", "w,s")
    assert path.source_id == "tasks_1-20_v1-2/en-valid/qa19_test.txt:6000"
    assert path.text.endswith("The bedroom is north of the garden. The kitchen is north of the hallway.")


def test_babi_reads_the_official_archive_name(data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "tasks_1-20_v1-2.tar.gz").symlink_to(data_dir / "babi" / BABI_FILES[0].path)
    reader = BabiReader(1, "1k")
    assert reader.splits_present(tmp_path) == ALL_PRESENT
    assert reader.read(tmp_path, "dev") == reader.read(data_dir / "babi", "dev")


def test_babi_reads_an_unpacked_folder_and_rejects_a_bad_line(tmp_path: Path) -> None:
    folder = tmp_path / "tasks_1-20_v1-2" / "en-valid"
    folder.mkdir(parents=True)
    (folder / "qa1_train.txt").write_text("1 Mary moved to the bathroom.\n2 Where is Mary? \tbathroom\t1\n")
    (folder / "qa1_valid.txt").write_text("1 Mary moved to the bathroom.\nWhere is Mary?\tbathroom\t1\n")
    reader = BabiReader(1, "1k")
    assert reader.splits_present(tmp_path) == {"train": True, "dev": True, "test": False}
    assert reader.read(tmp_path, "train") == [
        RawExample(
            text="Mary moved to the bathroom.",
            label="bathroom",
            query="Where is Mary?",
            source_id="tasks_1-20_v1-2/en-valid/qa1_train.txt:2",
        ),
    ]
    with pytest.raises(DataError, match=r"qa1_valid\.txt: line 2: expected 'ID text'"):
        reader.read(tmp_path, "dev")
    with pytest.raises(DataError, match=r"qa1_test\.txt: not found"):
        reader.read(tmp_path, "test")


def test_babi_rejects_unknown_task_and_size() -> None:
    with pytest.raises(ValueError, match="1..20"):
        BabiReader(21, "10k")
    with pytest.raises(ValueError, match="'10k' or '1k'"):
        BabiReader(1, "100")  # type: ignore[arg-type]


# --- SICK ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sick(data_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(SickReader(), data_dir / "sick")


@pytest.fixture(scope="module")
def sick_release(release_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(SickReader(), release_dir / "sick")


def test_sick_excerpt_counts(sick: dict[str, list[RawExample]]) -> None:
    for split in SPLITS:
        assert labels(sick[split]) == {"ENTAILMENT": 12, "NEUTRAL": 12, "CONTRADICTION": 12}


@pytest.mark.release
@pytest.mark.parametrize(
    ("split", "entailment", "neutral", "contradiction"),
    [("train", 1274, 2524, 641), ("dev", 143, 281, 71), ("test", 1404, 2790, 712)],
)
def test_sick_counts(
    sick_release: dict[str, list[RawExample]], split: str, entailment: int, neutral: int, contradiction: int
) -> None:
    sick = sick_release
    assert labels(sick[split]) == {"ENTAILMENT": entailment, "NEUTRAL": neutral, "CONTRADICTION": contradiction}
    assert len(sick[split]) == {"train": 4439, "dev": 495, "test": 4906}[split]


def test_sick_rows(sick: dict[str, list[RawExample]]) -> None:
    assert sick["train"][0] == RawExample(
        text="A group of kids is playing in a yard and an old man is standing in the background",
        label="NEUTRAL",
        query="A group of boys in a yard is playing and a man is standing in the background",
        source_id="1",
    )
    dev = sick["dev"][0]
    assert (dev.source_id, dev.label, dev.query) == (
        "4",
        "CONTRADICTION",
        "There is no boy playing outdoors and there is no man smiling",
    )
    assert dev.text == "The young boys are playing outdoors and the man is smiling nearby"
    assert (sick["test"][0].source_id, sick["test"][0].label) == ("6", "NEUTRAL")
    every = [example for rows in sick.values() for example in rows]
    assert all(example.text == example.text.strip() and example.query == example.query.strip() for example in every)


@pytest.mark.release
def test_sick_release_rows(sick_release: dict[str, list[RawExample]]) -> None:
    sick = sick_release
    last = sick["train"][-1]
    assert (last.source_id, last.text, last.query, last.label) == (
        "10000",
        "Three dogs are resting on a sidewalk",
        "The woman with a knife is slicing a pepper",
        "NEUTRAL",
    )
    dev = sick["dev"][0]
    assert (dev.source_id, dev.label, dev.query) == (
        "4",
        "CONTRADICTION",
        "There is no boy playing outdoors and there is no man smiling",
    )
    assert dev.text == "The young boys are playing outdoors and the man is smiling nearby"
    test = sick["test"]
    assert (test[0].source_id, test[0].label) == ("6", "NEUTRAL")
    assert (test[-1].source_id, test[-1].query) == ("9996", "The snowboarder is leaping fearlessly over white snow")


@pytest.mark.release
def test_sick_strips_stray_spaces(sick_release: dict[str, list[RawExample]]) -> None:
    sick = sick_release
    # Pair 308 has a trailing space on sentence_A, pair 301 a leading space on sentence_A.
    stray = by_id(sick["test"])["308"]
    assert stray.text == "There is no lady walking in body paint in front of a crowd"
    assert stray.query == "A young, topless woman is covered in paint"
    assert by_id(sick["train"])["301"].text == "A nude lady is walking in front of a crowd in body paint"
    every = [example for rows in sick.values() for example in rows]
    assert all(example.text == example.text.strip() and example.query == example.query.strip() for example in every)


def test_sick_uncompressed_reads_the_same(data_dir: Path, tmp_path: Path, sick: dict[str, list[RawExample]]) -> None:
    with gzip.open(data_dir / "sick" / "SICK.txt.gz") as packed, (tmp_path / "SICK.txt").open("wb") as plain:
        shutil.copyfileobj(packed, plain)
    reader = SickReader()
    assert reader.splits_present(tmp_path) == ALL_PRESENT
    assert read_all(reader, tmp_path) == sick


def test_sick_missing_and_malformed(tmp_path: Path) -> None:
    reader = SickReader()
    assert reader.splits_present(tmp_path) == NONE_PRESENT
    with pytest.raises(DataError, match="SICK.txt.gz: not found"):
        reader.read(tmp_path, "train")
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\r\n"
    (tmp_path / "SICK.txt").write_text(header + "1\tA man\tA person\tENTAILMENT\r\n", newline="")
    with pytest.raises(DataError, match=r"SICK\.txt: line 2: 4 tab-separated fields, the header has 5"):
        reader.read(tmp_path, "train")
    (tmp_path / "SICK.txt").write_text("pair_ID\tsentence_A\n1\tA man\n")
    with pytest.raises(DataError, match="header lacks sentence_B, entailment_label, SemEval_set"):
        reader.read(tmp_path, "train")


# --- SNLI ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snli(data_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(SnliReader(), data_dir / "snli")


@pytest.fixture(scope="module")
def snli_release(release_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(SnliReader(), release_dir / "snli")


def test_snli_excerpt_splits_and_counts(data_dir: Path, snli: dict[str, list[RawExample]]) -> None:
    assert SnliReader().splits_present(data_dir / "snli") == {"train": False, "dev": True, "test": True}
    for split in ("dev", "test"):
        assert labels(snli[split]) == {"entailment": 12, "neutral": 12, "contradiction": 12}
        with gzip.open(data_dir / "snli" / f"snli_1.0_{split}.jsonl.gz", "rt", encoding="utf-8") as lines:
            assert sum(1 for _ in lines) == 48  # and 12 with gold label "-", dropped
    with pytest.raises(DataError, match=r"snli_1\.0_train\.jsonl\.gz: not found"):
        SnliReader().read(data_dir / "snli", "train")


@pytest.mark.release
def test_snli_splits_and_counts(release_dir: Path, snli_release: dict[str, list[RawExample]]) -> None:
    data_dir, snli = release_dir, snli_release
    assert SnliReader().splits_present(data_dir / "snli") == {"train": False, "dev": True, "test": True}
    assert labels(snli["dev"]) == {"entailment": 3329, "neutral": 3235, "contradiction": 3278}
    assert labels(snli["test"]) == {"entailment": 3368, "neutral": 3219, "contradiction": 3237}
    assert (len(snli["dev"]), len(snli["test"])) == (9842, 9824)
    with pytest.raises(DataError, match=r"snli_1\.0_train\.jsonl\.gz: not found"):
        SnliReader().read(data_dir / "snli", "train")


def test_snli_rows(snli: dict[str, list[RawExample]]) -> None:
    assert snli["dev"][0] == RawExample(
        text="Two women are embracing while holding to go packages.",
        label="neutral",
        query="The sisters are hugging goodbye while holding to go packages after just eating lunch.",
        source_id="4705552913.jpg#2r1n",
    )
    assert snli["test"][0].text == (
        "This church choir sings to the masses as they sing joyous songs from the book at a church."
    )


@pytest.mark.release
def test_snli_release_rows(snli_release: dict[str, list[RawExample]]) -> None:
    snli = snli_release
    last = snli["dev"][-1]
    assert (last.source_id, last.label) == ("4805835848.jpg#0r1n", "neutral")
    assert last.query == (
        "A young mother tries to grab her topless child from a water foutain before she attracts attention"
    )
    assert snli["test"][0].text == (
        "This church choir sings to the masses as they sing joyous songs from the book at a church."
    )
    assert (snli["test"][-1].source_id, snli["test"][-1].query) == (
        "152881593.jpg#1r1n",
        "A man is teaching science in a classroom.",
    )
    middle = by_id(snli["test"])["2403376030.jpg#2r1e"]
    assert (middle.text, middle.query, middle.label) == (
        "A woman in a black hooded sweatshirt walking with a large dog.",
        "A woman walking a dog",
        "entailment",
    )


@pytest.mark.release
def test_snli_drops_no_gold_label_and_strips(snli_release: dict[str, list[RawExample]]) -> None:
    dev = by_id(snli_release["dev"])
    assert "3184031654.jpg#0r1e" not in dev  # gold label "-"
    assert dev["3184031654.jpg#0r1c"].label == "contradiction"
    # The release writes this hypothesis with a leading space.
    assert dev["4329198220.jpg#1r1n"].query == "A group of youths are baking some delicious brownies."


def test_snli_reads_an_uncompressed_train_file(data_dir: Path, tmp_path: Path) -> None:
    with gzip.open(data_dir / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as dev:
        head = [next(dev) for _ in range(40)]  # line 37 has gold label "-"
    assert '"gold_label": "-"' in head[36]
    (tmp_path / "snli_1.0_train.jsonl").write_text("".join(head), encoding="utf-8")
    reader = SnliReader()
    assert reader.splits_present(tmp_path) == {"train": True, "dev": False, "test": False}
    assert reader.read(tmp_path, "train") == reader.read(data_dir / "snli", "dev")[:39]


def test_snli_malformed_line(tmp_path: Path) -> None:
    (tmp_path / "snli_1.0_dev.jsonl").write_text('{"gold_label": "neutral"}\n{not json\n')
    with pytest.raises(DataError, match=r"snli_1\.0_dev\.jsonl: line 1: not an SNLI pair: no field 'sentence1'"):
        SnliReader().read(tmp_path, "dev")
    dropped = '{"gold_label": "-", "sentence1": "A dog.", "sentence2": "A cat.", "pairID": "1"}'
    (tmp_path / "snli_1.0_dev.jsonl").write_text(dropped + "\n{not json\n")
    with pytest.raises(DataError, match=r"snli_1\.0_dev\.jsonl: line 2: not JSON"):
        SnliReader().read(tmp_path, "dev")


# --- movie rationales ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def movies(data_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(MovieRationalesReader(), data_dir / "movie_rationales")


@pytest.fixture(scope="module")
def movies_release(release_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(MovieRationalesReader(), release_dir / "movie_rationales")


def fold9_tags(archive: Path) -> Counter[str]:
    """Opening tags in the fold-9 files of withRats_*, counted straight from the archive."""
    counts: Counter[str] = Counter()
    with tarfile.open(archive) as tar:
        for info in tar:
            if re.fullmatch(r"movies/withRats_(pos|neg)/\w+_9\d\d\.txt", info.name):
                text = tar.extractfile(info).read().decode()
                counts["pos"] += text.count("<POS>")
                counts["neg"] += text.count("<NEG>")
    return counts


def test_movies_excerpt_counts_and_folds(data_dir: Path, movies: dict[str, list[RawExample]]) -> None:
    assert MovieRationalesReader().splits_present(data_dir / "movie_rationales") == ALL_PRESENT
    assert {split: labels(rows) for split, rows in movies.items()} == {
        "train": {"pos": 24, "neg": 24},
        "dev": {"pos": 12, "neg": 12},
        "test": {"pos": 12, "neg": 12},
    }
    folds = {
        split: Counter(re.search(r"_(\d)\d\d\.txt$", e.source_id)[1] for e in rows) for split, rows in movies.items()
    }
    assert folds == {"train": {str(fold): 6 for fold in range(8)}, "dev": {"9": 24}, "test": {"8": 24}}
    assert all(example.rationale for example in movies["test"] + movies["train"])
    assert not any(example.rationale for example in movies["dev"])  # fold 9 is untagged in the release
    assert not any(fold9_tags(data_dir / "movie_rationales" / MOVIES_FILES[0].path).values())


@pytest.mark.release
def test_movies_counts(release_dir: Path, movies_release: dict[str, list[RawExample]]) -> None:
    data_dir, movies = release_dir, movies_release
    assert MovieRationalesReader().splits_present(data_dir / "movie_rationales") == ALL_PRESENT
    assert {split: labels(rows) for split, rows in movies.items()} == {
        "train": {"pos": 800, "neg": 800},
        "dev": {"pos": 100, "neg": 100},
        "test": {"pos": 100, "neg": 100},
    }
    spans = {split: Counter({"pos": 0, "neg": 0}) for split in SPLITS}
    for split, rows in movies.items():
        for example in rows:
            spans[split][example.label] += len(example.rationale)
    # SOURCE.md: 7253 <POS> and 8144 <NEG> spans in all of withRats_*; fold 9 is dev.
    unread = fold9_tags(data_dir / "movie_rationales" / MOVIES_FILES[0].path)
    assert spans["train"]["pos"] + spans["test"]["pos"] == 7253 - unread["pos"]
    assert spans["train"]["neg"] + spans["test"]["neg"] == 8144 - unread["neg"]
    assert spans == {"train": {"pos": 6595, "neg": 7285}, "dev": {"pos": 0, "neg": 0}, "test": {"pos": 658, "neg": 859}}
    assert all(example.rationale for example in movies["test"])
    assert not any(example.rationale for example in movies["dev"])


@pytest.mark.release
def test_movies_folds(movies_release: dict[str, list[RawExample]]) -> None:
    movies = movies_release
    folds = {
        split: Counter(re.search(r"_(\d)\d\d\.txt$", e.source_id)[1] for e in rows) for split, rows in movies.items()
    }
    assert folds == {"train": {str(fold): 200 for fold in range(8)}, "dev": {"9": 200}, "test": {"8": 200}}


def test_movies_rows(movies: dict[str, list[RawExample]]) -> None:
    first = movies["train"][0]
    assert (first.source_id, first.label) == ("movies/withRats_neg/negR_000.txt", "neg")
    assert first.text.startswith("plot : two teen couples go to a church party , drink and then drive .")
    assert first.rationale[:3] == ((196, 213), (272, 287), (366, 384))
    assert [first.text[start:end] for start, end in first.rationale[:3]] == [
        "what's the deal ?",
        "mind-fuck movie",
        "a very bad package",
    ]
    test_neg = by_id(movies["test"])["movies/withRats_neg/negR_800.txt"]
    assert test_neg.text[slice(*test_neg.rationale[0])] == "nothing really worth watching"
    dev = movies["dev"]
    assert (dev[0].source_id, dev[0].label, dev[0].rationale) == ("movies/withRats_neg/neg_900.txt", "neg", ())
    assert dev[0].text.startswith("there may not be a critic alive who harbors as much affection for shlock")


@pytest.mark.release
def test_movies_release_rows(movies_release: dict[str, list[RawExample]]) -> None:
    movies = movies_release
    last = movies["test"][-1]
    assert (last.source_id, last.label) == ("movies/withRats_pos/posR_899.txt", "pos")
    assert last.text[slice(*last.rationale[0])] == "wonderfully vibrant"
    assert last.text[slice(*last.rationale[-1])] == "certainly recommendable"
    assert last.text.endswith(
        "certainly recommendable when the traditional slew of indifferent year's-open "
        "releases is just around the corner ."
    )
    dev = movies["dev"]
    assert (dev[-1].source_id, dev[-1].label) == ("movies/withRats_pos/pos_999.txt", "pos")
    assert dev[-1].text.endswith("i look forward to niccol's next film , whatever it may be .")


def test_movies_text_is_clean_and_spans_are_words(movies: dict[str, list[RawExample]]) -> None:
    for example in (example for rows in movies.values() for example in rows):
        assert "<" not in example.text and "  " not in example.text and example.text == example.text.strip()
        ends = [0]
        for start, end in example.rationale:
            assert ends[-1] <= start < end
            piece = example.text[start:end]
            assert piece == piece.strip()
            assert start == 0 or example.text[start - 1] == " "
            assert end == len(example.text) or example.text[end] == " "
            ends.append(end)


def test_strip_rationale_tags() -> None:
    text, spans = strip_rationale_tags("a <POS> good  film </POS> .\n<POS>great</POS>", "x")
    assert text == "a good film . great"
    assert [text[start:end] for start, end in spans] == ["good film", "great"]
    for tagged, problem in [
        ("<NEG> a <NEG> b </NEG> </NEG>", "opened inside"),
        ("a </NEG>", "closes no open"),
        ("<POS> a </NEG>", "closes no open"),
        ("<POS> </POS>", "encloses no words"),
        ("<POS> a", "never closed"),
    ]:
        with pytest.raises(DataError, match=f"^x: .*{problem}"):
            strip_rationale_tags(tagged, "x")


def test_movies_malformed_archive(tmp_path: Path) -> None:
    reader = MovieRationalesReader()
    assert reader.splits_present(tmp_path) == NONE_PRESENT
    source = tmp_path / "negR_100.txt"
    source.write_text("a <NEG> bad film .\n")
    with tarfile.open(tmp_path / MOVIES_FILES[0].path, "w:gz") as tar:
        tar.add(source, arcname="movies/withRats_neg/negR_100.txt")
    with pytest.raises(DataError, match=r"member movies/withRats_neg/negR_100\.txt\): <NEG> is never closed"):
        reader.read(tmp_path, "train")
    with pytest.raises(DataError, match=r"no movies/withRats_\{pos,neg\}/ reviews of folds \[9\]"):
        reader.read(tmp_path, "dev")


# --- Multi30k --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def multi30k(data_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(Multi30kReader(), data_dir / "multi30k")


@pytest.fixture(scope="module")
def multi30k_release(release_dir: Path) -> dict[str, list[RawExample]]:
    return read_all(Multi30kReader(), release_dir / "multi30k")


def test_multi30k_excerpt_counts(data_dir: Path, multi30k: dict[str, list[RawExample]]) -> None:
    assert Multi30kReader().splits_present(data_dir / "multi30k") == ALL_PRESENT
    assert {split: len(rows) for split, rows in multi30k.items()} == {"train": 40, "dev": 40, "test": 40}
    assert {example.label for rows in multi30k.values() for example in rows} == {""}


@pytest.mark.release
def test_multi30k_counts(release_dir: Path, multi30k_release: dict[str, list[RawExample]]) -> None:
    multi30k = multi30k_release
    assert Multi30kReader().splits_present(release_dir / "multi30k") == ALL_PRESENT
    assert {split: len(rows) for split, rows in multi30k.items()} == {"train": 29000, "dev": 1014, "test": 1000}
    assert {example.label for rows in multi30k.values() for example in rows} == {""}


def test_multi30k_rows(multi30k: dict[str, list[RawExample]]) -> None:
    assert multi30k["train"][0] == RawExample(
        text="Two young, White males are outside near many bushes.",
        label="",
        target="Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        source_id="train:1",
    )
    assert (multi30k["dev"][0].text, multi30k["dev"][0].target) == (
        "A group of men are loading cotton onto a truck",
        "Eine Gruppe von Männern lädt Baumwolle auf einen Lastwagen",
    )


@pytest.mark.release
def test_multi30k_release_rows(multi30k_release: dict[str, list[RawExample]]) -> None:
    multi30k = multi30k_release
    last = multi30k["train"][-1]
    assert last.source_id == "train:29000"
    assert last.text.startswith("A man in shorts and a Hawaiian shirt leans over the rail of a pilot boat")
    assert last.target.endswith("mit Nebel und Bergen im Hintergrund.")
    assert (multi30k["test"][-1].text, multi30k["test"][-1].target) == (
        "A girl at the shore of a beach with a mountain in the distance.",
        "Ein Mädchen an einer Küste mit einem Berg im Hintergrund.",
    )
    assert multi30k["train"][5168].target.endswith("Trikot mit der Nummer\u00a028.")  # no-break space kept
    stray = multi30k["train"][5279]  # the release's line ends in a space
    assert stray.target.endswith("in einem pfirsichfarben-weißen Kleid")
    assert stray.text == (
        "A blond girl wearing a white dress is arguing with another girl wearing a peach and white dress."
    )


def test_multi30k_uncompressed_reads_the_same(
    data_dir: Path, tmp_path: Path, multi30k: dict[str, list[RawExample]]
) -> None:
    for name in ("train", "val", "test_2016_flickr"):
        for side in ("en", "de"):
            with (
                gzip.open(data_dir / "multi30k" / f"{name}.{side}.gz") as packed,
                (tmp_path / f"{name}.{side}").open("wb") as plain,
            ):
                shutil.copyfileobj(packed, plain)
    reader = Multi30kReader()
    assert reader.splits_present(tmp_path) == ALL_PRESENT
    assert read_all(reader, tmp_path) == multi30k


def test_multi30k_missing_and_misaligned(tmp_path: Path) -> None:
    reader = Multi30kReader()
    (tmp_path / "val.en").write_text("A dog runs.\nA cat sleeps.\n", encoding="utf-8")
    assert reader.splits_present(tmp_path) == NONE_PRESENT
    with pytest.raises(DataError, match=r"val\.de\.gz: not found \(nor val\.de\)"):
        reader.read(tmp_path, "dev")
    (tmp_path / "val.de").write_text("Ein Hund rennt.\n", encoding="utf-8")
    assert reader.splits_present(tmp_path) == {"train": False, "dev": True, "test": False}
    with pytest.raises(DataError, match=r"val\.en has 2 lines but .*val\.de has 1"):
        reader.read(tmp_path, "dev")
