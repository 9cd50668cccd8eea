"""The papers' published numbers: every table loads with its citation, keys that join onto gridlab's ids,
and the headline numbers of docs/analyses.md#published-headline-numbers as printed."""

from __future__ import annotations

import pytest

from gridlab.report.published import TABLE_KEYS, citation, published


@pytest.mark.parametrize("key", TABLE_KEYS)
def test_every_table_cites_its_source(key):
    frame = published(key)
    assert len(frame) > 0
    assert frame["paper"].notna().all() and frame["table"].notna().all()
    assert frame["table"].str.match(r"(Table|Figure) ").all()
    frame.iloc[0, 0] = "changed"  # a fresh frame per call: callers may modify it
    assert published(key).iloc[0, 0] != "changed"


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(KeyError, match="jw_table2"):
        published("jw_table9")


def test_jain_wallace_table2_spec_numbers():
    paper = published("jw_table2").set_index(["dataset", "encoder", "measure", "pred"])
    for dataset, values in {
        "sst": (0.40, 0.38),
        "imdb": (0.37, 0.37),
        "20news": (0.08, 0.13),
        "agnews": (0.42, 0.35),
    }.items():
        assert paper.loc[(dataset, "lstm", "tau_g", "0"), "mean"] == values[0]
        assert paper.loc[(dataset, "lstm", "tau_g", "1"), "mean"] == values[1]
    sst = paper.loc[("sst", "lstm", "tau_loo", "0")]
    assert (sst["std"], sst["sig_frac"], sst["class_name"]) == (0.20, 0.47, "negative")
    assert paper.loc[("babi2", "average", "tau_g", "all"), "mean"] == 0.84
    averages = published("jw_table2").query("encoder == 'average' and dataset in ['sst', 'imdb', '20news', 'agnews']")
    assert averages["mean"].between(0.65, 0.77).all()  # docs/analyses.md: average encoder 0.65-0.77
    snli = published("jw_table2").query("dataset == 'snli'")
    assert snli["pred"].isna().all() and set(snli["class_paper"]) == {"0", "1", "2"}


def test_serrano_smith_table2_off_diagonals_as_in_spec():
    paper = published("ss_table2").set_index("dataset")
    spec = {"yahoo": (8.7, 1.3), "imdb_diao": (12.2, 1.4), "amazon": (7.6, 2.7), "yelp": (8.9, 1.9)}
    for dataset, (top_only, rand_only) in spec.items():
        assert (paper.loc[dataset, "pct_top_only"], paper.loc[dataset, "pct_rand_only"]) == (top_only, rand_only)
        cells = paper.loc[dataset, ["pct_both", "pct_top_only", "pct_rand_only", "pct_neither"]].sum()
        assert cells == pytest.approx(100, abs=0.15)  # the printed cells, rounded to 0.1, sum to 100
        assert 84 <= paper.loc[dataset, "pct_neither"] <= 90


def test_vashishth_permute_deltas_as_in_spec():
    paper = published("vashishth_table1").query("variant == 'permute' and model_paper == 'Bahdanau et al. (2015)'")
    assert paper.set_index("dataset")["value"].to_dict() == {"sst": -1.7, "imdb": -5.1, "agnews": -0.9, "yelp": -7.8}
    pair = published("vashishth_table2").query("variant == 'permute'")
    assert (pair["value"] < -25).all()  # "pair tasks drop by tens of points"
    base = published("vashishth_table1").query("setting == 'base'")
    assert base["std"].notna().all()


def test_meister_tables_as_in_spec():
    table1 = published("meister_table1").set_index(["encoder", "projection", "dataset"])
    assert table1.loc[("lstm", "softmax", "imdb"), "mean"] == 0.71
    assert table1.loc[("lstm", "softmax", "sst"), "mean"] == 0.93
    table6 = published("meister_table6").set_index(["encoder", "projection", "dataset", "measure"])
    assert table6.loc[("lstm", "softmax", "imdb", "tau_gy_x"), "mean"] == 0.36
    assert table6.loc[("lstm", "softmax", "sst", "tau_gy_x"), "mean"] == 0.25
    assert set(published("meister_table6")["measure"]) == {"tau_gy_x", "tau_dy_x", "tau_gy_h", "tau_dy_h"}
    assert "accuracy" not in published("meister_table5").columns  # garbled in the extraction: left out


def test_citation():
    assert citation("jw_table2") == "Jain & Wallace (2019), Table 2"


def test_jain_wallace_figure4_is_the_described_bound():
    paper = published("jw_figure4")
    sst = paper.set_index(["dataset", "encoder"]).loc[("sst", "lstm")]
    assert (sst["measure"], sst["value"], sst["table"], sst["section"]) == (
        "jsd_eps_max_median",
        0.69,
        "Figure 4",
        "§4.2.2",
    )
    assert "histogram" in sst["note"] and "not a printed statistic" in sst["note"]
    assert citation("jw_figure4") == "Jain & Wallace (2019), Figure 4"
