"""rf.agreement_with_labels against scikit-learn and scipy (issue 12, item 1)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, roc_auc_score, roc_curve

import ragframe as rf
from ragframe.datasets import example_rag_log

FN = rf.agreement_with_labels


def _frame(n: int = 300, seed: int = 0, null_rate: float = 0.05) -> pl.DataFrame:
    """Two heuristic scores with many ties, a binary label, an ordinal label and a slice column."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    faith = np.round(np.clip(0.5 * label + rng.normal(0.3, 0.25, n), 0, 1), 1)  # rounded: ties
    relevance = np.round(rng.random(n), 2)
    ordinal = np.clip(np.round(4 * faith - 2 + rng.normal(0, 1, n)), -2, 2).astype(np.int64)

    def with_nulls(values: np.ndarray) -> list:
        return [None if rng.random() < null_rate else v.item() for v in values]

    return pl.DataFrame(
        {
            "id": np.arange(n),
            "model": rng.choice(["a", "b", "c"], n),
            "faithfulness": with_nulls(faith),
            "answer_relevance": with_nulls(relevance),
            "human": with_nulls(label),
            "ordinal": with_nulls(ordinal),
        }
    )


def _pairs(df: pl.DataFrame, metric: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    both = df.drop_nulls([metric, label])
    return both[metric].to_numpy().astype(float), both[label].to_numpy().astype(float)


def _row(out: pl.DataFrame, metric: str, label: str) -> dict:
    return out.filter((pl.col("metric") == metric) & (pl.col("label") == label)).row(0, named=True)


@pytest.fixture(scope="module")
def data() -> pl.DataFrame:
    return _frame()


@pytest.fixture(scope="module")
def result(data: pl.DataFrame) -> pl.DataFrame:
    return FN(data, label_columns=["human", "ordinal"], ordinal="ordinal", n_resamples=500)


def test_columns_and_pairs(result: pl.DataFrame):
    assert result.columns == [
        "metric",
        "label",
        "n",
        "positives",
        "auroc",
        "auroc_low",
        "auroc_high",
        "spearman",
        "spearman_p",
        "kendall",
        "kendall_p",
        "youden_threshold",
        "youden_j",
        "threshold",
        "accuracy",
        "cohen_kappa",
    ]
    assert result.select("metric", "label").rows() == [
        ("faithfulness", "human"),
        ("faithfulness", "ordinal"),
        ("answer_relevance", "human"),
        ("answer_relevance", "ordinal"),
    ]


@pytest.mark.parametrize("metric", ["faithfulness", "answer_relevance"])
def test_binary_label_matches_sklearn_and_scipy(data, result, metric):
    s, y = _pairs(data, metric, "human")
    row = _row(result, metric, "human")
    assert row["n"] == s.size and row["positives"] == int(y.sum())
    assert len(np.unique(s)) < s.size  # the scores have ties
    assert row["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    rho, rho_p = stats.spearmanr(s, y)
    tau, tau_p = stats.kendalltau(s, y)
    assert (row["spearman"], row["spearman_p"]) == pytest.approx((rho, rho_p), abs=1e-12)
    assert (row["kendall"], row["kendall_p"]) == pytest.approx((tau, tau_p), abs=1e-12)
    fpr, tpr, cuts = roc_curve(y, s)
    best = int(np.argmax(tpr - fpr))
    if metric == "faithfulness":
        assert np.isfinite(cuts[best]) and row["youden_threshold"] == cuts[best]
    else:  # unrelated to the label (AUROC 0.43): no cut beats chance, sklearn's argmax is the inf cut
        assert np.isinf(cuts[best]) and row["youden_threshold"] is None
    assert row["youden_j"] == (tpr - fpr)[best]
    threshold = rf.metrics.get_metric(metric).threshold
    assert row["threshold"] == threshold
    predicted = (s >= threshold).astype(int)
    assert row["accuracy"] == pytest.approx(accuracy_score(y, predicted), abs=1e-12)
    assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(y, predicted), abs=1e-12)


def test_ordinal_label_reports_rank_correlations_only(data, result):
    s, y = _pairs(data, "faithfulness", "ordinal")
    assert len(np.unique(y)) == 5
    row = _row(result, "faithfulness", "ordinal")
    rho, rho_p = stats.spearmanr(s, y)
    tau, tau_p = stats.kendalltau(s, y)
    assert row["n"] == s.size
    assert (row["spearman"], row["spearman_p"], row["kendall"], row["kendall_p"]) == pytest.approx(
        (rho, rho_p, tau, tau_p), abs=1e-12
    )
    binary_only = ["positives", "auroc", "auroc_low", "auroc_high", "youden_threshold", "youden_j"]
    assert all(row[c] is None for c in [*binary_only, "accuracy", "cohen_kappa"])
    assert row["threshold"] == rf.metrics.get_metric("faithfulness").threshold  # still reported


def test_youden_tie_takes_the_highest_cut_as_sklearn_argmax():
    s, y = np.array([0.9, 0.8, 0.7, 0.1]), np.array([1, 0, 1, 0])  # J = 0.5 at the cuts 0.9 and 0.7
    fpr, tpr, cuts = roc_curve(y, s)
    row = FN(pl.DataFrame({"faithfulness": s, "human": y}), label_columns="human").row(0, named=True)
    assert (row["youden_threshold"], row["youden_j"]) == (cuts[np.argmax(tpr - fpr)], 0.5) == (0.9, 0.5)


def test_threshold_override_and_boolean_labels(data):
    df = data.with_columns(pl.col("human").cast(pl.Boolean).alias("flag"))
    out = FN(df, label_columns="flag", metrics="faithfulness", thresholds={"faithfulness": 0.45}, n_resamples=10)
    s, y = _pairs(df, "faithfulness", "flag")
    row = out.row(0, named=True)
    assert row["threshold"] == 0.45
    assert row["accuracy"] == pytest.approx(accuracy_score(y, s >= 0.45), abs=1e-12)
    assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(y, s >= 0.45), abs=1e-12)
    assert row["auroc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_thresholds_follow_the_evaluator_keys(data):
    df = data.rename({"faithfulness": "v2_faithfulness"}).with_columns(score=pl.col("answer_relevance"))
    out = FN(df, label_columns="human", metrics=["v2_faithfulness", "score"], thresholds={"faithfulness": 0.3})
    assert out["threshold"].to_list() == [0.3, None]  # by metric name; an unregistered column has none
    assert out["accuracy"][1] is None and out["cohen_kappa"][1] is None
    out = FN(df, label_columns="human", metrics="v2_faithfulness", thresholds={"v2_faithfulness": None})
    assert out["threshold"][0] is None and out["accuracy"][0] is None
    with pytest.raises(rf.InvalidParameterError, match="thresholds"):
        FN(df, label_columns="human", metrics="v2_faithfulness", thresholds={"mrr": 0.5})
    with pytest.raises(rf.InvalidParameterError, match="thresholds"):
        FN(df, label_columns="human", metrics="v2_faithfulness", thresholds={"faithfulness": float("nan")})


@pytest.mark.slow
def test_bootstrap_interval_equals_a_weighted_sklearn_bootstrap(data):
    """The interval is the percentile bootstrap of roc_auc_score over resamples drawn with replacement."""
    s, y = _pairs(data, "faithfulness", "human")
    order = np.lexsort((y, s))  # the documented canonical order the weights are drawn in
    s, y = s[order], y[order]
    draws = np.random.default_rng(7).integers(0, s.size, size=(400, s.size))
    weights = [np.bincount(d, minlength=s.size) for d in draws]  # times each pair is drawn
    aucs = [roc_auc_score(y, s, sample_weight=w) for w in weights if (w * y).sum() and (w * (1 - y)).sum()]
    low, high = np.quantile(aucs, [0.05, 0.95])
    row = FN(data, label_columns="human", metrics="faithfulness", n_resamples=400, seed=7, confidence=0.9).row(
        0, named=True
    )
    assert (row["auroc_low"], row["auroc_high"]) == pytest.approx((low, high), abs=1e-12)
    assert row["auroc_low"] < row["auroc"] < row["auroc_high"]


def test_bootstrap_is_reproducible_and_seeded(data):
    def interval(seed):
        out = FN(data, label_columns="human", n_resamples=300, seed=seed)
        return out.select("auroc_low", "auroc_high").rows()

    assert interval(3) == interval(3)
    assert interval(3) != interval(4)
    out = FN(data, label_columns="human", n_resamples=300, seed=None)
    assert (out["auroc_low"] <= out["auroc"]).all() and (out["auroc"] <= out["auroc_high"]).all()


def test_by_slices_equal_per_slice_calls(data):
    kwargs = {"label_columns": ["human", "ordinal"], "ordinal": "ordinal", "n_resamples": 200, "seed": 1}
    sliced = FN(data, by="model", **kwargs)
    assert sliced.columns[0] == "model" and sliced.height == 3 * 4
    for model in ["a", "b", "c"]:
        alone = FN(data.filter(pl.col("model") == model), **kwargs)
        mine = sliced.filter(pl.col("model") == model).drop("model")
        assert mine.equals(alone), model


def test_labels_in_a_second_frame(data):
    scores = data.select("id", "model", "faithfulness", "answer_relevance").sample(fraction=1.0, shuffle=True, seed=2)
    labels = data.select("id", "human", "ordinal").head(250)  # a labelled subset
    out = FN(scores, labels, on="id", ordinal="ordinal", n_resamples=100)  # label columns: all but the id
    inline = FN(data.head(250), label_columns=["human", "ordinal"], ordinal="ordinal", n_resamples=100)
    assert out.equals(inline)
    paired = FN(
        scores, labels, label_columns={"faithfulness": "human", "answer_relevance": ["ordinal"]}, ordinal=["ordinal"]
    )
    assert paired.select("metric", "label").rows() == [("faithfulness", "human"), ("answer_relevance", "ordinal")]
    extra = pl.concat([labels, pl.DataFrame({"id": [9999], "human": [1], "ordinal": [0]})])
    with pytest.raises(rf.SchemaError, match="not in scored") as error:
        FN(scores, extra, ordinal="ordinal")
    assert error.value.column == "id"
    with pytest.raises(rf.SchemaError, match="duplicate id in labels"):
        FN(scores, pl.concat([labels, labels.head(1)]), ordinal="ordinal")
    with pytest.raises(rf.SchemaError, match="different types"):
        FN(scores, labels.with_columns(pl.col("id").cast(pl.String)), ordinal="ordinal")


@pytest.mark.parametrize("kind", ["lazy", "arrow", "pandas"])
def test_frame_kinds(data, result, kind):
    frame = {"lazy": data.lazy, "arrow": data.to_arrow, "pandas": data.to_pandas}[kind]()
    assert FN(frame, label_columns=["human", "ordinal"], ordinal="ordinal", n_resamples=500).equals(result)


def test_single_class_and_empty_cells_are_null_not_errors():
    df = pl.DataFrame(
        {
            "g": ["x", "x", "x", "y", "y"],
            "faithfulness": [0.2, 0.9, 0.5, 0.4, None],
            "human": [1, 1, 1, 0, 1],
        }
    )
    out = FN(df, label_columns="human", by="g", thresholds={"faithfulness": 0.7})
    x, y = out.row(0, named=True), out.row(1, named=True)
    assert (x["n"], x["positives"], x["auroc"], x["auroc_low"], x["youden_threshold"]) == (3, 3, None, None, None)
    assert x["accuracy"] == pytest.approx(1 / 3) and x["cohen_kappa"] == 0.0  # kappa: chance agreement is 1/3
    assert (y["n"], y["positives"], y["spearman"], y["auroc"]) == (1, 0, None, None)
    assert y["accuracy"] == 1.0 and y["cohen_kappa"] == 1.0  # one agreeing pair: chance agreement 1 -> 1.0


def test_constant_score_has_auroc_one_half_and_no_cut():
    df = pl.DataFrame({"context_relevance": [0.0] * 6, "human": [0, 1, 0, 1, 1, 0]})
    row = FN(df, label_columns="human").row(0, named=True)
    assert (row["auroc"], row["auroc_low"], row["auroc_high"]) == (0.5, 0.5, 0.5)
    assert row["youden_threshold"] is None and row["youden_j"] == 0.0 and row["spearman"] is None


def test_lower_is_better_metric_is_flipped():
    def length(view):
        return view["answer"].str.len_chars().cast(pl.Float64)

    rf.register_metric(
        # a count, and the scores below go negative: unbounded (a bounded metric refuses them)
        rf.Metric(
            "answer_chars", "custom", ("answer",), "Characters.", kernel=length, higher_is_better=False, bounds=None
        )
    )
    try:
        rng = np.random.default_rng(5)
        y = rng.integers(0, 2, 80)
        s = np.round(rng.random(80) - 0.3 * y, 1)  # lower for positives
        df = pl.DataFrame({"answer_chars": s, "human": y})
        row = FN(df, label_columns="human", thresholds={"answer_chars": 0.3}).row(0, named=True)
        assert row["auroc"] == pytest.approx(roc_auc_score(y, -s), abs=1e-12) and row["auroc"] > 0.5
        assert row["spearman"] == pytest.approx(stats.spearmanr(-s, y)[0], abs=1e-12)
        fpr, tpr, cuts = roc_curve(y, -s)
        assert row["youden_threshold"] == -cuts[int(np.argmax(tpr - fpr))]  # in the score's own units
        assert row["accuracy"] == pytest.approx(accuracy_score(y, s <= 0.3), abs=1e-12)
        assert row["cohen_kappa"] == pytest.approx(cohen_kappa_score(y, s <= 0.3), abs=1e-12)
    finally:
        rf.unregister_metric("answer_chars")


def test_ares_log_against_sklearn():
    log = pl.read_parquet(example_rag_log())
    scored = rf.evaluate(log, ["faithfulness", "answer_relevance"])
    pairs = {"faithfulness": "human_faithfulness", "answer_relevance": "human_answer_relevance"}
    out = FN(scored, label_columns=pairs, n_resamples=200)
    assert out["n"].to_list() == [200, 200] and out["positives"].to_list() == [172, 179]
    for metric, label in pairs.items():
        expected = roc_auc_score(scored[label].to_numpy(), scored[metric].to_numpy())
        assert _row(out, metric, label)["auroc"] == pytest.approx(expected, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, None]), st.sampled_from([0, 1, None])),
        min_size=1,
        max_size=40,
    ),
    st.randoms(use_true_random=False),
)
def test_row_order_does_not_change_the_result(rows, random):
    df = pl.DataFrame(rows, schema={"faithfulness": pl.Float64, "human": pl.Int64}, orient="row")
    df = df.with_columns(g=pl.Series([i % 2 for i in range(df.height)]))
    shuffled = df[random.sample(range(df.height), df.height)]
    try:
        expected = FN(df, label_columns="human", by="g", n_resamples=50)
    except rf.SchemaError:  # no pair at all
        with pytest.raises(rf.SchemaError):
            FN(shuffled, label_columns="human", by="g", n_resamples=50)
        return
    assert FN(shuffled, label_columns="human", by="g", n_resamples=50).equals(expected)


