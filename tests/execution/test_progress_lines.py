"""What a person watching `gridlab launch` reads: a line per trained epoch (its selection metric on dev and
the epoch's time) and the analyses' shards with the time left at the pace so far."""

from __future__ import annotations

from gridlab.execution.actors import eta
from gridlab.execution.progress import epoch_line


def test_an_epoch_line_gives_the_selection_metric_and_the_epochs_time():
    config = {"train": {"epochs": 8, "selection_metric": "roc_auc"}}
    result = {"epoch": 3, "dev_accuracy": 0.81, "dev_roc_auc": 0.8912, "time_this_iter_s": 41.2}
    assert epoch_line(config, result) == "epoch 3/8, dev roc_auc 0.8912, 41 s/epoch"
    default = {"train": {"epochs": 2, "selection_metric": None}}
    assert epoch_line(default, {"epoch": 1, "dev_accuracy": 0.5}) == "epoch 1/2, dev accuracy 0.5"
    assert epoch_line(default, {"epoch": 1, "dev_bleu": 21.5, "dev_loss": 3.0}) == "epoch 1/2, dev bleu 21.5"


def test_the_time_left_follows_the_pace_of_the_shards_done():
    assert eta(60.0, 2, 10, 1) == " (about 4m00s left)"  # 30 s a shard, 8 left, one at a time
    assert eta(60.0, 2, 10, 2) == " (about 2m00s left)"  # two actors at once
    assert eta(10.0, 5, 6, 1) == " (about 2s left)"
    assert eta(10.0, 0, 6, 1) == "" and eta(10.0, 6, 6, 1) == ""
