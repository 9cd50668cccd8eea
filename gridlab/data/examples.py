"""`RawExample`: one instance exactly as its source file gives it, before tokenisation.

Readers of the original formats (`gridlab.data.readers`) produce these; `gridlab.data.prepare` turns them
into token ids. Keeping the raw text means a changed preprocessing parameter rebuilds from the source.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RawExample:
    """One source instance.

    text:      the document, sentence, premise, story or translation source
    label:     the class name as the source writes it ("1", "pos", "ENTAILMENT", an answer word);
               empty for translation
    query:     hypothesis (NLI) or question (bAbI) for pair tasks
    target:    translation target sentence
    rationale: character spans [start, end) of `text` that annotators marked as the reason for the label
    source_id: where it came from (file name, line number), to trace a row back to the source
    """

    text: str
    label: str
    query: str | None = None
    target: str | None = None
    rationale: tuple[tuple[int, int], ...] = ()
    source_id: str = ""
