"""The original code's own outputs, where a paper's repository commits them: a second published reference
beside the printed number.

    >>> reruns("jw_table2").query("dataset == 'sst' and encoder == 'lstm'")   # pred, quantity, rerun

Jain & Wallace's repository (successar/AttentionExplanation, commit 425a89a) commits the tables its plotting
code wrote when the authors reran their experiments (`graph_outputs/`): for Table 2, the mean Kendall tau of
attention with the gradient and the share of significant instances per predicted class
(`GradientPval_kendalltau/<dataset>+<encoder>+tanh.csv`; `tanh` is the additive attention). Leave-one-out
is committed for all classes together only, so it has no rerun here. bAbI's files give the "Overall" row
(pred "all"); SNLI's classes are J&W's answer indices, their label names sorted (preprocess_data_QA.py:
0 contradiction, 1 entailment, 2 neutral), put in gridlab's order. On the 28 tau_g numbers of gridlab's
datasets the rerun lies 0.005-0.19 from the printed value (0.06 at the median; SST's BiLSTM 0.343 against
0.40): the authors did not reproduce their own table closer than that. The fidelity table shows the rerun
in a column of its own with its own verdict ("matches the rerun", `fidelity.rerun_verdict_for`); it never
widens the verdict against the printed number.

The numbers are in `reruns.csv` beside this module, one row per number with the published table it
belongs to and the repository, commit and file it was read from (full precision, as committed).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

PATH = Path(__file__).with_name("reruns.csv")
KEYS = ("dataset", "encoder", "attention", "pred", "quantity")


def reruns(table_key: str) -> pd.DataFrame:
    """KEYS + `rerun` of one published table (no rows where its repository commits none); `pred` as a
    string, as the published frames have it."""
    frame = pd.read_csv(PATH, dtype={"pred": str})
    return frame[frame["table_key"] == table_key].rename(columns={"value": "rerun"})[[*KEYS, "rerun"]]
