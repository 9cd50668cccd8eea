"""`gridlab launch grids/quick.yaml` then `gridlab report`: every table of report.json is on disk, and its
numbers equal a recomputation straight from the Parquet rows (pandas only, none of gridlab.report's
helpers); a copy of the results without one analysis reports it missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gridlab.cli import app
from gridlab.store.layout import GridWorkspace
from gridlab.studies.walltime import wall_time

pytestmark = pytest.mark.slow

MODEL = ["dataset", "encoder", "attention"]  # the axes that vary in grids/quick.yaml (one seed each)
EXPECTED_TABLES = {
    "jw_table2",
    "jw_table1",
    "jw_permutation",
    "ss_table2",
    "ss_table2_published",
    "ss_fig5_fractions",
    "ss_gradient_vs_attention",
    "ss_exact_gap",
    "rationale_recovery",
}
EXPECTED_FIGURES = {"jw_fig2_tau_g", "jw_fig2_tau_loo", "jw_fig3", "ss_fig3", "ss_fig4", "ss_fig5", "rationale_auc"}


def rows(run, analysis: str) -> pd.DataFrame:
    return pd.read_parquet(run.results / "analyses" / analysis)


def table(run, table_id: str) -> pd.DataFrame:
    return pd.read_csv(run.report / f"{table_id}.csv", dtype={"pred": str})


def per_cell_then_seeds(frame: pd.DataFrame, keys: list[str], value) -> pd.Series:
    """`value(group)` per cell, then the mean over the cells (seeds) of each key."""
    per_cell = frame.groupby([*keys, "cell_id"]).apply(value, include_groups=False)
    return per_cell.groupby(level=list(range(len(keys)))).mean()


def test_manifest_files_exist(quick_report):
    manifest = quick_report.manifest
    kinds = {a["id"]: a["kind"] for a in manifest["artifacts"]}
    assert EXPECTED_TABLES <= {i for i, k in kinds.items() if k == "table"}
    assert EXPECTED_FIGURES <= {i for i, k in kinds.items() if k == "figure"}
    for artifact in manifest["artifacts"]:
        for name in artifact["files"]:
            assert (quick_report.report / name).stat().st_size > 0, name
    assert not [p for p in quick_report.report.parent.iterdir() if p.name.startswith(".report")]
    assert "sections" in quick_report.output and "tables" in quick_report.output


def test_jw_table2_equals_the_rows(quick_report):
    source = rows(quick_report, "importance_correlation")
    source["pred"] = source["pred"].astype(str)
    source["sig_g"] = (source["p_g"] < 0.05).astype(float).where(source["p_g"].notna())
    both = pd.concat([source, source.assign(pred="all")])
    ours = table(quick_report, "jw_table2").set_index([*MODEL, "pred"])
    expected = {
        "tau_g": per_cell_then_seeds(both, [*MODEL, "pred"], lambda g: g["tau_g"].dropna().mean()),
        "tau_loo": per_cell_then_seeds(both, [*MODEL, "pred"], lambda g: g["tau_loo"].dropna().mean()),
        "tau_g_sd": per_cell_then_seeds(both, [*MODEL, "pred"], lambda g: g["tau_g"].dropna().std(ddof=0)),
        "sig_g": per_cell_then_seeds(both, [*MODEL, "pred"], lambda g: g["sig_g"].dropna().mean()),
    }
    assert len(ours) == len(expected["tau_g"]) == 2 * 2 * 3  # 4 models x (class 0, class 1, all)
    for column, values in expected.items():
        pd.testing.assert_series_equal(
            ours[column].sort_index(), values.sort_index(), check_names=False, rtol=1e-9, obj=column
        )
    sst = ours.loc[("sst", "lstm", "additive", "0")]
    assert (sst["paper_tau_g"], sst["paper_sig_g"]) == (0.40, 0.59)  # J&W's SST BiLSTM class 0


def test_ss_contingency_equals_the_rows(quick_report):
    source = rows(quick_report, "erasure_single").dropna(subset=["flip_top"])
    top, rand = source["flip_top"].astype(bool), source["flip_rand"].astype(bool)
    source = source.assign(both=top & rand, top_only=top & ~rand, rand_only=~top & rand, neither=~top & ~rand)
    ours = table(quick_report, "ss_table2").set_index(MODEL)
    for cell, column in (
        ("both", "pct_both"),
        ("top_only", "pct_top_only"),
        ("rand_only", "pct_rand_only"),
        ("neither", "pct_neither"),
    ):
        expected = per_cell_then_seeds(source, MODEL, lambda g, c=cell: 100 * g[c].mean())
        pd.testing.assert_series_equal(
            ours[column].sort_index(), expected.sort_index(), check_names=False, rtol=1e-9, obj=column
        )
    assert ours[["pct_both", "pct_top_only", "pct_rand_only", "pct_neither"]].sum(axis=1).round(9).eq(100).all()


def test_erasure_fractions_and_comparison_equal_the_rows(quick_report):
    source = rows(quick_report, "erasure_multi")
    source = source[source["length"] >= 2]
    fractions = table(quick_report, "ss_fig5_fractions")
    ours = fractions[fractions["population"] == "all (T ≥ 2)"].set_index([*MODEL, "ranking"])  # every instance
    for ranking in ("attention", "random", "gradient", "grad_x_attention"):
        median = per_cell_then_seeds(source, MODEL, lambda g, r=ranking: g[f"frac_{r}"].dropna().median())
        flipped = per_cell_then_seeds(source, MODEL, lambda g, r=ranking: 100 * g[f"frac_{r}"].notna().mean())
        mine = ours.xs(ranking, level="ranking")
        pd.testing.assert_series_equal(mine["frac_median"].sort_index(), median.sort_index(), check_names=False)
        pd.testing.assert_series_equal(mine["pct_flipped"].sort_index(), flipped.sort_index(), check_names=False)

    def gradient_sooner(g: pd.DataFrame) -> float:
        a, b = g["removed_gradient"], g["removed_attention"]
        return 100 * (a.notna() & (b.isna() | (a < b))).mean()

    comparison = table(quick_report, "ss_gradient_vs_attention")
    comparison = comparison[comparison["first"] == "gradient"].set_index(MODEL)
    expected = per_cell_then_seeds(source, MODEL, gradient_sooner)
    pd.testing.assert_series_equal(
        comparison["pct_first_sooner"].sort_index(), expected.sort_index(), check_names=False
    )
    shares = comparison[["pct_first_sooner", "pct_second_sooner", "pct_tie", "pct_neither"]].sum(axis=1)
    assert shares.round(9).eq(100).all()


def test_rationale_precision_equals_the_rows(quick_report):
    source = rows(quick_report, "rationale_recovery")
    ours = table(quick_report, "rationale_recovery").set_index([*MODEL, "ranking"])
    for ranking in ("attention", "gradient", "grad_x_attention", "leave_one_out"):
        kept = source[source[f"precision_at_k_{ranking}"].notna()]
        values = zip(kept[f"precision_at_k_{ranking}"], kept["ks"])
        at_3 = kept.assign(p=[float(v[list(k).index(3)]) for v, k in values])
        expected = per_cell_then_seeds(at_3, MODEL, lambda g: g["p"].mean())
        auc = per_cell_then_seeds(source, MODEL, lambda g, r=ranking: g[f"auc_{r}"].dropna().mean())
        mine = ours.xs(ranking, level="ranking")
        pd.testing.assert_series_equal(mine["precision_at_3"].sort_index(), expected.sort_index(), check_names=False)
        pd.testing.assert_series_equal(mine["auc"].sort_index(), auc.sort_index(), check_names=False)


def test_fidelity_rows_are_the_sections_numbers(quick_report):
    """fidelity.csv's ours for J&W Table 2 is jw_table2.csv's number; the launch recorded its wall time."""
    fidelity = pd.read_csv(quick_report.report / "fidelity.csv", keep_default_na=False)
    assert set(fidelity["verdict"]) <= {"within", "outside", "not run", "undefined"}
    jw = table(quick_report, "jw_table2").set_index([*MODEL, "pred"])
    taus = fidelity[fidelity["quantity"] == "tau_g"]
    assert len(taus) == 2 * 2  # SST, lstm and average encoders, classes 0 and 1 (synthetic is not published)
    for number in taus.itertuples():
        encoder, attention = number.model.split(" + ")  # 'lstm + additive'
        pred = number.detail.removeprefix("class ")
        assert float(number.ours) == jw.loc[(number.dataset, encoder, attention, pred), "tau_g"]
        assert number.verdict in ("within", "outside") and number.seeds == 1 and number.reduced  # one seed
        assert set(number.cells.split()) and number.commit and number.grid_hash.startswith("sha256:")
    page = (quick_report.report / "index.html").read_text()
    tables = page.split("<table id=")[1:3]  # the claims table first, then the fidelity table
    assert tables[0].startswith('"conclusions"') and tables[1].startswith('"fidelity"')
    spent = wall_time(GridWorkspace(quick_report.results))
    assert spent.launches == 1 and spent.launch_seconds > 0 and spent.unfinished == 0
    assert spent.trials == 4 and spent.epochs >= 4 and spent.train_seconds > 0


def test_every_table_and_figure_names_its_cells_and_their_commits(quick_report):
    manifest = json.loads((quick_report.report / "report.json").read_text())
    assert manifest["provenance"]["grid_hash"].startswith("sha256:")
    assert manifest["provenance"]["rendered_with"].startswith(("git ", "gridlab "))
    trained = {p.name for p in GridWorkspace(quick_report.results).models.iterdir() if p.is_dir()}
    for artifact in manifest["artifacts"]:
        assert artifact["cells"] and set(artifact["cells"]) <= trained, artifact["id"]
        assert artifact["trained_with"] and "not recorded" not in artifact["trained_with"], artifact["id"]


def test_claims_are_the_rows_numbers(quick_report):
    """conclusions.csv: the BiLSTM's mean tau_g minus the average encoder's, per dataset, recomputed from the
    rows; the verdict follows its sign; claims whose analyses the quick grid lacks are not run."""
    claims = pd.read_csv(quick_report.report / "conclusions.csv")
    assert claims.columns.tolist()[:5] == ["claim", "condition", "statistic", "value", "verdict"]
    source = rows(quick_report, "importance_correlation")
    tau = per_cell_then_seeds(source, ["dataset", "encoder"], lambda g: g["tau_g"].dropna().mean())
    weak = claims[(claims["claim"] == "jw.weak_correlation") & (claims["condition"] != "all")]
    assert weak["condition"].tolist() == [
        "dataset sst, attention additive, seeds 0",
        "dataset synthetic, attention additive, seeds 0",
    ]
    for dataset, (value, verdict) in zip(("sst", "synthetic"), zip(weak["value"], weak["verdict"])):
        expected = tau[(dataset, "lstm")] - tau[(dataset, "average")]
        assert value == pytest.approx(expected, rel=1e-9)
        assert verdict == ("holds" if expected < 0 else "reversed")
    overall = claims[claims["condition"] == "all"].set_index("claim")["verdict"]
    assert overall["vashishth.pair"] == "not run" and overall["wp.diagnostic"] == "not run"
    assert overall["ss.erasure_order"] in ("holds", "partly", "reversed")


def test_a_grid_missing_one_analysis_reports_it(quick_report, tmp_path: Path):
    copy = tmp_path / "runs" / "quick"
    shutil.copytree(quick_report.results, copy, ignore=shutil.ignore_patterns("tune", "report"))
    shutil.rmtree(copy / "analyses" / "permutation")
    grid = yaml.safe_load(quick_report.grid_file.read_text())
    grid["results_dir"] = str(tmp_path / "runs")
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(grid))
    result = CliRunner().invoke(app, ["report", str(path)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((copy / "report" / "report.json").read_text())
    line = f"permutation: requested, but no rows yet — run `gridlab analyze {path}`"
    jain_wallace = next(s for s in manifest["sections"] if s["id"] == "jain_wallace")
    assert jain_wallace["rendered"] and any(m.startswith(line) for m in jain_wallace["missing"])
    assert "jw_fig3" not in jain_wallace["artifacts"] and "jw_table2" in jain_wallace["artifacts"]
    title = "Jain & Wallace (2019), Attention is not Explanation"
    assert any(m.startswith(f"{title}: {line}") for m in manifest["missing"])
    assert line in result.output
    assert not (copy / "report" / "jw_fig3.png").exists()


def test_the_python_api_reads_the_launch(quick_report):
    """`gridlab.open` on what the launch left: every cell trained with its run, and each analysis's rows those
    of its parts (in the `cell_id` column only, no hive `cell`), the same from the grid file and its folder."""
    import gridlab

    results = gridlab.open(quick_report.grid_file)
    cells = results.cells()
    assert set(cells["state"]) == {"trained"} and cells["test_accuracy"].notna().all()
    runs = results.runs()
    assert sorted(runs["tags.cell_id"]) == sorted(cells["cell_id"]) and set(runs["status"]) == {"FINISHED"}
    folder = gridlab.open(quick_report.results)
    for analysis in yaml.safe_load(quick_report.grid_file.read_text())["analyses"]:
        plain = rows(quick_report, analysis)
        read = results.rows(analysis)
        assert "cell" not in read.columns and len(read) == len(plain)
        assert sorted(read.columns) == sorted(c for c in plain.columns if c != "cell")
        pd.testing.assert_frame_equal(folder.rows(analysis), read)
    assert sorted(results.summary()["cell_id"]) == sorted(cells["cell_id"])
