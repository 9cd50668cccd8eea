"""The papers' published numbers: every table loads with its citation, keys that join onto gridlab's ids,
and the headline numbers of docs/analyses.md#published-headline-numbers as printed."""

from __future__ import annotations

import pandas as pd
import pytest

from gridlab.studies.published import CITATION_COLUMNS, DATA_DIR, TABLE_KEYS, citation, published


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
    # J&W's answer indices are their sorted label names; gridlab's classes are entailment, neutral, contradiction
    pairs = set(zip(snli["class_paper"], snli["class_name"], snli["pred"]))
    assert pairs == {("0", "contradiction", "2"), ("1", "entailment", "0"), ("2", "neutral", "1")}


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


PAPER_FILES = ("jain_wallace.csv", "serrano_smith.csv", "vashishth.csv", "meister.csv")


@pytest.mark.parametrize("name", PAPER_FILES)
def test_every_csv_row_says_where_its_number_was_printed(name):
    rows = pd.read_csv(DATA_DIR / name, dtype=str, keep_default_na=False)
    assert tuple(rows.columns[: len(CITATION_COLUMNS)]) == CITATION_COLUMNS
    assert len(rows) > 0
    for column in ("table", "row", "column", "field", "value"):
        assert (rows[column].str.strip() != "").all(), f"{name}: empty {column}"
    assert pd.to_numeric(rows["value"]).notna().all()  # as printed ("+0.2", "1.0"), but numbers
    assert rows["page"].str.fullmatch(r"\d*").all()  # a page number, or empty where the extraction shows none
    assert sorted(p.name for p in DATA_DIR.glob("*.csv")) == sorted(PAPER_FILES)


def test_vashishth_pages_from_the_extractions_page_numbers():
    rows = pd.read_csv(DATA_DIR / "vashishth.csv", dtype=str, keep_default_na=False)
    assert rows.groupby("table")["page"].unique().map(list).to_dict() == {
        "Table 1": ["5"],
        "Table 2": ["6"],
        "Table 3": ["6"],
    }


def test_hand_picked_numbers_as_printed():
    """Numbers read by hand off the papers' text (the shared papers folder), across the four papers."""
    # J&W Table 1, "AG News ... Test performance (LSTM)": 0.96
    jw1 = published("jw_table1").set_index("dataset")
    assert jw1.loc["agnews", ["metric", "value"]].tolist() == ["f1", 0.96]
    # J&W Table 2, ADR Tweets class 1, Leave-One-Out (BiLSTM): 0.40 ± 0.17, Sig. Frac. 0.69
    jw2 = published("jw_table2").set_index(["dataset", "encoder", "measure", "pred"])
    assert jw2.loc[("adr_tweets", "lstm", "tau_loo", "1"), ["mean", "std", "sig_frac"]].tolist() == [0.40, 0.17, 0.69]
    # S&S Table 2 (Kovács slides), Amazon: both flip 2.7, neither 87.1
    ss = published("ss_table2").set_index("dataset")
    assert ss.loc["amazon", ["pct_both", "pct_neither"]].tolist() == [2.7, 87.1]
    # Vashishth Table 2, Rocktaschel et al. (2016), CNN, Uniform (Train+Infer / Infer): -30.8 / -43.1
    va2 = published("vashishth_table2").query("model_paper == 'Rocktaschel et al. (2016)' and dataset == 'cnn'")
    assert va2.query("variant == 'uniform'").set_index("setting")["value"].to_dict() == {
        "train+infer": -30.8,
        "infer": -43.1,
    }
    # Vashishth Table 3, Luong et al. (2015), News Commentary: 12.7 ± 0.2
    va3 = published("vashishth_table3").query("model_paper == 'Luong et al. (2015)' and setting == 'base'")
    assert va3.set_index("dataset").loc["news_commentary", ["value", "std"]].tolist() == [12.7, 0.2]
    # Meister Table 6, Transformer Sparsemax, 20-News, D_y(I): 0.15 ± 0.16
    me6 = published("meister_table6").set_index(["encoder", "projection", "dataset", "measure"])
    assert me6.loc[("transformer", "sparsemax", "20news", "tau_dy_h"), ["mean", "std"]].tolist() == [0.15, 0.16]
    # Meister Table 3, SST: train 6355, test 1725, for both models
    me3 = published("meister_table3").query("dataset == 'sst'")
    assert me3["train_size"].tolist() == [6355, 6355] and me3["test_size"].tolist() == [1725, 1725]
    assert me3["train_size"].dtype == "int64"
