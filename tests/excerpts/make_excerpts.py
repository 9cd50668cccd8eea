"""Cut the test excerpts out of the full releases: a few dozen records per split of every dataset, in the
release's own file names and formats, so that gridlab's readers read them unchanged.

    python tests/excerpts/make_excerpts.py /path/to/shared/data      # rewrites tests/excerpts/<folder>/

Records are picked deterministically (the first N of each class of each split, in file order, or the first
N lines where a file has no class), written with fixed timestamps (gzip mtime 0, tar members keep the
release's own metadata), so running it again on the same release gives byte-identical files. Each folder
gets a SOURCE.md: where the release came from (the lines of the release's own SOURCE.md), what was kept,
and the release files' sha256. `SHA256SUMS` lists the excerpt files' own sha256, which the tests check the
excerpts against (they are not the release: `gridlab data check` rightly reports them as mismatches).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import shutil
import tarfile
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUMS = "SHA256SUMS"
KEPT_BULLETS = (
    "Creators",
    "Licence",
    "Terms",
    "Source repository",
    "Path in the repository",
    "Paths in the repository",
)


def first_per_class(items: Iterable, key: Callable[[object], Hashable], n: int) -> list:
    """The items whose rank within their class (in input order) is below n, in input order."""
    seen: Counter = Counter()
    kept = []
    for item in items:
        k = key(item)
        if seen[k] < n:
            kept.append(item)
        seen[k] += 1
    return kept


def gzip_bytes(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as handle:
        handle.write(data)
    return out.getvalue()


def write_tar_gz(path: Path, members: Iterable[tuple[tarfile.TarInfo, bytes | None]]) -> None:
    """A .tar.gz of the given members in order (directories with None), each keeping the release's metadata."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            info = tarfile.TarInfo.frombuf(info.tobuf(tarfile.GNU_FORMAT), "utf-8", "surrogateescape")
            if data is None:
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip_bytes(raw.getvalue()))


