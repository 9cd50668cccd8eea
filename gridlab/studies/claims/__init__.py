"""What each paper concluded, as a statistic of gridlab's rows and a rule that decides it: one `Claim` per
conclusion, each deciding every condition (a configuration, or the shared part of two compared ones) its rows
can decide. `conclusions.py` turns the findings into the claims table, its overall rows and documents.

    >>> claim = CLAIMS["ss.erasure_order"]
    >>> findings = claim.decide(ReportInputs.load(expanded))   # [] when the rows cannot decide it
    >>> findings[0].verdict, findings[0].value, findings[0].detail
    ('holds', 0.25, 'median fraction erased: gradient 0.125 (95% [0.101, 0.149]) < attention 0.250 (95% ...')

One module per paper holds its claims, each declared beside the function that decides it; `base` holds what
they share. Every statistic is one the report's sections already compute (their functions are called there):
per model over its test instances, then the mean across seeds (`gridlab.report.stats`). Where a rule compares a
value with a reference, it reads the 95% t-interval across seeds: the claimed side when the whole interval lies
on it, the opposite side ("reversed") when the whole interval lies there, "partly" when it straddles. Where it
compares two models, their two intervals decide (`base.ordered`): apart in the claimed order, apart the other
way, or overlapping. With one seed there is no interval and the mean decides. The rules and their sources are
in docs/conclusions.md.
"""

from __future__ import annotations

from gridlab.studies.claims import jain_wallace, later_papers, meister, serrano_smith, vashishth, wiegreffe_pinter
from gridlab.studies.claims.base import HOLDS, NOT_RUN, PARTLY, REVERSED, STALE, VERDICTS, Claim, Finding

CLAIM_LIST: tuple[Claim, ...] = (
    *jain_wallace.CLAIMS,
    *serrano_smith.CLAIMS,
    *wiegreffe_pinter.CLAIMS,
    *vashishth.CLAIMS,
    *meister.CLAIMS,
    *later_papers.CLAIMS,
)
CLAIMS: dict[str, Claim] = {claim.id: claim for claim in CLAIM_LIST}

__all__ = ["CLAIMS", "CLAIM_LIST", "HOLDS", "NOT_RUN", "PARTLY", "REVERSED", "STALE", "VERDICTS", "Claim", "Finding"]