def test_bad_input_errors(data):
    with pytest.raises(rf.SchemaError, match="missing label column") as error:
        FN(data, label_columns="nope")
    assert error.value.column == "nope"
    with pytest.raises(rf.SchemaError, match="not numeric") as error:
        FN(data, label_columns="model")
    assert error.value.column == "model"
    bad = data.with_columns(pl.col("human").cast(pl.Float64).fill_null(float("nan")))
    with pytest.raises(rf.SchemaError, match="NaN") as error:
        FN(bad, label_columns="human")
    assert error.value.row == int(np.flatnonzero(data["human"].is_null().to_numpy())[0])
    with pytest.raises(rf.SchemaError, match="no ragframe score columns"):
        FN(data.select("id", "human"), label_columns="human")
    with pytest.raises(rf.SchemaError, match="NaN"):
        FN(data.with_columns(faithfulness=pl.lit(float("nan"))), label_columns="human")
    with pytest.raises(rf.SchemaError, match="nothing can be checked"):
        FN(data.with_columns(human=pl.lit(None, pl.Int64)), label_columns="human")
    for kwargs, name in [
        ({"n_resamples": 0}, "n_resamples"),
        ({"confidence": 1.0}, "confidence"),
        ({"seed": -1}, "seed"),
        ({"metrics": "faithfulness", "label_columns": {"faithfulness": "human"}}, "metrics"),
        ({"on": "id"}, "on"),
    ]:
        with pytest.raises(rf.InvalidParameterError, match=name):
            FN(data, **{"label_columns": "human", **kwargs})
    with pytest.raises(rf.InvalidParameterError, match="label_columns"):
        FN(data)