def tar_members(path: Path) -> Iterator[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(path, "r|gz") as tar:
        for info in tar:
            handle = tar.extractfile(info) if info.isfile() else None
            yield info, (handle.read() if handle is not None else None)


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


# --- one function per release folder: writes the excerpt files, returns what was kept (for SOURCE.md) ---


def sst(release: Path, out: Path) -> list[str]:
    notes = []
    for prefix, n in (("stsa.binary", 20), ("stsa.fine", 8)):
        for split in ("train", "dev", "test"):
            lines = lines_of((release / f"{prefix}.{split}").read_bytes())
            kept = first_per_class(lines, lambda line: line.split(b" ", 1)[0], n)
            (out / f"{prefix}.{split}").write_bytes(b"".join(kept))
            notes.append(f"`{prefix}.{split}`: the first {n} lines of each label ({len(kept)} of {len(lines)})")
    (out / "trees").mkdir()
    for split in ("train", "dev", "test"):
        lines = lines_of(gzip.decompress((release / "trees" / f"{split}.txt.gz").read_bytes()))
        kept = first_per_class(lines, lambda line: line[1:2], 8)  # the root's label: "(3 (2 ..."
        (out / "trees" / f"{split}.txt.gz").write_bytes(gzip_bytes(b"".join(kept)))
        notes.append(f"`trees/{split}.txt.gz`: the first 8 trees of each root label ({len(kept)} of {len(lines)})")
    return notes


def imdb(release: Path, out: Path) -> list[str]:
    name = "aclImdb_v1_labeled.tar.gz"
    review = re.compile(r"aclImdb/(train|test)/(pos|neg)/\d+_(\d+)\.txt")
    seen: Counter = Counter()
    members = []
    for info, data in tar_members(release / name):
        match = review.fullmatch(info.name)
        if match is None:  # folders and the README; the vocabulary and expected-rating files are large
            if info.name.endswith(("imdb.vocab", "imdbEr.txt")):
                continue
            members.append((info, data))
        elif seen[match.groups()] < 4:
            seen[match.groups()] += 1
            members.append((info, data))
    write_tar_gz(out / name, members)
    return [
        f"`{name}`: the archive's folders and `aclImdb/README`, and of each split the first 4 reviews in archive "
        f"order of each star rating (8 ratings: 32 reviews per split, 16 pos and 16 neg); `imdb.vocab` and "
        "`imdbEr.txt` left out"
    ]


def ag_news(release: Path, out: Path) -> list[str]:
    for name in ("classes.txt", "readme.txt"):
        shutil.copyfile(release / name, out / name)
    lines = lines_of(gzip.decompress((release / "test.csv.gz").read_bytes()))
    kept = first_per_class(lines, lambda line: line[:3], 10)  # '"1"', the class index
    (out / "test.csv.gz").write_bytes(gzip_bytes(b"".join(kept)))
    return [
        f"`test.csv.gz`: the first 10 rows of each of the 4 classes ({len(kept)} of {len(lines)})",
        "`classes.txt`, `readme.txt`: whole",
    ]


def newsgroups(release: Path, out: Path) -> list[str]:
    ids = (release / "20news-bydate_split_ids.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    sports = ("rec.sport.baseball", "rec.sport.hockey")

    def per(row: str) -> int:
        return 15 if row.split("\t")[1] in sports else 2

    kept_rows, seen = [ids[0]], Counter()
    for row in ids[1:]:
        split, group, _ = row.rstrip("\n").split("\t")
        if seen[split, group] < per(row):
            kept_rows.append(row)
        seen[split, group] += 1
    (out / "20news-bydate_split_ids.tsv").write_text("".join(kept_rows), encoding="utf-8")
    wanted = {"20_newsgroups/{1}/{2}".format(*row.rstrip("\n").split("\t")) for row in kept_rows[1:]}
    members = [(i, d) for i, d in tar_members(release / "20news-19997.tar.gz") if i.isdir() or i.name in wanted]
    write_tar_gz(out / "20news-19997.tar.gz", members)
    return [
        "`20news-bydate_split_ids.tsv`: the header and, of each by-date split, the first 15 ids of "
        "rec.sport.baseball and rec.sport.hockey and the first 2 of each other group, in file order "
        f"({len(kept_rows) - 1} of {len(ids) - 1} ids)",
        f"`20news-19997.tar.gz`: every folder and the {len(wanted)} messages those ids name",
    ]


def babi(release: Path, out: Path) -> list[str]:
    name = "tasks_1-20_v1-2_en.tar.gz"
    members = []
    for info, data in tar_members(release / name):
        if data is not None and re.search(r"/qa\d+_[^/]*\.txt$", info.name):
            data = first_questions(data, 30)
        members.append((info, data))
    write_tar_gz(out / name, members)
    return [
        f"`{name}`: every member of the release, README and LICENSE whole; each task file cut after its 30th "
        "question line (a question's story is the lines before it, so every kept question reads as in the release)"
    ]


def first_questions(data: bytes, questions: int) -> bytes:
    """A bAbI file up to its `questions`-th question line: each question's story is the lines before it."""
    kept, count = [], 0
    for line in lines_of(data):
        if count == questions:
            break
        kept.append(line)
        count += b"\t" in line
    return b"".join(kept)


def multi30k(release: Path, out: Path) -> list[str]:
    names = sorted(p.name for p in release.glob("*.gz"))
    for name in names:
        lines = lines_of(gzip.decompress((release / name).read_bytes()))
        (out / name).write_bytes(gzip_bytes(b"".join(lines[:40])))
    return [f"{', '.join(f'`{n}`' for n in names)}: the first 40 lines of each (parallel: line i of .en and .de)"]


def sick(release: Path, out: Path) -> list[str]:
    lines = lines_of(gzip.decompress((release / "SICK.txt.gz").read_bytes()))
    header, rows = lines[0], lines[1:]

    def split_and_label(row: bytes) -> tuple[bytes, bytes]:
        fields = row.rstrip(b"\r\n").split(b"\t")
        return fields[-1], fields[3]

    kept = first_per_class(rows, split_and_label, 12)
    data = b"".join([header, *kept])
    (out / "SICK.txt.gz").write_bytes(gzip_bytes(data.rstrip(b"\r\n")))  # the release ends without a newline
    return [
        f"`SICK.txt.gz`: the header and the first 12 pairs of each label in each SemEval_set, in file order "
        f"({len(kept)} of {len(rows)} pairs)"
    ]


def snli(release: Path, out: Path) -> list[str]:
    notes = []
    for split in ("dev", "test"):
        name = f"snli_1.0_{split}.jsonl.gz"
        lines = lines_of(gzip.decompress((release / name).read_bytes()))
        kept = first_per_class(lines, lambda line: json.loads(line)["gold_label"], 12)
        (out / name).write_bytes(gzip_bytes(b"".join(kept)))
        notes.append(f"`{name}`: the first 12 lines of each gold label, `-` included ({len(kept)} of {len(lines)})")
    return notes


def esnli(release: Path, out: Path) -> list[str]:
    name = "esnli_dev_test_preprocessed.tar.gz"
    members = []
    for info, data in tar_members(release / name):
        members.append((info, None if data is None else b"".join(lines_of(data)[:40])))
    write_tar_gz(out / name, members)
    return [f"`{name}`: every member, cut to its first 40 lines (line i of each file is the same pair)"]


def movie_rationales(release: Path, out: Path) -> list[str]:
    name = "zaidan_movie_review_rationales.tar.gz"
    review = re.compile(r"movies/(?:with|no)Rats_(pos|neg)/(?:pos|neg)R?_(\d)(\d\d)\.txt")
    members = []
    for info, data in tar_members(release / name):
        match = review.fullmatch(info.name)
        if match is None:
            members.append((info, data))
        elif int(match[3]) < (12 if match[2] in "89" else 3):
            members.append((info, data))
    write_tar_gz(out / name, members)
    return [
        f"`{name}`: every folder; of each of withRats_pos, withRats_neg, noRats_pos and noRats_neg the first 3 "
        "reviews of each training fold 0-7 (number 000-002, 100-102, ...) and the first 12 of fold 8 (test) and "
        "fold 9 (dev, untagged in the release): train 48, dev 24, test 24 reviews per folder pair"
    ]


EXCERPTS: dict[str, Callable[[Path, Path], list[str]]] = {
    "sst": sst,
    "imdb": imdb,
    "ag_news": ag_news,
    "20newsgroups": newsgroups,
    "babi": babi,
    "multi30k": multi30k,
    "sick": sick,
    "snli": snli,
    "esnli": esnli,
    "movie_rationales": movie_rationales,
}


def provenance(source_md: str) -> list[str]:
    """The release SOURCE.md's title and its bullets on creators, terms and where the files came from
    (each with its continuation lines), verbatim."""
    lines = source_md.splitlines()
    kept = [lines[0]]
    keep = False
    for line in lines[1:]:
        if line.startswith("- "):
            keep = line[2:].startswith(KEPT_BULLETS) or line.startswith("- Commit:")
        elif not line.startswith("  "):
            keep = False
        if keep:
            kept.append(line)
    return kept


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_md(folder: str, release: Path, out: Path, notes: list[str]) -> str:
    origin = provenance((release / "SOURCE.md").read_text(encoding="utf-8"))
    files = sorted(p for p in release.rglob("*") if p.is_file() and p.name != "SOURCE.md")
    return "\n".join(
        [
            f"# Test excerpt of `{folder}`: {origin[0].lstrip('# ')}",
            "",
            "A few dozen records per split cut from the full release by `tests/excerpts/make_excerpts.py` (same",
            "file names, formats and archive layout), so the tests read real data on a machine with none. It is",
            "not the release: `gridlab data check` reports its files as mismatches, and tests needing the whole",
            "release are marked `release` and read `$GRIDLAB_DATA`.",
            "",
            "## What was kept",
            "",
            *[f"- {note}" for note in notes],
            "",
            "## Where the release came from (from its SOURCE.md)",
            "",
            *origin[1:],
            "",
            "## The release files it was cut from",
            "",
            "| file | sha256 |",
            "|---|---|",
            *[f"| {p.relative_to(release)} | {sha256(p)} |" for p in files],
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release_dir", type=Path, help="the folder of full releases (e.g. shared/data)")
    args = parser.parse_args()
    sums = []
    for folder, cut in EXCERPTS.items():
        out = HERE / folder
        if out.exists():
            shutil.rmtree(out)
        out.mkdir()
        notes = cut(args.release_dir / folder, out)
        (out / "SOURCE.md").write_text(source_md(folder, args.release_dir / folder, out, notes), encoding="utf-8")
        for path in sorted(out.rglob("*")):
            if path.is_file() and path.name != "SOURCE.md":
                sums.append(f"{sha256(path)}  {path.relative_to(HERE)}\n")
    (HERE / SUMS).write_text("".join(sums), encoding="utf-8")


if __name__ == "__main__":
    main()
