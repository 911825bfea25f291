"""summarize and its mergeable state, against numpy/scipy and the seed's batch references."""

from __future__ import annotations

import itertools
import json

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ragframe as rf
from ragframe.kernels.quantiles import QUANTILE_METHODS
from ragframe.stats.summary import PERCENTILES, SKETCH_ERROR

SCORE = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0, 1, allow_nan=False))


@st.composite
def scored_frames(draw, max_rows=40):
    n = draw(st.integers(0, max_rows))
    return pl.DataFrame(
        {
            "id": list(range(n)),
            "split": draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n)),
            "faithfulness": draw(st.lists(SCORE, min_size=n, max_size=n)),
            "faithfulness_passed": draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n)),
            "mrr": draw(st.lists(SCORE, min_size=n, max_size=n)),
        },
        schema={
            "id": pl.Int64,
            "split": pl.String,
            "faithfulness": pl.Float64,
            "faithfulness_passed": pl.Boolean,
            "mrr": pl.Float64,
        },
    )


def _reference(values: list, passed: list | None, method: str = "linear", bounds=(0.0, 1.0)) -> dict:
    """Summary statistics of one group computed independently with numpy and scipy.

    The t interval is scipy's, clipped to the score's bounds (ragframe scores lie in [0, 1]).
    """
    rows = len(values)
    x = np.array([v for v in values if v is not None], dtype=np.float64)
    out = {"count": x.size, "null_count": rows - x.size, "null_rate": (rows - x.size) / rows}
    if x.size:
        out |= {"mean": x.mean(), "std_pop": x.std(), "min": x.min(), "max": x.max()}
        out |= {name: np.quantile(x, q, method=method) for name, q in PERCENTILES.items()}
    if x.size > 1:
        out["std"] = x.std(ddof=1)
        if x.std() > 0:
            low, high = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
            if bounds is not None:
                low, high = np.clip([low, high], *bounds)
            out |= {"ci_low": low, "ci_high": high}
    out["pass_rate"] = None if passed is None else sum(p is True for p in passed) / rows
    return out


def _check(row: dict, expected: dict, exact_percentiles: bool = True) -> None:
    for key, value in expected.items():
        if value is None:
            assert row[key] is None, key
        elif key in PERCENTILES and exact_percentiles:
            assert row[key] == value, key
        else:
            assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scored_frames(), st.sampled_from(QUANTILE_METHODS))
def test_summarize_matches_numpy_per_group(df, method):
    if df.height == 0:
        return
    out = rf.summarize(df, by="split", percentile_method=method)
    assert out.columns[:2] == ["split", "metric"]
    groups = df.partition_by("split", as_dict=True, maintain_order=True)
    assert out.height == 2 * len(groups)
    for row in out.iter_rows(named=True):
        part = groups[(row["split"],)]
        passed = part["faithfulness_passed"].to_list() if row["metric"] == "faithfulness" else None
        _check(row, _reference(part[row["metric"]].to_list(), passed, method))


def test_summarize_whole_frame_and_metric_selection():
    df = pl.DataFrame({"ndcg_at_10": [0.1, 0.4, 0.9, None], "faithfulness": [1.0, 0.0, 0.5, 0.5], "x": [1, 2, 3, 4]})
    out = rf.summarize(df)
    assert out["metric"].to_list() == ["ndcg_at_10", "faithfulness"]  # x is not a score column
    _check(out.row(0, named=True), _reference([0.1, 0.4, 0.9, None], None))
    assert rf.summarize(df, metrics="x")["mean"].item() == 2.5
    _check(rf.summarize(df, metrics="x").row(0, named=True), _reference([1, 2, 3, 4], None, bounds=None))
    # the anchor seed's p95 is numpy's "higher" percentile
    assert rf.summarize(df, metrics="x", percentile_method="higher")["p95"].item() == 4.0


def test_summarize_edge_cases():
    df = pl.DataFrame(
        {"mrr": [None, None], "faithfulness": [0.5, None]}, schema={"mrr": pl.Float64, "faithfulness": pl.Float64}
    )
    out = {r["metric"]: r for r in rf.summarize(df).iter_rows(named=True)}
    assert out["mrr"]["count"] == 0 and out["mrr"]["null_rate"] == 1.0
    assert all(out["mrr"][k] is None for k in ("mean", "std", "std_pop", "min", "p50", "max", "ci_low"))
    assert out["faithfulness"]["std"] is None and out["faithfulness"]["std_pop"] == 0.0
    assert out["faithfulness"]["ci_low"] is None  # one value: no interval
    assert out["faithfulness"]["pass_rate"] is None  # no faithfulness_passed column
    empty = rf.summarize(df.clear())
    assert empty["count"].to_list() == [0, 0] and empty["null_rate"].to_list() == [None, None]
    constant = rf.summarize(pl.DataFrame({"mrr": [0.5, 0.5, 0.5]})).row(0, named=True)
    assert (constant["ci_low"], constant["ci_high"], constant["std"]) == (0.5, 0.5, 0.0)


