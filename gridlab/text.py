"""Words for counts in what a person reads: "1 cell", "2 cells", never "1 cells".

>>> counted(1, "cell"), counted(3, "analysis", "analyses")
('1 cell', '3 analyses')
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
