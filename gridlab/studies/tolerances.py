"""How far ours may lie from a published number and still count as reproducing it: one rule per kind of
quantity, each with the reason for its width. The verdict is one rule, within iff |ours − published| ≤
tolerance (`fidelity.verdict_for`); the tolerance is fixed here and nowhere else.

    >>> tolerance_for("tau_g", published_seed_std=None, published=0.40)
    Width(rule=Tolerance(rule='kendall_tau', ...), width=0.07, source='stated default')
    >>> tolerance_for("accuracy", published_seed_std=0.5, published=83.4)   # Vashishth, 83.4 ± 0.5 points
    Width(rule=Tolerance(rule='accuracy_points', ...), width=1.0, source="paper's spread")
    >>> tolerance_for("accuracy_change", published_seed_std=None, published=-0.9).width   # capped: 0.9
    0.9

Where a paper prints a spread over its own runs (Vashishth's base accuracies and BLEU), the width is
`seed_std_multiple` times that spread (source "paper's spread"). Otherwise it is the rule's stated default,
never wider than the effect the paper reports: min(default, |published|), and never below half a unit of the
paper's last printed digit (`printed_step`), so that a printed 0.0 is matched by what rounds to it (source
"stated default" or "stated default, capped at the effect"). Spreads over a model's instances (J&W's and
Meister's "±") say nothing about how far a rerun moves a mean, and are never used. The authors' own rerun of
their code (`reruns.py`) widens nothing: it is judged in a column of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PAPER_SPREAD, DEFAULT, CAPPED = "paper's spread", "stated default", "stated default, capped at the effect"


@dataclass(frozen=True)
class Tolerance:
    rule: str
    quantities: tuple[str, ...]  # the fidelity quantities it covers
    default: float  # in the quantity's unit
    unit: str
    reason: str
    printed_step: float  # the last printed digit of the papers' numbers of this kind: half of it is the floor
    seed_std_multiple: float | None = None  # where the paper prints a std over runs: tolerance = this x that std


@dataclass(frozen=True)
class Width:
    rule: Tolerance
    width: float
    source: str  # PAPER_SPREAD, DEFAULT or CAPPED


TOLERANCES: tuple[Tolerance, ...] = (
    Tolerance(
        "kendall_tau",
        ("tau_g", "tau_loo", "tau_gy_x", "tau_dy_x", "tau_gy_h", "tau_dy_h"),
        0.07,
        "Kendall τ",
        "Stated default: neither J&W nor Meister print a spread of the mean τ over runs (their ± is over "
        "instances). 0.07 is about a fifth of the typical printed τ (0.3-0.4), small enough to keep 'moderate' "
        "apart from 'weak' correlation, the papers' claim; capped at the printed τ where that is smaller "
        "(20News, Meister's Transformers). The authors' rerun of their own code (J&W's graph_outputs) is its "
        "own column and widens nothing. Meister's Table 6 is the same statistic and gets the same width.",
        printed_step=0.01,
    ),
    Tolerance(
        "significant_fraction",
        ("sig_frac_g", "sig_frac_loo"),
        0.10,
        "share of instances",
        "Stated default: the share of instances with p < 0.05 moves with τ and with instance length (a "
        "p-value needs long instances), so it moves further than τ between runs; 0.10 is one decile of the "
        "instances, capped at the printed share where that is smaller.",
        printed_step=0.01,
    ),
    Tolerance(
        "test_performance",
        ("test_performance",),
        0.02,
        "fraction (0–1)",
        "Stated default: J&W and Meister (their Table 3) print no spread over runs. Two points of accuracy "
        "is about three times the seed spread Vashishth et al. report for the same single-sequence models "
        "(≤ 0.7 points). J&W report F1 for classification where gridlab gives accuracy, so near the bound "
        "the metric matters too.",
        printed_step=0.01,
    ),
    Tolerance(
        "accuracy_points",
        ("accuracy",),
        2.0,
        "accuracy points",
        "Twice the paper's ± over its runs where it prints one (Vashishth's base accuracies): a faithful "
        "mean falls within two of the paper's standard deviations about 95% of the time. Default 2 points.",
        printed_step=0.1,
        seed_std_multiple=2.0,
    ),
    Tolerance(
        "accuracy_change_points",
        ("accuracy_change",),
        2.0,
        "accuracy points",
        "Stated default, capped at the effect: the paper prints no spread for a change, and a change is the "
        "paper's finding itself (Vashishth's single-sequence changes are -0.9 to +0.2 points), so ours is "
        "within only when it lies no further from the printed change than the change is large (±0.05 "
        "around a printed 0.0). 2 points applies only to changes of 2 points or more.",
        printed_step=0.1,
    ),
    Tolerance(
        "bleu_points",
        ("bleu",),
        1.0,
        "BLEU",
        "Twice the paper's ± over its runs (Vashishth Table 3 prints 0.1–0.2 BLEU); default 1 BLEU, the "
        "usual spread between tokenisations of the same output (sacrebleu vs the paper's scorer).",
        printed_step=0.1,
        seed_std_multiple=2.0,
    ),
    Tolerance(
        "bleu_change_points",
        ("bleu_change",),
        1.0,
        "BLEU",
        "Stated default, capped at the effect: a change in BLEU carries both models' spread (0.1–0.2 each "
        "in Vashishth Table 3) and the scorer's; 1 BLEU, never more than the printed change.",
        printed_step=0.1,
    ),
    Tolerance(
        "flip_share_points",
        ("pct_both", "pct_top_only", "pct_rand_only", "pct_neither"),
        3.0,
        "% of instances",
        "Stated default: S&S print no spread over runs; their four corpora put 'only i* flips' between 7.6 and "
        "12.2 % and 'only r flips' between 1.3 and 2.7 %, so 3 points keeps 'i* flips far more often than r' "
        "apart from 'about as often', the paper's claim; capped at the printed share where that is smaller.",
        printed_step=0.1,
    ),
    Tolerance(
        "normalised_entropy",
        ("entropy_gh_x",),
        0.05,
        "normalised entropy (0–1)",
        "Stated default: Meister's ± is over instances, not runs, and with thousands of test instances the "
        "mean's sampling error is below 0.01; what moves it is training. 0.05 is 5% of the scale.",
        printed_step=0.01,
    ),
    Tolerance(
        "lambda_correlation",
        ("corr_lambda_entropy_gy_x",),
        0.2,
        "Kendall τ",
        "A rank correlation over a handful of λ values moves by 4 / (n (n − 1)) when one pair of points swaps: "
        "0.2 at n = 5 λ values, Meister's sweep size.",
        printed_step=0.001,
    ),
    Tolerance(
        "adversary_jsd",
        ("adversary_jsd", "jsd_eps_max_median"),
        0.05,
        "JSD (nats, ≤ ln 2)",
        "Stated default: Meister print no spread; the adversaries' JSD sits near the ln 2 ≈ 0.69 bound, "
        "so 0.05 (7% of the bound) separates 'near the bound' from 'clearly below it'. J&W's Fig. 4 median "
        "(ε-max JSD) gets the same width: its published value is the bound their text says the mass lies "
        "toward, so the test is the same question, near the bound or clearly below it.",
        printed_step=0.01,
    ),
)

_BY_QUANTITY = {q: rule for rule in TOLERANCES for q in rule.quantities}


def rule_for(quantity: str) -> Tolerance:
    """The rule of a quantity; a quantity without one is an error (a number is never judged without a width)."""
    if quantity not in _BY_QUANTITY:
        raise KeyError(f"no tolerance rule for quantity {quantity!r} (add one to gridlab/studies/tolerances.py)")
    return _BY_QUANTITY[quantity]


def tolerance_for(quantity: str, published_seed_std: float | None, published: float) -> Width:
    """The width for one published number: from the paper's spread over its runs where printed, else the
    rule's default capped at the printed effect |published| (floored at half the printed step)."""
    rule = rule_for(quantity)
    if rule.seed_std_multiple is not None and published_seed_std is not None and not math.isnan(published_seed_std):
        return Width(rule, rule.seed_std_multiple * float(published_seed_std), PAPER_SPREAD)
    effect = max(abs(float(published)), rule.printed_step / 2)
    if effect < rule.default:
        return Width(rule, round(effect, 6), CAPPED)
    return Width(rule, rule.default, DEFAULT)