def test_summarize_accepts_every_frame_kind():
    pd = pytest.importorskip("pandas")
    df = pl.DataFrame({"mrr": [0.0, 0.5, 1.0], "g": ["a", "b", "a"]})
    expected = rf.summarize(df, by="g")
    assert expected["g"].to_list() == ["a", "b"] and expected["mean"].to_list() == [0.5, 0.5]  # (0 + 1) / 2, 0.5
    frames = {
        "lazy": df.lazy(),
        "arrow": df.to_arrow(),
        "pandas": pd.DataFrame({"mrr": [0.0, 0.5, 1.0], "g": pd.Categorical(["a", "b", "a"])}),  # a category column
        "lazy categorical": df.lazy().with_columns(pl.col("g").cast(pl.Categorical)),
    }
    for kind, frame in frames.items():
        out = rf.summarize(frame, by="g")
        assert out.equals(expected) and out.schema == expected.schema, kind  # the slice column comes back as String


def test_bootstrap_interval_close_to_scipy():
    x = np.random.default_rng(7).beta(2, 5, size=400)
    out = rf.summarize(pl.DataFrame({"mrr": x}), ci="bootstrap", n_resamples=4000, seed=1).row(0, named=True)
    reference = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=4000, rng=1).confidence_interval
    width = reference.high - reference.low
    assert out["ci_low"] == pytest.approx(reference.low, abs=0.05 * width)
    assert out["ci_high"] == pytest.approx(reference.high, abs=0.05 * width)
    again = rf.summarize(pl.DataFrame({"mrr": x}), ci="bootstrap", n_resamples=4000, seed=1)
    assert again["ci_low"].item() == out["ci_low"]  # the seed fixes the resamples


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(scored_frames(max_rows=60), st.lists(st.integers(0, 60), max_size=4), st.sampled_from(["linear", "higher"]))
def test_merged_states_equal_the_whole(df, cuts, method):
    if df.height == 0:
        return
    edges = sorted({0, df.height, *[c for c in cuts if c < df.height]})
    parts = [df.slice(lo, hi - lo) for lo, hi in itertools.pairwise(edges)]
    merged = rf.merge_summary_states([rf.summary_state(p, by="split") for p in parts])
    got = merged.finalize(percentile_method=method)
    whole = rf.summarize(df, by="split", percentile_method=method)
    assert got.select("split", "metric").equals(whole.select("split", "metric"))
    for g, w in zip(got.iter_rows(named=True), whole.iter_rows(named=True)):
        for key in ("count", "null_count", "null_rate", "mean", "std", "std_pop", "min", "max", "pass_rate", "ci_low"):
            if w[key] is None:
                assert g[key] is None, key
            else:
                assert g[key] == pytest.approx(w[key], rel=1e-9, abs=1e-12), key
        for key in PERCENTILES:
            assert (g[key] is None) == (w[key] is None)
            if w[key] is not None:
                assert abs(g[key] - w[key]) <= SKETCH_ERROR, key


def test_state_sketch_is_exact_for_discrete_scores_and_roundtrips(tmp_path):
    df = pl.DataFrame({"mrr": [0.0, 1 / 3, 0.5, 1.0, 1.0, 0.5, 1 / 3] * 5})
    state = rf.summary_state(df.head(10)).merge(rf.summary_state(df.tail(df.height - 10)))
    got, whole = state.finalize().row(0, named=True), rf.summarize(df).row(0, named=True)
    for key, value in whole.items():  # one distinct value per sketch bin: percentiles exact up to rounding
        assert got[key] == (value if isinstance(value, (str, type(None))) else pytest.approx(value, rel=1e-12)), key
    state.write_parquet(tmp_path / "state.parquet")
    assert rf.SummaryState.read_parquet(tmp_path / "state.parquet").frame.equals(state.frame)


def test_state_outside_unit_interval_has_no_merged_percentiles():
    state = rf.summary_state(pl.DataFrame({"latency": [3.0, 5.0]}), metrics="latency")
    row = state.finalize().row(0, named=True)
    assert row["mean"] == 4.0 and row["p50"] is None


