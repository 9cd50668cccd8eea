"""Readers of the original SST, IMDB, AG News and 20 Newsgroups files, checked on real data.

`data_dir` is the excerpts (tests/excerpts: the first records of each class, in the release's formats);
the tests marked `release` read the whole releases from $GRIDLAB_DATA. Counts come from each folder's
SOURCE.md; the hand-checked rows were read off the real files with sed / zcat / tar. IMDB's release is
read once per module because each split takes a couple of seconds to stream.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from gridlab.data.examples import RawExample
from gridlab.data.readers import imdb as imdb_module
from gridlab.data.readers.ag_news import AG_NEWS_FILES, AgNewsReader
from gridlab.data.readers.imdb import IMDB_FILES, ImdbReader
from gridlab.data.readers.newsgroups import NEWSGROUPS_FILES, NewsgroupsReader, strip_message
from gridlab.data.readers.sst import SST5_FILES, SST_FILES, SST_TREE_FILES, SstReader
from gridlab.data.spec import SourceFile
from gridlab.errors import DataError

SPORTS = ("rec.sport.baseball", "rec.sport.hockey")


def _write_tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _by_id(examples: list[RawExample]) -> dict[str, RawExample]:
    return {example.source_id: example for example in examples}


# --- checksums ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "files"),
    [
        ("sst", SST_FILES),
        ("sst", SST5_FILES),
        ("sst", SST_TREE_FILES),
        ("imdb", IMDB_FILES),
        ("ag_news", AG_NEWS_FILES),
        ("20newsgroups", NEWSGROUPS_FILES),
    ],
)
@pytest.mark.release
def test_file_constants_match_the_real_files(release_dir: Path, folder: str, files: tuple[SourceFile, ...]) -> None:
    for source in files:
        path = release_dir / folder / source.path
        assert path.stat().st_size == source.size, source.path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == source.sha256, source.path


# --- SST ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fine", "split", "counts"),
    [
        (False, "train", {"0": 3310, "1": 3610}),
        (False, "dev", {"0": 428, "1": 444}),
        (False, "test", {"0": 912, "1": 909}),
        (True, "train", {"0": 1092, "1": 2218, "2": 1624, "3": 2322, "4": 1288}),
        (True, "dev", {"0": 139, "1": 289, "2": 229, "3": 279, "4": 165}),
        (True, "test", {"0": 279, "1": 633, "2": 389, "3": 510, "4": 399}),
    ],
)
@pytest.mark.release
def test_sst_counts(release_dir: Path, fine: bool, split: str, counts: dict[str, int]) -> None:
    examples = SstReader(fine).read(release_dir / "sst", split)
    assert Counter(example.label for example in examples) == counts


@pytest.mark.parametrize(("fine", "per_class"), [(False, 20), (True, 8)])
def test_sst_excerpt_counts(data_dir: Path, fine: bool, per_class: int) -> None:
    labels = ("0", "1", "2", "3", "4") if fine else ("0", "1")
    for split in ("train", "dev", "test"):
        examples = SstReader(fine).read(data_dir / "sst", split)
        assert Counter(example.label for example in examples) == {label: per_class for label in labels}
        assert examples[-1].source_id == f"stsa.{'fine' if fine else 'binary'}.{split}:{per_class * len(labels)}"


FIRST_SST_TRAIN = RawExample(
    text="a stirring , funny and finally transporting re-imagining of beauty and the beast and 1930s horror films",
    label="1",
    source_id="stsa.binary.train:1",
)


def test_sst_excerpt_rows(data_dir: Path) -> None:
    train = SstReader(fine=False).read(data_dir / "sst", "train")
    assert train[0] == FIRST_SST_TRAIN
    fine_train = SstReader(fine=True).read(data_dir / "sst", "train")
    assert (fine_train[0].text, fine_train[0].label) == (train[0].text, "4")


@pytest.mark.release
def test_sst_rows(release_dir: Path) -> None:
    data_dir = release_dir
    train = SstReader(fine=False).read(data_dir / "sst", "train")
    assert train[0] == FIRST_SST_TRAIN
    assert (train[3460].text, train[3460].label) == ("a timid , soggy near miss .", "0")
    assert (train[-1].text, train[-1].label) == (
        "a deliciously nonsensical comedy about a city coming apart at its seams .",
        "1",
    )
    assert train[-1].source_id == "stsa.binary.train:6920"

    fine_train = SstReader(fine=True).read(data_dir / "sst", "train")
    assert (fine_train[0].text, fine_train[0].label) == (train[0].text, "4")
    fine_dev = SstReader(fine=True).read(data_dir / "sst", "dev")
    assert fine_dev[499].label == "2"
    assert fine_dev[499].text.startswith("a movie that hovers somewhere between an acute character study")
    fine_test = SstReader(fine=True).read(data_dir / "sst", "test")
    assert (fine_test[-1].text, fine_test[-1].label) == ("but here 's the real damn : it is n't funny , either .", "0")


def test_sst_splits_present(data_dir: Path, tmp_path: Path) -> None:
    assert SstReader(fine=False).splits_present(data_dir / "sst") == {"train": True, "dev": True, "test": True}
    (tmp_path / "stsa.fine.train").write_text("2 fine .\n", encoding="utf-8")
    assert SstReader(fine=True).splits_present(tmp_path) == {"train": True, "dev": False, "test": False}
    assert SstReader(fine=False).splits_present(tmp_path) == {"train": False, "dev": False, "test": False}


@pytest.mark.parametrize("bad_line", ["nolabel", "3 a binary file has no label 3 .", ""])
def test_sst_malformed_line(tmp_path: Path, bad_line: str) -> None:
    (tmp_path / "stsa.binary.dev").write_text(f"1 good .\n{bad_line}\n0 bad .\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"stsa\.binary\.dev:2: expected '<label> <sentence>'"):
        SstReader(fine=False).read(tmp_path, "dev")


def test_sst_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"stsa\.binary\.test: file not found"):
        SstReader(fine=False).read(tmp_path, "test")


# --- IMDB --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imdb(data_dir: Path) -> dict[str, list[RawExample]]:
    reader = ImdbReader("polarity")
    return {split: reader.read(data_dir / "imdb", split) for split in ("train", "test")}


@pytest.fixture(scope="module")
def imdb_release(release_dir: Path) -> dict[str, list[RawExample]]:
    reader = ImdbReader("polarity")
    return {split: reader.read(release_dir / "imdb", split) for split in ("train", "test")}


@pytest.fixture(scope="module")
def imdb_rating_train(release_dir: Path) -> list[RawExample]:
    return ImdbReader("rating").read(release_dir / "imdb", "train")


@pytest.mark.release
def test_imdb_counts(imdb_release: dict[str, list[RawExample]]) -> None:
    for split in ("train", "test"):
        assert Counter(example.label for example in imdb_release[split]) == {"neg": 12500, "pos": 12500}


def test_imdb_excerpt_counts(data_dir: Path, imdb: dict[str, list[RawExample]]) -> None:
    ratings = ImdbReader("rating")
    for split in ("train", "test"):
        assert Counter(example.label for example in imdb[split]) == {"neg": 16, "pos": 16}
        rated = ratings.read(data_dir / "imdb", split)
        assert [e.source_id for e in rated] == [e.source_id for e in imdb[split]]  # the same reviews, other labels
        assert Counter(e.label for e in rated) == {r: 4 for r in ("1", "2", "3", "4", "7", "8", "9", "10")}
    assert (imdb["train"][0].source_id, imdb["train"][0].label) == ("aclImdb/train/neg/0_3.txt", "neg")
    assert imdb["train"][0].text.startswith("Story of a man who has unnatural feelings for a pig. Starts out with")
    assert imdb["test"][0].text.startswith("Once again Mr. Costner has dragged out a movie for far longer than")


@pytest.mark.release
def test_imdb_rating_histograms(imdb_release: dict[str, list[RawExample]], imdb_rating_train: list[RawExample]) -> None:
    imdb = imdb_release
    assert Counter(example.label for example in imdb_rating_train) == {
        "1": 5100,
        "2": 2284,
        "3": 2420,
        "4": 2696,
        "7": 2496,
        "8": 3009,
        "9": 2263,
        "10": 4732,
    }
    # Same reviews in the same order as the polarity reader; only the label differs.
    assert [e.source_id for e in imdb_rating_train] == [e.source_id for e in imdb["train"]]
    test_ratings = Counter(e.source_id.rsplit("_", 1)[1].removesuffix(".txt") for e in imdb["test"])
    assert test_ratings == {"1": 5022, "2": 2302, "3": 2541, "4": 2635, "7": 2307, "8": 2850, "9": 2344, "10": 4999}


@pytest.mark.release
def test_imdb_rows(imdb_release: dict[str, list[RawExample]], imdb_rating_train: list[RawExample]) -> None:
    train, test = imdb_release["train"], imdb_release["test"]
    # Sorted member names: neg before pos, ids compared as text.
    assert (train[0].source_id, train[0].label) == ("aclImdb/train/neg/0_3.txt", "neg")
    assert train[0].text.startswith("Story of a man who has unnatural feelings for a pig. Starts out with a opening")
    assert train[0].text.endswith("Future stars Sally Kirkland and Frederic Forrest can be seen briefly.")
    assert (imdb_rating_train[0].label, imdb_rating_train[-1].label) == ("3", "7")
    assert (train[-1].source_id, train[-1].label) == ("aclImdb/train/pos/9_7.txt", "pos")
    assert train[-1].text.startswith("Working-class romantic drama from director Martin Ritt is as unbelievable")
    assert (test[0].source_id, test[0].label) == ("aclImdb/test/neg/0_2.txt", "neg")
    assert test[0].text.startswith("Once again Mr. Costner has dragged out a movie for far longer than necessary.")
    assert test[-1].source_id == "aclImdb/test/pos/9_7.txt"
    assert test[-1].text.startswith("I've seen this story before but my kids haven't.")
    middle = _by_id(train)["aclImdb/train/pos/0_9.txt"]
    assert middle.label == "pos"
    assert middle.text.startswith("Bromwell High is a cartoon comedy. It ran at the same time as some other programs")


def test_imdb_line_breaks_become_spaces(imdb: dict[str, list[RawExample]]) -> None:
    review = _by_id(imdb["train"])["aclImdb/train/pos/10000_8.txt"]
    # The file has "...on the streets.<br /><br />But what if..." and "...Monopoly money.<br /><br />Or maybe...".
    assert "end up on the streets.  But what if you were given" in review.text
    assert review.text.endswith("Monopoly money.  Or maybe this film will inspire you to help others.")
    assert not any("<br" in example.text for split in imdb.values() for example in split)


def test_imdb_splits_present_is_cached(data_dir: Path) -> None:
    reader = ImdbReader("polarity")
    assert reader.splits_present(data_dir / "imdb") == {"train": True, "test": True}
    hits = imdb_module._archive_parts.cache_info().hits
    assert reader.splits_present(data_dir / "imdb") == {"train": True, "test": True}
    assert imdb_module._archive_parts.cache_info().hits == hits + 1


def test_imdb_official_archive_skips_unsup(tmp_path: Path) -> None:
    _write_tar(
        tmp_path / "aclImdb_v1.tar.gz",
        {
            "aclImdb/train/pos/1_10.txt": b"Great.<br /><br />Really.",
            "aclImdb/train/neg/2_1.txt": b"Awful.",
            "aclImdb/train/unsup/3_0.txt": b"No label.",
            "aclImdb/train/labeledBow.feat": b"9 0:1\n",
            "aclImdb/test/neg/4_4.txt": b"Dull.",
        },
    )
    reader = ImdbReader("rating")
    assert reader.splits_present(tmp_path) == {"train": True, "test": False}
    assert reader.read(tmp_path, "train") == [
        RawExample(text="Awful.", label="1", source_id="aclImdb/train/neg/2_1.txt"),
        RawExample(text="Great.  Really.", label="10", source_id="aclImdb/train/pos/1_10.txt"),
    ]


def test_imdb_unpacked_folder(tmp_path: Path) -> None:
    for name, text in {
        "train/pos/7_8.txt": "Fine film.",
        "train/neg/12_2.txt": "Bad<br />film.",
        "train/unsup/5_0.txt": "?",
        "test/pos/1_9.txt": "Yes.",
        "test/neg/3_1.txt": "No.",
    }.items():
        path = tmp_path / "aclImdb" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    reader = ImdbReader("polarity")
    assert reader.splits_present(tmp_path) == {"train": True, "test": True}
    assert reader.read(tmp_path, "train") == [
        RawExample(text="Bad film.", label="neg", source_id="aclImdb/train/neg/12_2.txt"),
        RawExample(text="Fine film.", label="pos", source_id="aclImdb/train/pos/7_8.txt"),
    ]


def test_imdb_malformed(tmp_path: Path) -> None:
    _write_tar(tmp_path / "aclImdb_v1_labeled.tar.gz", {"aclImdb/train/pos/5_5.txt": b"A rating of 5 is not pos."})
    with pytest.raises(DataError, match=r"aclImdb/train/pos/5_5\.txt: expected a review named <id>_<rating>\.txt"):
        ImdbReader("polarity").read(tmp_path, "train")
    (tmp_path / "aclImdb_v1_labeled.tar.gz").write_bytes(b"not a gzip file")
    with pytest.raises(DataError, match=r"aclImdb_v1_labeled\.tar\.gz: not a readable \.tar\.gz archive"):
        ImdbReader("polarity").read(tmp_path, "train")


# --- AG News -----------------------------------------------------------------------------------------


@pytest.mark.release
def test_ag_news_counts(release_dir: Path) -> None:
    test = AgNewsReader().read(release_dir / "ag_news", "test")
    assert Counter(example.label for example in test) == {
        "World": 1900,
        "Sports": 1900,
        "Business": 1900,
        "Sci/Tech": 1900,
    }
    assert not any("\\" in example.text for example in test)


def test_ag_news_excerpt_counts_and_splits(data_dir: Path) -> None:
    reader = AgNewsReader()
    assert reader.splits_present(data_dir / "ag_news") == {"train": False, "test": True}
    test = reader.read(data_dir / "ag_news", "test")
    assert Counter(example.label for example in test) == {"World": 10, "Sports": 10, "Business": 10, "Sci/Tech": 10}
    # Backslashes are the corpus's line breaks (and the escape of "$"); none survives.
    assert any("\\" in line for line in gzip.open(data_dir / "ag_news" / "test.csv.gz", "rt"))
    assert not any("\\" in example.text for example in test)
    with pytest.raises(DataError, match=r"neither train\.csv\.gz nor train\.csv found"):
        reader.read(data_dir / "ag_news", "train")


def test_ag_news_rows(data_dir: Path) -> None:
    test = AgNewsReader().read(data_dir / "ag_news", "test")
    assert test[0] == RawExample(
        text="Fears for T N pension after talks Unions representing workers at Turner   Newall say they are "
        "'disappointed' after talks with stricken parent firm Federal Mogul.",
        label="Business",
        source_id="test.csv.gz:1",
    )
    assert test[1].label == "Sci/Tech"
    assert "TORONTO, Canada -- A second team of rocketeers competing for the  #36;10 million" in test[1].text
    # Row 8 has "\\FOAF/LOAF", "social\network" and "distribution.\\I think": line breaks, not "\n" escapes.
    assert test[7].text.startswith("FOAFKey: FOAF, PGP, Key Distribution, and Bloom Filters   FOAF/LOAF  and bloom")
    assert "properties for social network and whitelist distribution.  I think we can" in test[7].text


@pytest.mark.release
def test_ag_news_release_rows(release_dir: Path) -> None:
    data_dir = release_dir
    test = AgNewsReader().read(data_dir / "ag_news", "test")
    assert (test[3799].label, test[3799].source_id) == ("World", "test.csv.gz:3800")
    assert test[3799].text.startswith("Flight From Hong Kong Diverted in UK LONDON Oct. 14, 2004 - A Virgin Atlantic")
    described = AgNewsReader(drop_titles=True).read(data_dir / "ag_news", "test")  # J&W: no title
    assert described[0].text == (
        "Unions representing workers at Turner   Newall say they are 'disappointed' after talks with stricken "
        "parent firm Federal Mogul."
    )
    assert [e.source_id for e in described] == [e.source_id for e in test]
    assert test[-1] == RawExample(
        text="EBay gets into rentals EBay plans to buy the apartment and home rental service Rent.com for  $415 "
        "million, adding to its already exhaustive breadth of offerings.",
        label="Business",
        source_id="test.csv.gz:7600",
    )


def test_ag_news_uncompressed_download_reads_the_same(data_dir: Path, tmp_path: Path) -> None:
    with gzip.open(data_dir / "ag_news" / "test.csv.gz", "rb") as packed, (tmp_path / "test.csv").open("wb") as plain:
        shutil.copyfileobj(packed, plain)
    shutil.copy(data_dir / "ag_news" / "classes.txt", tmp_path / "classes.txt")
    reader = AgNewsReader()
    assert reader.splits_present(tmp_path) == {"train": False, "test": True}
    from_gz = reader.read(data_dir / "ag_news", "test")
    from_csv = reader.read(tmp_path, "test")
    assert [(e.text, e.label) for e in from_csv] == [(e.text, e.label) for e in from_gz]
    assert from_csv[-1].source_id == "test.csv:40"


def test_ag_news_full_download_without_classes_file(tmp_path: Path) -> None:
    (tmp_path / "test.csv").write_text('"2","Goal","A late goal.\\\\Fans cheered."\n', encoding="utf-8")
    with gzip.open(tmp_path / "train.csv.gz", "wt", encoding="utf-8") as train:
        train.write('"4","Chips","Faster\\chips ""soon"""\n"1","Vote","Polls open"\n')
    reader = AgNewsReader()
    assert reader.splits_present(tmp_path) == {"train": True, "test": True}
    assert [(e.text, e.label) for e in reader.read(tmp_path, "train")] == [
        ('Chips Faster chips "soon"', "Sci/Tech"),
        ("Vote Polls open", "World"),
    ]
    assert [(e.text, e.label) for e in reader.read(tmp_path, "test")] == [
        ("Goal A late goal.  Fans cheered.", "Sports")
    ]


