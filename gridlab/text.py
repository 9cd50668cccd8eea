"""Words for counts and times in what a person reads: "1 cell", "2 cells", never "1 cells"; "4m10s".

>>> counted(1, "cell"), counted(3, "analysis", "analyses"), duration(3725)
('1 cell', '3 analyses', '1h02m05s')
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def duration(seconds: float) -> str:
    """'1h02m05s', '4m10s', '12s'."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