def test_bad_input_is_named():
    df = pl.DataFrame({"mrr": [0.5, float("nan")], "label": ["a", "b"], "g": [1, 2]})
    with pytest.raises(rf.SchemaError, match="row 1") as info:
        rf.summarize(df)
    assert info.value.column == "mrr"
    with pytest.raises(rf.SchemaError, match="not numeric"):
        rf.summarize(df, metrics="label")
    with pytest.raises(rf.SchemaError, match="missing column") as info:
        rf.summarize(df.drop("mrr"), metrics=["mrr"])
    assert "label" in info.value.available
    with pytest.raises(rf.SchemaError, match="no ragframe score columns"):
        rf.summarize(df.select("label"))
    with pytest.raises(rf.SchemaError, match="missing column"):
        rf.summarize(df.with_columns(mrr=pl.lit(0.5)), by="nope")
    with pytest.raises(rf.InvalidParameterError, match="percentile_method"):
        rf.summarize(df.with_columns(mrr=pl.lit(0.5)), percentile_method="inverted_cdf")
    with pytest.raises(rf.InvalidParameterError, match="ci must be"):
        rf.summarize(df.with_columns(mrr=pl.lit(0.5)), ci="normal")


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"ci": "bootstrap", "n_resamples": 0}, "n_resamples"),
        ({"ci": "bootstrap", "n_resamples": True}, "n_resamples"),
        ({"ci": "bootstrap", "n_resamples": 2.5}, "n_resamples"),
        ({"seed": "x"}, "seed"),
        ({"seed": -1}, "seed"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": float("nan")}, "confidence"),
        ({"confidence": "0.9"}, "confidence"),
        ({"percentile_method": None}, "percentile_method"),
        ({"percentile_method": ["linear"]}, "percentile_method"),
        ({"ci": None}, "ci"),
        ({"stats": "everything"}, "stats"),
        ({"stats": ["mean", "median"]}, "stats"),
        ({"stats": []}, "stats"),
        ({"metrics": []}, "metrics"),
        ({"metrics": 3}, "metrics"),
        ({"by": 3}, "by"),
    ],
)
def test_bad_parameters_name_function_parameter_and_value(options, parameter):
    df = pl.DataFrame({"mrr": [0.5, 1.0, 0.0]})
    with pytest.raises(rf.InvalidParameterError, match=f"summarize: {parameter} must be") as info:
        rf.summarize(df, **options)
    found = "median" if options.get("stats") == ["mean", "median"] else options[parameter]  # the bad item
    assert f"found {found!r}" in str(info.value)


def test_t_interval_is_clipped_to_the_score_bounds():
    # three reciprocal ranks: scipy's t interval of the mean reaches above 1
    x = np.array([1.0, 1.0, 0.5, 1.0, 0.25])
    low, high = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert high > 1.0
    row = rf.summarize(pl.DataFrame({"mrr": x})).row(0, named=True)
    assert row["ci_low"] == pytest.approx(low, rel=1e-12) and row["ci_high"] == 1.0
    # an unbounded column keeps scipy's interval; so does a merged state's finalize on a bounded one
    unbounded = rf.summarize(pl.DataFrame({"latency": x}), metrics="latency").row(0, named=True)
    assert unbounded["ci_high"] == pytest.approx(high, rel=1e-12)
    assert rf.summary_state(pl.DataFrame({"mrr": x})).finalize()["ci_high"].item() == 1.0
    # a prefixed score column is found and bounded the same way
    prefixed = rf.summarize(pl.DataFrame({"bm25_mrr": x, "note": ["a"] * x.size})).row(0, named=True)
    assert prefixed["metric"] == "bm25_mrr" and prefixed["ci_high"] == 1.0
    # the bootstrap interval stays within the values' range without clipping
    boot = rf.summarize(pl.DataFrame({"mrr": x}), ci="bootstrap", n_resamples=500).row(0, named=True)
    assert 0.25 <= boot["ci_low"] <= boot["ci_high"] <= 1.0


def test_stats_option_selects_columns_and_skips_work():
    df = pl.DataFrame({"mrr": [0.0, 0.5, 1.0, None], "g": ["a", "a", "b", "b"]})
    whole = rf.summarize(df, by="g")
    seed = rf.summarize(df, by="g", stats="seed")
    assert seed.columns == ["g", "metric", "count", "mean", "p50", "min", "max", "std_pop", "pass_rate", "null_rate"]
    assert seed.equals(whole.select(seed.columns))
    picked = rf.summarize(df, stats=["p95", "mean"], ci="bootstrap", n_resamples=1)
    assert picked.columns == ["metric", "p95", "mean"]
    assert picked.row(0) == rf.summarize(df).select("metric", "p95", "mean").row(0)
    assert rf.summarize(df, stats="ci_high").columns == ["metric", "ci_high"]