@pytest.mark.parametrize("bad_row", ['"5","Title","Description"', '"1","Title only"', '"x","Title","Description"'])
def test_ag_news_malformed_row(tmp_path: Path, bad_row: str) -> None:
    (tmp_path / "test.csv").write_text(f'"3","Ok","Fine"\n{bad_row}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"test\.csv: row 2: expected"):
        AgNewsReader().read(tmp_path, "test")


# --- 20 Newsgroups -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sports(data_dir: Path) -> dict[str, list[RawExample]]:
    reader = NewsgroupsReader(SPORTS)
    return {split: reader.read(data_dir / "20newsgroups", split) for split in ("train", "test")}


@pytest.fixture(scope="module")
def sports_release(release_dir: Path) -> dict[str, list[RawExample]]:
    reader = NewsgroupsReader(SPORTS)
    return {split: reader.read(release_dir / "20newsgroups", split) for split in ("train", "test")}


@pytest.mark.release
def test_newsgroups_sports_counts(sports_release: dict[str, list[RawExample]]) -> None:
    sports = sports_release
    assert Counter(e.label for e in sports["train"]) == {"rec.sport.baseball": 597, "rec.sport.hockey": 600}
    assert Counter(e.label for e in sports["test"]) == {"rec.sport.baseball": 397, "rec.sport.hockey": 399}


def test_newsgroups_excerpt_counts(data_dir: Path, sports: dict[str, list[RawExample]]) -> None:
    for split in ("train", "test"):
        assert Counter(e.label for e in sports[split]) == {"rec.sport.baseball": 15, "rec.sport.hockey": 15}
        every = Counter(e.label for e in NewsgroupsReader(None).read(data_dir / "20newsgroups", split))
        assert len(every) == 20 and sum(every.values()) == 18 * 2 + 2 * 15


@pytest.mark.release
def test_newsgroups_all_groups_counts(release_dir: Path) -> None:
    reader = NewsgroupsReader(None)
    train = Counter(e.label for e in reader.read(release_dir / "20newsgroups", "train"))
    test = Counter(e.label for e in reader.read(release_dir / "20newsgroups", "test"))
    assert (sum(train.values()), sum(test.values())) == (11314, 7532)
    assert len(train) == len(test) == 20
    assert (train["soc.religion.christian"], test["soc.religion.christian"]) == (599, 398)
    assert (train["talk.religion.misc"], test["talk.religion.misc"]) == (377, 251)


def test_newsgroups_rows(sports: dict[str, list[RawExample]]) -> None:
    train, test = sports["train"], sports["test"]  # the first of each group is in the excerpt, as is 53884
    first = train[0]
    assert (first.source_id, first.label) == ("20_newsgroups/rec.sport.baseball/100521", "rec.sport.baseball")
    # The footer step strips the text first, so the body's leading tab goes too (as in scikit-learn).
    assert first.text.startswith("The Orioles' pitching staff again is having a fine exhibition season.\nFour")
    # scikit-learn's footer rule cuts at the last blank line: the sig and the last paragraph go.
    assert first.text.endswith(
        "It's pretty much set that Sutcliffe, Mussina, McDonald and Rhodes are the\nfirst four in the rotation."
    )
    assert "Here at Johns Hopkins" not in first.text and "Admiral" not in first.text

    middle = _by_id(test)["20_newsgroups/rec.sport.hockey/53884"]
    # Header, "... writes:" attribution, ">" quotes and the "--" signature are all removed.
    assert middle.text == (
        "\n\nAs the Rangers found out in last year's playoffs, it's too late to\n"
        "try line-juggling at this point.\n\ngld"
    )


@pytest.mark.release
def test_newsgroups_last_row(sports_release: dict[str, list[RawExample]]) -> None:
    last = sports_release["test"][-1]
    assert (last.source_id, last.label) == ("20_newsgroups/rec.sport.hockey/54900", "rec.sport.hockey")
    assert last.text.startswith("(Ali's letter deleted for brevity)\n\n\nRoger,\nYour responses might just exclude")
    assert last.text.rstrip().endswith("it's not something I personally advocate.  :-)")
    assert "writes:" not in last.text and "Valerie Hammerl" not in last.text


def test_strip_message_synthetic() -> None:
    message = (
        "From: fan@example.edu\nSubject: Re: game\n\n"
        "In article <1@example.edu> other@example.edu writes:\n"
        "> quoted line\n"
        "| piped quote\n"
        "Real body line one.\n"
        "Someone Else wrote:\n"
        "Real body line two.\n"
        "\n"
        "--\n"
        "Fan Name, Example University\n"
    )
    assert strip_message(message) == "Real body line one.\nReal body line two.\n"
    # Without a blank line the whole message is header.
    assert strip_message("From: a@b.c\nSubject: only headers\n") == ""
    # Without a signature, the last blank line still sets off a "footer" (scikit-learn's heuristic).
    assert strip_message("Subject: x\n\nFirst paragraph.\n\nLast paragraph.\n") == "First paragraph."


def test_newsgroups_splits_present(data_dir: Path, tmp_path: Path) -> None:
    reader = NewsgroupsReader(SPORTS)
    assert reader.splits_present(data_dir / "20newsgroups") == {"train": True, "test": True}
    shutil.copy(data_dir / "20newsgroups" / "20news-bydate_split_ids.tsv", tmp_path)
    assert reader.splits_present(tmp_path) == {"train": False, "test": False}


def test_newsgroups_malformed(tmp_path: Path) -> None:
    _write_tar(tmp_path / "20news-19997.tar.gz", {"20_newsgroups/rec.sport.hockey/1": b"Subject: a\n\nGo team.\n"})
    ids = tmp_path / "20news-bydate_split_ids.tsv"
    reader = NewsgroupsReader(SPORTS)
    ids.write_text("split\tnewsgroup\tfile_id\ntrain\trec.sport.hockey\t1\nvalid\trec.sport.hockey\t2\n")
    with pytest.raises(DataError, match=r"split_ids\.tsv:3: expected 'train\|test<TAB>newsgroup<TAB>file_id'"):
        reader.read(tmp_path, "train")
    ids.write_text("train\trec.sport.hockey\t1\n")
    with pytest.raises(DataError, match="expected the header line"):
        reader.read(tmp_path, "train")
    ids.write_text("split\tnewsgroup\tfile_id\ntrain\trec.sport.hockey\t1\ntrain\trec.sport.hockey\t2\n")
    with pytest.raises(DataError, match=r"1 messages listed in .* are not in it \(first: 20_newsgroups/rec\.sport"):
        reader.read(tmp_path, "train")
    ids.write_text("split\tnewsgroup\tfile_id\ntrain\trec.sport.hockey\t1\n")
    assert reader.read(tmp_path, "train") == [
        RawExample(text="Go team.\n", label="rec.sport.hockey", source_id="20_newsgroups/rec.sport.hockey/1")
    ]


def test_newsgroups_unknown_group() -> None:
    with pytest.raises(ValueError, match="unknown newsgroups"):
        NewsgroupsReader(("rec.sport.cricket",))
