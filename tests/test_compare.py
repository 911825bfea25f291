"""compare, compare_runs and the p-value corrections, against scipy and statsmodels (regressions: test_regressions)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ragframe as rf

DIFFS = st.sampled_from([0.0, 0.0, 0.25, 0.5, 1.0, -0.5, -1.0, 0.1, 0.3])


def _frames(a, b, ids=None, **extra):
    ids = list(range(len(a))) if ids is None else ids
    return pl.DataFrame({"id": ids, "mrr": a, **extra}), pl.DataFrame({"id": ids, "mrr": b})


@st.composite
def paired(draw, min_size=1, max_size=60):
    n = draw(st.integers(min_size, max_size))
    a = draw(st.lists(st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0]) | st.floats(0, 1), min_size=n, max_size=n))
    d = draw(st.lists(DIFFS | st.floats(-0.5, 0.5), min_size=n, max_size=n))
    return np.array(a), np.array(a) + np.array(d)


def _one(a, b, **kwargs):
    # any numbers (b = a + d leaves [0, 1]): an unregistered column, since a registered metric's
    # column refuses values outside its bounds (mrr: [0, 1])
    left, right = (frame.rename({"mrr": "value"}) for frame in _frames(a, b))
    return rf.compare(left, right, metrics=["value"], correction=None, **kwargs).row(0, named=True)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(paired())
def test_t_test_matches_scipy(pair):
    a, b = pair
    row = _one(a, b, test="t")
    d = b - a
    assert row["n"] == a.size
    assert row["delta"] == pytest.approx(d.mean(), abs=1e-12)
    assert row["mean_a"] == pytest.approx(a.mean()) and row["mean_b"] == pytest.approx(b.mean())
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = stats.ttest_rel(b, a)
    if a.size < 2:
        assert row["p_value"] is None and row["significant"] is False
    elif d.std(ddof=1) == 0:  # documented: p = 1 when all differences are 0, else 0
        assert row["p_value"] == (1.0 if d.mean() == 0 else 0.0) and row["statistic"] is None
    elif np.isfinite(reference.pvalue):
        assert row["statistic"] == pytest.approx(reference.statistic, rel=1e-9)
        assert row["p_value"] == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-15)
        low, high = reference.confidence_interval(0.95)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))
        assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(paired(max_size=70))
def test_wilcoxon_matches_scipy(pair):
    a, b = pair
    row = _one(a, b, test="wilcoxon")
    d = b - a
    if np.all(d == 0):
        assert row["p_value"] == 1.0  # documented; scipy raises or gives NaN here
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = stats.wilcoxon(b, a, zero_method="wilcox")
    assert row["statistic"] == pytest.approx(reference.statistic)
    assert row["p_value"] == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(paired(min_size=2, max_size=10))
def test_permutation_is_exact_for_small_samples(pair):
    a, b = pair
    row = _one(a, b, test="permutation")
    reference = stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples", vectorized=True
    )
    d = b - a
    null = np.abs(np.asarray(reference.null_distribution))
    observed = abs(float(np.mean(d)))
    scipy_band = 1e-14 * observed
    our_band = 1e-14 * max(observed, float(np.mean(np.abs(d))))
    if np.any((np.abs(null - observed) > scipy_band) & (np.abs(null - observed) <= our_band)):
        # a null mean within rounding of the statistic, relative to the mean |difference| but not to the
        # statistic itself: ragframe counts it as a tie (docs/statistics.md), scipy does not; a tie only adds
        assert row["p_value"] >= reference.pvalue - 1e-12
    else:
        assert row["p_value"] == pytest.approx(reference.pvalue, abs=1e-12)


@pytest.mark.slow
def test_resampling_tests_agree_with_scipy_on_larger_samples():
    rng = np.random.default_rng(11)
    for shift in (0.0, 0.05, 0.15):
        a = rng.random(150)
        b = np.clip(a + rng.normal(shift, 0.3, a.size), 0, 1)
        perm = _one(a, b, test="permutation", n_resamples=20_000, seed=3)
        reference = stats.permutation_test(
            (a, b),
            lambda x, y, axis: np.mean(y - x, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=20_000,
            rng=3,
        )
        assert perm["p_value"] == pytest.approx(reference.pvalue, abs=0.02)
        boot = _one(a, b, test="bootstrap", n_resamples=20_000, seed=3)
        interval = stats.bootstrap(
            (b - a,), np.mean, method="percentile", n_resamples=20_000, rng=3
        ).confidence_interval
        width = interval.high - interval.low
        assert boot["ci_low"] == pytest.approx(interval.low, abs=0.05 * width)
        assert boot["ci_high"] == pytest.approx(interval.high, abs=0.05 * width)
        t_p = stats.ttest_rel(b, a).pvalue
        assert boot["p_value"] == pytest.approx(t_p, abs=0.03)  # large sample: bootstrap and t agree


def test_seed_fixes_the_resamples():
    a, b = np.linspace(0, 1, 40), np.linspace(0.05, 1, 40)
    assert _one(a, b, test="bootstrap", seed=5) == _one(a, b, test="bootstrap", seed=5)
    assert _one(a, b, test="permutation", seed=5) == _one(a, b, test="permutation", seed=5)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(0, 1) | st.sampled_from([0.0, 0.01, 0.05, 1.0]), min_size=1, max_size=30),
    st.sampled_from(["holm", "bonferroni", "fdr_bh"]),
)
def test_corrections_match_statsmodels(p_values, method):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.array(p_values)
    expected = multitest.multipletests(p, alpha=0.05, method=method)[1]
    np.testing.assert_allclose(rf.adjust_p_values(p, method), expected, rtol=1e-12, atol=1e-15)


def test_corrections_skip_null_p_values():
    adjusted = rf.adjust_p_values(np.array([0.01, np.nan, 0.02]), "bonferroni")
    assert adjusted[0] == 0.02 and np.isnan(adjusted[1]) and adjusted[2] == 0.04


def test_slices_and_metrics_in_one_call_equal_separate_calls():
    rng = np.random.default_rng(2)
    n = 90
    a = pl.DataFrame(
        {"id": range(n), "split": rng.choice(["x", "y", "z"], n), "mrr": rng.random(n), "ndcg": rng.random(n)}
    )
    b = a.with_columns(mrr=(pl.col("mrr") + rng.normal(0.1, 0.2, n)).clip(0, 1), ndcg=pl.col("ndcg").reverse())
    together = rf.compare(a, b, by="split", metrics=["mrr", "ndcg"], correction="holm")
    assert together.columns[:2] == ["split", "metric"] and together.height == 6
    raw = []
    for (split,), part in a.partition_by("split", as_dict=True).items():
        for metric in ("mrr", "ndcg"):
            alone = rf.compare(part, b, metrics=metric, how="inner", correction=None).row(0, named=True)
            mine = together.filter(pl.col("split") == split, pl.col("metric") == metric).row(0, named=True)
            assert mine["p_value"] == pytest.approx(alone["p_value"], rel=1e-12)
            assert mine["n"] == alone["n"]
            raw.append((mine["p_value"], mine["p_adjusted"]))
    p = np.array([r[0] for r in raw])
    np.testing.assert_allclose([r[1] for r in raw], rf.adjust_p_values(p, "holm"))


def test_nulls_are_dropped_pairwise_and_ids_joined_not_positioned():
    a = pl.DataFrame({"id": ["q1", "q2", "q3", "q4"], "mrr": [0.1, None, 0.3, 0.4]})
    b = pl.DataFrame({"id": ["q4", "q3", "q2", "q1"], "mrr": [0.9, None, 0.5, 0.6]})
    row = rf.compare(a, b).row(0, named=True)
    assert row["n"] == 2  # q2 (null in a) and q3 (null in b) drop out
    assert row["delta"] == pytest.approx(((0.6 - 0.1) + (0.9 - 0.4)) / 2)


def test_winner_and_significance():
    a = np.linspace(0.1, 0.5, 30)
    better = _one(a, a + 0.2 + np.linspace(0, 0.01, 30))
    assert better["winner"] == "b" and better["significant"]
    worse = _one(a, a - 0.2 - np.linspace(0, 0.01, 30))
    assert worse["winner"] == "a"
    same = _one(a, a[::-1])
    assert same["winner"] == "tie" and not same["significant"]


def test_id_errors():
    a, b = _frames([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    with pytest.raises(rf.SchemaError, match=r"1 id\(s\) of a are missing from b, e.g. \[2\]"):
        rf.compare(a, b.head(2))
    assert rf.compare(a, b.head(2), how="inner")["n"].item() == 2
    with pytest.raises(rf.SchemaError, match="duplicate id in b") as info:
        rf.compare(a, pl.concat([b, b.head(1)]))
    assert info.value.row == 3
    with pytest.raises(rf.SchemaError, match="missing id column"):
        rf.compare(a.rename({"id": "qid"}), b)
    with pytest.raises(rf.SchemaError, match="null id in a"):
        rf.compare(a.with_columns(id=pl.Series([1, None, 2])), b)
    with pytest.raises(rf.SchemaError, match="not numeric"):
        rf.compare(a.with_columns(mrr=pl.lit("x")), b)


def test_id_types_must_match():
    a, b = _frames([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    with pytest.raises(rf.SchemaError, match="different types in a and b") as info:
        rf.compare(a, b.with_columns(pl.col("id").cast(pl.String)))
    assert info.value.column == "id" and info.value.found == "String in b"
    # integer widths are widened: the same pairs as with equal types
    narrow = rf.compare(a.with_columns(pl.col("id").cast(pl.Int32)), b.with_columns(pl.col("id").cast(pl.UInt8)))
    assert narrow.equals(rf.compare(a, b))


def test_a_metric_on_one_side_only_is_named_not_dropped():
    a, b = _frames([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    with pytest.raises(rf.SchemaError, match=r"\['faithfulness'\] only in a and \[\] only in b") as info:
        rf.compare(a.with_columns(faithfulness=pl.lit(0.5)), b)
    assert info.value.column == "faithfulness"
    with pytest.raises(rf.SchemaError, match=r"\[\] only in a and \['ndcg_at_10'\] only in b"):
        rf.compare(a, b.with_columns(ndcg_at_10=pl.lit(0.5)))
    # named metrics: the shared ones are compared, a missing one is an error
    assert rf.compare(a.with_columns(faithfulness=pl.lit(0.5)), b, metrics="mrr")["metric"].to_list() == ["mrr"]
    with pytest.raises(rf.SchemaError, match="missing column"):
        rf.compare(a.with_columns(faithfulness=pl.lit(0.5)), b, metrics=["mrr", "faithfulness"])


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"test": "z"}, "test"),
        ({"test": None}, "test"),
        ({"correction": "sidak"}, "correction"),
        ({"alpha": 0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"how": "left"}, "how"),
        ({"test": "permutation", "n_resamples": True}, "n_resamples"),
        ({"test": "bootstrap", "n_resamples": 0}, "n_resamples"),
        ({"test": "permutation", "n_resamples": 10.0}, "n_resamples"),
        ({"test": "bootstrap", "seed": "x"}, "seed"),
        ({"test": "bootstrap", "seed": -3}, "seed"),
        ({"on": 5}, "on"),
        ({"on": []}, "on"),
        ({"metrics": []}, "metrics"),
        ({"by": 1}, "by"),
    ],
)
def test_bad_parameters_name_function_parameter_and_value(options, parameter):
    a, b = _frames([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    with pytest.raises(rf.InvalidParameterError, match=f"compare: {parameter} must be") as info:
        rf.compare(a, b, **options)
    assert f"found {options[parameter]!r}" in str(info.value)


def test_frame_kinds_and_lazy_inputs():
    pytest.importorskip("pandas")
    a, b = _frames([0.1, 0.2, 0.3, 0.5], [0.2, 0.5, 0.4, 0.9])
    expected = rf.compare(a, b)
    for left, right in ((a.lazy(), b.lazy()), (a.to_arrow(), b.to_arrow()), (a.to_pandas(), b.to_pandas())):
        assert rf.compare(left, right).equals(expected)


def test_compare_runs_on_the_bundled_example():
    from ragframe.datasets import example_paths

    paths = example_paths()
    qrels = rf.read_qrels(paths["qrels"])
    bm25, rerank = rf.read_trec_run(paths["bm25"]), rf.read_trec_run(paths["bm25+gpt3.5-rerank"])
    out = rf.compare_runs(bm25, rerank, qrels, k=[10], metrics=["ndcg_at_k", "mrr"], test="t")
    assert out["metric"].to_list() == ["ndcg_at_10", "mrr"]
    per_a = rf.evaluate_run(bm25, qrels, k=[10], metrics=["ndcg_at_k"], complete=True)
    per_b = rf.evaluate_run(rerank, qrels, k=[10], metrics=["ndcg_at_k"], complete=True)
    joined = per_a.join(per_b, on="query_id")
    reference = stats.ttest_rel(joined["ndcg_at_10_right"], joined["ndcg_at_10"])
    row = out.row(0, named=True)
    assert row["n"] == 43 and row["p_value"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert row["mean_a"] == pytest.approx(0.5058, abs=5e-5) and row["mean_b"] == pytest.approx(0.6868, abs=5e-5)
    assert row["winner"] == "b"


def test_wilcoxon_ranking_in_chunks_equals_one_sort(monkeypatch):
    import sys

    module = sys.modules["ragframe.stats.paired_tests"]
    rng = np.random.default_rng(8)
    n = 300
    a = pl.DataFrame(
        {"id": range(n), "g": rng.integers(0, 4, n), "mrr": rng.choice([0.0, 0.5, 1.0], n), "ndcg": rng.random(n)}
    )
    b = a.with_columns(mrr=pl.Series(rng.choice([0.0, 0.5, 1.0], n)), ndcg=pl.Series(rng.random(n)))
    whole = rf.compare(a, b, by="g", test="wilcoxon")
    monkeypatch.setattr(module, "_RANK_CHUNK", 7)  # many chunks, cut at cell boundaries
    assert rf.compare(a, b, by="g", test="wilcoxon").equals(whole)


def test_permutation_mean_zero_up_to_rounding_ties_with_the_null():
    """Differences 0, .5, -1, .1, .1, .3 sum to 0 up to rounding (-5.6e-17): p is 1, as scipy says.

    Found by hypothesis: a tie tolerance relative to the (rounding-sized) statistic alone gave 0.9375.
    """
    a = np.zeros(6)
    b = np.array([0, 0.5, -1, 0.1, 0.1, 0.3])
    reference = stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples", vectorized=True
    )
    assert reference.pvalue == 1.0
    assert _one(a, b, test="permutation")["p_value"] == 1.0