@pytest.mark.slow
def test_seed_batch_aggregates():
    from test_heuristics_oracle import SCHEMA

    path = shared_path("heuristics_oracle", "batches.jsonl")
    checked = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            batch = json.loads(line)
            if not batch["samples"]:
                continue
            frame = pl.DataFrame([{k: s[k] for k in SCHEMA} for s in batch["samples"]], schema=SCHEMA)
            summary = {
                r["metric"]: r
                for r in rf.summarize(rf.evaluate(frame, compat="rag-eval-node-ts")).iter_rows(named=True)
            }
            expected = batch["expected"]
            for metric, values in [*expected["aggregates"].items(), ("composite_score", expected["composite"])]:
                row = summary[metric]
                for ours, theirs in (
                    ("mean", "mean"),
                    ("p50", "median"),
                    ("min", "min"),
                    ("max", "max"),
                    ("std_pop", "std_pop"),
                    ("pass_rate", "pass_rate"),
                    ("null_rate", "null_rate"),
                ):
                    if row["count"] == 0 and ours not in ("pass_rate", "null_rate"):
                        continue  # the seed reports 0 for an all-null metric; ragframe reports null
                    if theirs not in values:
                        continue  # composite has no null_rate
                    assert row[ours] == pytest.approx(values[theirs], abs=1e-9), (batch["batch_id"], metric, ours)
                checked += 1
    assert checked > 300


def test_t_quantiles_are_scipy_stats_bit_for_bit():
    # the summary's interval and compare's t-test use scipy.special (stdtrit, stdtr), as scipy.stats.t does
    from ragframe.stats.paired_tests import Segments, t_test
    from ragframe.stats.summary import _t_interval

    n = np.r_[0:40, 100, 12_345, 10**7].astype(np.int64)
    state = pl.DataFrame({"count": n, "mean": np.full(n.size, 0.5), "m2": np.linspace(0.0, 3.0, n.size)})
    for confidence in (0.5, 0.9, 0.95, 0.999):
        low, high = _t_interval(state, confidence)
        nf = n.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            half = stats.t.ppf(0.5 + confidence / 2, nf - 1) * np.sqrt(state["m2"].to_numpy() / (nf - 1)) / np.sqrt(nf)
        expected = np.where(n >= 2, 0.5 - half, np.nan)
        np.testing.assert_array_equal(low, expected)
        np.testing.assert_array_equal(high, np.where(n >= 2, 0.5 + half, np.nan))
    rng = np.random.default_rng(0)
    seg = Segments.__new__(Segments)
    seg.n = rng.integers(0, 50, 200)
    seg.sd, seg.delta = rng.uniform(0.01, 1, 200), rng.normal(0, 0.3, 200)
    _, p, low, high = t_test(seg, 0.95)
    nf = seg.n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = seg.sd / np.sqrt(nf)
        expected_p = 2 * stats.t.sf(np.abs(seg.delta / se), nf - 1)
        expected_half = stats.t.ppf(0.975, nf - 1) * se
    expected_p[seg.n < 2] = np.nan
    np.testing.assert_array_equal(p, expected_p)
    np.testing.assert_array_equal(high, seg.delta + expected_half)
    np.testing.assert_array_equal(low, seg.delta - expected_half)


@pytest.mark.slow
def test_a_streamed_run_its_summary_and_a_t_test_do_not_import_scipy_stats(tmp_path):
    # scipy.stats takes about half a second to import: every streamed run and summary paid it for one quantile
    import subprocess
    import sys

    code = (
        "import sys, polars as pl, ragframe as rf\n"
        "df = pl.DataFrame({'id': [1, 2, 3], 'question': ['a b', 'c d', 'e f'], 'answer': ['a b.', 'c.', 'x'],\n"
        "                   'contexts': [['a b c'], ['c d'], ['q']], 'ground_truth': ['a', 'c', 'e']})\n"
        f"df.write_parquet({str(tmp_path / 'log.parquet')!r})\n"
        f"rf.evaluate_parquet({str(tmp_path / 'log.parquet')!r}, {str(tmp_path / 'out')!r}, progress=False)\n"
        "scored = rf.evaluate(df)\n"
        "rf.summarize(scored)\n"
        "rf.compare(scored, scored.with_columns(pl.col('faithfulness') * 0.5), on='id')\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
