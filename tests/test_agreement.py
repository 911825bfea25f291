"""Agreement between annotators and judgments as qrels (``spec/statistics.md``).

References are independent implementations: scikit-learn's ``cohen_kappa_score``,
statsmodels' ``fleiss_kappa`` and the ``krippendorff`` package, on hypothesis-generated
data and on hand-worked examples, plus the published kappas of the RAGChecker human labels.
"""

from __future__ import annotations

import json
import math
import warnings
from itertools import combinations

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.stats.agreement import agreement, cohen_kappa, judgment_summary, judgments_to_qrels

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEVEL_WEIGHTS = {"nominal": None, "ordinal": "linear", "interval": "quadratic"}


def long(matrix, annotators=None, dtype=pl.Float64) -> pl.DataFrame:
    """Long judgments from a raters x items matrix (NaN or None = not rated: a null rating row)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    raters, n_items = matrix.shape
    annotators = annotators or [f"r{a}" for a in range(raters)]
    items = np.tile(np.arange(n_items), raters)
    values = matrix.reshape(-1)
    return pl.DataFrame(
        {
            "query": [f"q{i % 3}" for i in items],
            "item_id": [f"d{i}" for i in items],
            "annotator": [annotators[a] for a in np.repeat(np.arange(raters), n_items)],
            "relevance": pl.Series(values, dtype=pl.Float64, nan_to_null=True).cast(dtype),
        }
    )


def sk_kappa(a, b, weights=None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b, weights=weights))


# ratings matrices: raters x items, small category sets (ties and single-category data are common)
def matrices(min_raters=2, max_raters=4, max_items=12, missing=False):
    @st.composite
    def build(draw):
        raters = draw(st.integers(min_raters, max_raters))
        n_items = draw(st.integers(1, max_items))
        top = draw(st.integers(0, 4))
        cell = st.integers(0, top).map(float)
        if missing:
            cell = st.one_of(cell, st.just(math.nan))
        return np.array(
            draw(st.lists(st.lists(cell, min_size=n_items, max_size=n_items), min_size=raters, max_size=raters))
        )

    return build()


# --------------------------------------------------------------------------- Cohen's kappa


@pytest.mark.slow
@SETTINGS
@given(matrices(2, 2, max_items=15), st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_matches_sklearn(matrix, weights):
    a, b = matrix
    ref = sk_kappa(a, b, weights)
    got = cohen_kappa(long(matrix, ["ann", "bob"], pl.Int64), "ann", "bob", weights=weights)
    if math.isnan(ref):  # chance agreement 1: both raters used one and the same category
        assert len(set(a) | set(b)) == 1
        assert got == 1.0
    else:
        assert got == pytest.approx(ref, abs=1e-12)
    assert cohen_kappa(long(matrix, ["ann", "bob"]), "bob", "ann", weights=weights) == pytest.approx(got, abs=1e-12)


@pytest.mark.slow
@SETTINGS
@given(matrices(2, 2, max_items=15, missing=True), st.sampled_from([None, "linear", "quadratic"]))
def test_cohen_kappa_uses_items_both_rated(matrix, weights):
    both = ~np.isnan(matrix).any(axis=0)
    df = long(matrix, ["ann", "bob"])
    if not both.any():
        with pytest.raises(InvalidParameterError, match="share no rated item"):
            cohen_kappa(df, "ann", "bob", weights=weights)
        return
    ref = sk_kappa(matrix[0][both], matrix[1][both], weights)
    got = cohen_kappa(df, "ann", "bob", weights=weights)
    assert got == (1.0 if math.isnan(ref) else pytest.approx(ref, abs=1e-12))


def test_cohen_kappa_hand_worked():
    # Wikipedia's example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    df = pl.DataFrame(
        {
            "query": ["q"] * 100,
            "item_id": list(range(50)) * 2,
            "annotator": ["a"] * 50 + ["b"] * 50,
            "relevance": a + b,
        }
    )
    assert cohen_kappa(df, "a", "b") == pytest.approx(0.4, abs=1e-15)
    # weights use label indexes: grades 0 and 3 alone are one step apart, like sklearn
    df = long([[0, 3, 0, 3], [0, 3, 3, 3]], ["a", "b"])
    assert cohen_kappa(df, "a", "b", weights="linear") == pytest.approx(sk_kappa([0, 3, 0, 3], [0, 3, 3, 3], "linear"))
    assert cohen_kappa(df, "a", "b", weights="quadratic") == cohen_kappa(df, "a", "b", weights="linear")


def test_cohen_kappa_degenerate_chance_agreement_documented():
    same = long([[2, 2, 2], [2, 2, 2]], ["a", "b"])
    assert cohen_kappa(same, "a", "b") == 1.0
    assert cohen_kappa(same, "a", "b", weights="quadratic") == 1.0
    assert cohen_kappa(long([[1], [1]], ["a", "b"]), "a", "b") == 1.0  # n = 1
    # disjoint constant raters: chance agreement 0, kappa 0 (as sklearn)
    assert cohen_kappa(long([[1, 1], [2, 2]], ["a", "b"]), "a", "b") == pytest.approx(sk_kappa([1, 1], [2, 2]))


def test_cohen_kappa_string_ratings_nominal():
    a, b = ["rel", "non", "rel", "part"], ["rel", "non", "part", "part"]
    df = pl.DataFrame(
        {"query": ["q"] * 8, "item_id": list("wxyz") * 2, "annotator": ["a"] * 4 + ["b"] * 4, "relevance": a + b}
    )
    assert cohen_kappa(df, "a", "b") == pytest.approx(sk_kappa(a, b), abs=1e-12)
    with pytest.raises(SchemaError) as err:
        cohen_kappa(df, "a", "b", weights="linear")
    assert err.value.column == "relevance" and err.value.found == "String"


# --------------------------------------------------------------------------- agreement()


@pytest.mark.slow
@SETTINGS
@given(matrices(2, 4, max_items=10, missing=True), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_mean_pairwise_cohen_matches_sklearn(matrix, level):
    kappas = []
    for a, b in combinations(range(matrix.shape[0]), 2):
        both = ~np.isnan(matrix[a]) & ~np.isnan(matrix[b])
        if both.any():
            ref = sk_kappa(matrix[a][both], matrix[b][both], LEVEL_WEIGHTS[level])
            kappas.append(1.0 if math.isnan(ref) else ref)
    df = long(matrix)
    if not kappas:
        with pytest.raises(InvalidParameterError, match="no two annotators"):
            agreement(df, method="cohen", level=level)
        return
    out = agreement(df, method="cohen", level=level)
    assert out["value"].item() == pytest.approx(float(np.mean(kappas)), abs=1e-12)
    assert out["n_pairs"].item() == len(kappas)
    assert out["n_ratings"].item() == int((~np.isnan(matrix)).sum())
    # order independence (unlike the seed's insertion-order pairing)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=7)
    assert agreement(shuffled, method="cohen", level=level)["value"].item() == pytest.approx(
        out["value"].item(), abs=1e-12
    )


@SETTINGS
@given(matrices(2, 5, max_items=15))
def test_fleiss_matches_statsmodels(matrix):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    table, _ = inter_rater.aggregate_raters(matrix.T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = float(inter_rater.fleiss_kappa(table))
    out = agreement(long(matrix, dtype=pl.Int64), method="fleiss")
    if math.isnan(ref):  # every rating in one category
        assert len(np.unique(matrix)) == 1 and out["value"].item() == 1.0
    else:
        assert out["value"].item() == pytest.approx(ref, abs=1e-12)
    assert out.select("n_items", "n_annotators", "n_ratings").row(0) == (
        matrix.shape[1],
        matrix.shape[0],
        matrix.size,
    )
    assert out["n_pairs"].item() is None


def test_fleiss_hand_worked():
    # Wikipedia's example: 10 subjects, 14 raters, 5 categories -> kappa 0.210
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    # rater identities are arbitrary for Fleiss: rater r of subject s gives the r-th rating of its counts
    matrix = np.array([np.repeat(np.arange(1, 6), row) for row in counts]).T
    assert agreement(long(matrix), method="fleiss")["value"].item() == pytest.approx(0.20993070442195522, abs=1e-12)


@SETTINGS
@given(matrices(2, 4, max_items=12, missing=True), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_krippendorff_matches_package(matrix, level):
    krippendorff = pytest.importorskip("krippendorff")
    df = long(matrix)
    pairable = ((~np.isnan(matrix)).sum(axis=0) >= 2).any()
    if not pairable:
        with pytest.raises(InvalidParameterError, match="two or more ratings"):
            agreement(df, method="krippendorff", level=level)
        return
    got = agreement(df, method="krippendorff", level=level)["value"].item()
    values = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
    if len(np.unique(values[~np.isnan(values)])) == 1:  # no variation: documented 1.0 (package: nan or error)
        assert got == 1.0
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    assert got == pytest.approx(float(ref), abs=1e-9)


@SETTINGS
@given(
    st.integers(2, 4).flatmap(
        lambda raters: st.lists(
            st.lists(
                st.one_of(
                    # no tiny magnitudes: their squared distances underflow to 0 (then the package gives nan)
                    st.floats(-50, 50, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-6),
                    st.just(math.nan),
                ),
                min_size=raters,
                max_size=raters,
            ),
            min_size=2,
            max_size=12,
        )
    )
)
def test_krippendorff_interval_real_values(columns):
    krippendorff = pytest.importorskip("krippendorff")
    matrix = np.array(columns).T
    rated = (~np.isnan(matrix)).sum(axis=0) >= 2
    values = matrix[:, rated]
    if not rated.any() or len(np.unique(values[~np.isnan(values)])) < 2:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))
    got = agreement(long(matrix), method="krippendorff", level="interval")["value"].item()
    assert got == pytest.approx(ref, abs=1e-9, rel=1e-9)


def test_krippendorff_hand_worked():
    # Krippendorff (2011), also the krippendorff package's docstring
    nan = math.nan
    data = [
        [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
        [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
        [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
    ]
    df = long(data)
    assert round(agreement(df, method="krippendorff")["value"].item(), 6) == 0.691358
    assert round(agreement(df, method="krippendorff", level="interval")["value"].item(), 6) == 0.810845
    ordinal = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert round(agreement(long(ordinal), method="krippendorff", level="ordinal")["value"].item(), 3) == 0.815


def test_krippendorff_nominal_accepts_strings_and_needs_numbers_otherwise():
    krippendorff = pytest.importorskip("krippendorff")
    labels = [["x", "y", "x", "z"], ["x", "y", "y", "z"]]
    df = pl.DataFrame(
        {
            "query": ["q"] * 8,
            "item_id": list(range(4)) * 2,
            "annotator": ["a"] * 4 + ["b"] * 4,
            "relevance": labels[0] + labels[1],
        }
    )
    ref = krippendorff.alpha(reliability_data=np.array(labels), level_of_measurement="nominal")
    assert agreement(df, method="krippendorff")["value"].item() == pytest.approx(float(ref), abs=1e-12)
    for level in ("ordinal", "interval"):
        with pytest.raises(SchemaError) as err:
            agreement(df, method="krippendorff", level=level)
        assert (err.value.column, err.value.found) == ("relevance", "String")


def test_frame_kinds_give_the_same_result():
    pytest.importorskip("pandas")
    df = long([[0, 1, 2, 3, math.nan], [0, 1, 1, 3, 2], [1, 1, 2, math.nan, 2]])
    want = agreement(df, method="krippendorff", level="ordinal")
    for frame in (df.lazy(), df.to_arrow(), df.to_pandas()):
        assert agreement(frame, method="krippendorff", level="ordinal").equals(want)


def test_item_and_column_overrides():
    df = long([[0, 1, 2], [0, 2, 2]]).rename({"item_id": "doc", "annotator": "who", "relevance": "grade"})
    df = df.with_columns(pl.concat_str("query", "doc").alias("key"))
    want = cohen_kappa(long([[0, 1, 2], [0, 2, 2]]), "r0", "r1")
    assert cohen_kappa(df, "r0", "r1", item=["query", "doc"], annotator="who", rating="grade") == want
    assert cohen_kappa(df, "r0", "r1", item="key", annotator="who", rating="grade") == want


# --------------------------------------------------------------------------- RAGChecker human labels


@pytest.mark.parametrize(
    ("label", "plain", "linear", "quadratic"),
    [
        ("correctness_label", 0.311338, 0.471542, 0.633142),
        ("completeness_label", 0.462600, 0.590945, 0.718376),
        ("overall_label", 0.413254, 0.558689, 0.698500),
    ],
)
def test_ragchecker_published_kappas(label, plain, linear, quadratic):
    path = shared_path("ragchecker_human_labels", "human_labeled_data.json")
    rows = json.loads(path.read_text(encoding="utf-8"))
    df = pl.DataFrame(
        {
            "instance_id": [r["instance_id"] for r in rows],
            "annotator": ["a", "b"] * (len(rows) // 2),  # rows 2i and 2i+1 label instance i
            label: [r[label] for r in rows],
        }
    )
    kw = {"item": "instance_id", "rating": label}
    assert round(cohen_kappa(df, "a", "b", **kw), 6) == plain
    assert round(cohen_kappa(df, "a", "b", weights="linear", **kw), 6) == linear
    assert round(cohen_kappa(df, "a", "b", weights="quadratic", **kw), 6) == quadratic
    # with two annotators the mean pairwise kappa is the pair's kappa
    assert round(agreement(df, level="interval", **kw)["value"].item(), 6) == quadratic
    assert agreement(df, method="fleiss", **kw)["n_items"].item() == 280


# --------------------------------------------------------------------------- judgments as qrels


@SETTINGS
@given(
    matrices(1, 4, max_items=10, missing=True),
    st.sampled_from([0, 1, 1.5, 2, 3]),
    st.booleans(),
)
def test_judgments_to_qrels_matches_plain_python(matrix, threshold, graded):
    df = long(matrix, dtype=pl.Int64)
    out = judgments_to_qrels(df, threshold=threshold, graded=graded).sort("doc_id")
    want = []
    for i in range(matrix.shape[1]):
        ratings = [v for v in matrix[:, i] if not np.isnan(v)]
        if not ratings:
            continue  # all-null ratings: unjudged, no row
        mean = sum(ratings) / len(ratings)
        grade = math.floor(mean + 0.5) if graded else int(mean >= threshold)
        want.append((f"q{i % 3}", f"d{i}", grade, mean, len(ratings)))
    assert out.drop("mean_rating").rows() == [(q, d, g, n) for q, d, g, _, n in want]
    assert out["mean_rating"].to_list() == pytest.approx([w[3] for w in want], abs=1e-12)
    assert out.schema == pl.Schema(
        {
            "query_id": pl.String,
            "doc_id": pl.String,
            "relevance": pl.Int64,
            "mean_rating": pl.Float64,
            "num_judgments": pl.Int64,
        }
    )


def test_qrels_round_half_up_and_threshold_inclusive():
    df = long([[1, 2, 0, 3], [2, 3, 0, 2]], dtype=pl.Int64)  # means 1.5, 2.5, 0, 2.5
    assert judgments_to_qrels(df, graded=True)["relevance"].to_list() == [2, 3, 0, 3]
    assert judgments_to_qrels(df, threshold=2.5)["relevance"].to_list() == [0, 1, 0, 1]
    assert judgments_to_qrels(df)["relevance"].to_list() == [0, 1, 0, 1]


def test_qrels_run_through_evaluate_run():
    judgments = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q1", "q2", "q2", "q2"],
            "item_id": ["a", "a", "b", "b", "c", "c", "d"],
            "annotator": ["x", "y", "x", "y", "x", "y", "x"],
            "relevance": [3, 2, 0, 1, 2, 2, None],
        }
    )
    run = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["b", "a", "d", "c"], "score": [2.0, 1.0, 2.0, 1.0]}
    )
    qrels = judgments_to_qrels(judgments)
    assert qrels.select("query_id", "doc_id", "relevance").rows() == [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 1)]
    out = rf.evaluate_run(run, qrels, k=2, metrics=["mrr", "precision_at_k"])
    assert out["mrr"].to_list() == [0.5, 0.5]
    assert out["precision_at_2"].to_list() == [0.5, 0.5]
    graded = rf.evaluate_run(run, judgments_to_qrels(judgments, graded=True), k=2, metrics=["ndcg_at_k"])
    want = (1 / math.log2(2) + 3 / math.log2(3)) / (3 / math.log2(2) + 1 / math.log2(3))  # q1: b (grade 1), a (3)
    assert graded["ndcg_at_2"][0] == pytest.approx(want)


def test_qrels_query_and_doc_columns():
    df = long([[1, 2], [3, 2]]).rename({"query": "topic", "item_id": "doc"})
    out = judgments_to_qrels(df, item=["topic", "doc"])
    assert out["query_id"].to_list() == ["q0", "q1"] and out["doc_id"].to_list() == ["d0", "d1"]
    assert judgments_to_qrels(df, item="doc", query="topic", doc="doc").equals(out)
    with pytest.raises(InvalidParameterError, match="query and doc columns must differ"):
        judgments_to_qrels(df, item="doc")


# --------------------------------------------------------------------------- judgment summary


def test_judgment_summary_seed_fields():
    df = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q1", "q2", "q2", "q3"],
            "item_id": ["a", "a", "b", "b", "c", "c", "d"],
            "annotator": ["x", "y", "x", "y", "x", "y", "z"],
            "relevance": [3, 2, 0, 0, 2, None, 1],
            "team": ["t1", "t1", "t1", "t1", "t2", "t2", "t2"],
        }
    )
    row = judgment_summary(df).row(0, named=True)
    assert row == {
        "mean_relevance": pytest.approx(8 / 6),
        "agreement": pytest.approx(sk_kappa([3, 0], [2, 0])),  # only x and y share items: a, b
        "num_judgments": 6,
        "num_annotators": 3,
        "num_queries": 3,
        "num_items": 4,
    }
    by = judgment_summary(df, by="team")
    assert by["team"].to_list() == ["t1", "t2"]
    assert by["agreement"].to_list()[1] is None  # no pair shares an item in t2
    assert by["num_judgments"].to_list() == [4, 2]
    empty = judgment_summary(df.head(0))
    assert empty.row(0) == (None, None, 0, 0, 0, 0)


# --------------------------------------------------------------------------- validation


def judgments(**overrides):
    base = {
        "query": ["q1", "q1", "q2", "q2"],
        "item_id": ["a", "a", "b", "b"],
        "annotator": ["x", "y", "x", "y"],
        "relevance": [1, 2, 0, 0],
    }
    base.update(overrides)
    return pl.DataFrame(base)


ALL_CALLS = [
    lambda df: cohen_kappa(df, "x", "y"),
    lambda df: agreement(df),
    lambda df: agreement(df, method="krippendorff", level="interval"),
    lambda df: judgments_to_qrels(df),
    lambda df: judgment_summary(df),
]


@pytest.mark.parametrize("call", ALL_CALLS)
def test_missing_column_lists_available(call):
    df = judgments().rename({"annotator": "rater"})
    with pytest.raises(SchemaError) as err:
        call(df)
    assert err.value.column == "annotator"
    assert err.value.available == ["query", "item_id", "rater", "relevance"]
    assert "available columns" in str(err.value)


@pytest.mark.parametrize("call", ALL_CALLS)
@pytest.mark.parametrize("column", ["query", "item_id", "annotator"])
def test_null_item_or_annotator_names_column_and_row(call, column):
    values = judgments()[column].to_list()
    values[2] = None
    with pytest.raises(SchemaError) as err:
        call(judgments(**{column: values}))
    assert (err.value.column, err.value.row) == (column, 2)
    assert f"column {column!r}, row 2" in str(err.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda df: cohen_kappa(df, "x", "y", weights="linear"),
        lambda df: agreement(df, level="ordinal"),
        lambda df: agreement(df, method="krippendorff", level="interval"),
        lambda df: agreement(df, method="krippendorff", level="ordinal"),
        lambda df: judgments_to_qrels(df),
        lambda df: judgment_summary(df),
    ],
)
def test_non_numeric_rating_names_column_and_dtype(call):
    with pytest.raises(SchemaError) as err:
        call(judgments(relevance=["1", "2", "0", "0"]))
    assert (err.value.column, err.value.found) == ("relevance", "String")
    assert "numeric" in str(err.value)


def test_unsupported_rating_dtype_even_for_nominal():
    with pytest.raises(SchemaError) as err:
        agreement(judgments(relevance=[[1], [2], [0], [0]]))
    assert err.value.column == "relevance" and "List" in err.value.found


@pytest.mark.parametrize("call", ALL_CALLS)
def test_nan_rating_is_an_error_naming_the_row(call):
    with pytest.raises(SchemaError, match="NaN") as err:
        call(judgments(relevance=[1.0, 2.0, float("nan"), 0.0]))
    assert (err.value.column, err.value.row) == ("relevance", 2)


@pytest.mark.parametrize("call", ALL_CALLS)
def test_duplicate_rating_names_item_and_annotator(call):
    df = pl.concat([judgments(), judgments().slice(1, 1)])
    with pytest.raises(SchemaError) as err:
        call(df)
    message = str(err.value)
    assert err.value.column == "annotator" and err.value.row == 4
    assert "'y'" in message and "query='q1'" in message and "item_id='a'" in message and "rows 1 and 4" in message


@pytest.mark.parametrize(
    ("call", "allowed"),
    [
        (lambda df: agreement(df, method="scott"), "['cohen', 'fleiss', 'krippendorff']"),
        (lambda df: agreement(df, level="ratio"), "['nominal', 'ordinal', 'interval']"),
        (lambda df: cohen_kappa(df, "x", "y", weights="squared"), "[None, 'linear', 'quadratic']"),
    ],
)
def test_unknown_choice_lists_allowed_values(call, allowed):
    with pytest.raises(InvalidParameterError) as err:
        call(judgments())
    assert allowed in str(err.value)


def test_unknown_or_identical_rater():
    with pytest.raises(InvalidParameterError) as err:
        cohen_kappa(judgments(), "x", "zed")
    assert "'zed'" in str(err.value) and "['x', 'y']" in str(err.value)
    with pytest.raises(InvalidParameterError, match="must differ"):
        cohen_kappa(judgments(), "x", "x")


def test_no_shared_items():
    df = judgments(item_id=["a", "b", "c", "d"])
    with pytest.raises(InvalidParameterError, match="'x' and 'y' share no rated item"):
        cohen_kappa(df, "x", "y")
    with pytest.raises(InvalidParameterError, match="no two annotators rated a common item"):
        agreement(df)
    with pytest.raises(InvalidParameterError, match="Krippendorff"):
        agreement(df, method="krippendorff")
    assert judgment_summary(df)["agreement"].item() is None


def test_fleiss_unequal_raters_names_an_item():
    df = judgments(relevance=[1, 2, 0, None])  # null = not rated: item b has one rating
    with pytest.raises(InvalidParameterError) as err:
        agreement(df, method="fleiss")
    message = str(err.value)
    assert "query='q2', item_id='b'" in message and "has 1" in message and "krippendorff" in message
    with pytest.raises(InvalidParameterError, match="at least two ratings"):
        agreement(judgments(item_id=["a", "b", "c", "d"]), method="fleiss")
    with pytest.raises(InvalidParameterError, match="nominal"):
        agreement(judgments(), method="fleiss", level="ordinal")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda df: agreement(df, item=[]), "item"),
        (lambda df: agreement(df, item=["query", "query"]), "item"),
        (lambda df: agreement(df, annotator=1), "annotator"),
        (lambda df: judgments_to_qrels(df, threshold="2"), "threshold"),
        (lambda df: judgments_to_qrels(df, threshold=True), "threshold"),
        (lambda df: judgments_to_qrels(df, threshold=math.nan), "threshold"),
        (lambda df: judgments_to_qrels(df, graded=1), "graded"),
        (lambda df: judgment_summary(df, by=3), "by"),
    ],
)
def test_bad_parameters_are_typed_errors(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call(judgments())


def test_qrels_id_dtype_checked():
    df = judgments(query=[1.5, 1.5, 2.5, 2.5])
    with pytest.raises(SchemaError) as err:
        judgments_to_qrels(df)
    assert (err.value.column, err.value.found) == ("query", "Float64")


def test_null_ratings_are_not_rated_in_every_frame_kind():
    pd = pytest.importorskip("pandas")
    df = long([[0, 1, math.nan, 2], [0, 1, 1, math.nan], [1, math.nan, 1, 2]])
    pdf = pd.DataFrame(df.to_dict(as_series=False)).astype({"relevance": "float64"})  # nulls become NaN
    assert pdf["relevance"].isna().sum() == 3
    for level in ("nominal", "interval"):
        want = agreement(df, method="krippendorff", level=level)
        assert agreement(pdf, method="krippendorff", level=level).equals(want)
        assert want["n_ratings"].item() == 9


def test_categorical_and_boolean_ratings_are_nominal():
    a, b = [True, False, True, True], [True, False, False, True]
    df = pl.DataFrame(
        {"query": ["q"] * 8, "item_id": list("wxyz") * 2, "annotator": ["a"] * 4 + ["b"] * 4, "relevance": a + b}
    )
    want = sk_kappa(a, b)
    assert cohen_kappa(df, "a", "b") == pytest.approx(want, abs=1e-12)
    as_labels = df.with_columns(pl.col("relevance").cast(pl.String).cast(pl.Categorical))
    assert cohen_kappa(as_labels, "a", "b") == pytest.approx(want, abs=1e-12)
    assert agreement(as_labels, method="fleiss")["value"].item() == pytest.approx(
        agreement(df, method="fleiss")["value"].item(), abs=1e-12
    )
