"""rf.assessor_agreement: two qrels compared on their common pairs (TREC RAG 2025 NIST vs UMBRELA-v2)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

import ragframe as rf


@pytest.fixture(scope="module")
def rag25() -> tuple[pl.DataFrame, pl.DataFrame]:
    nist = rf.read_qrels(shared_path("anserini_qrels", "qrels.rag25.test.txt"))
    umbrela = rf.read_qrels(shared_path("anserini_qrels", "qrels.rag25.test-umbrela2.txt"))
    return nist, umbrela


def test_rag25_reproduces_published_figures(rag25) -> None:
    # reference values: anserini_qrels/README.md (scikit-learn cohen_kappa_score on the 10,284 pairs)
    nist, umbrela = rag25
    row = rf.assessor_agreement(nist, umbrela).row(0, named=True)
    assert (row["pairs"], row["only_a"], row["only_b"]) == (10284, 0, 0)
    assert round(row["agreement"], 3) == 0.441
    assert round(row["kappa"], 3) == 0.233
    assert round(row["kappa_linear"], 3) == 0.373
    assert round(row["kappa_quadratic"], 3) == 0.492
    at2 = rf.assessor_agreement(nist, umbrela, binarize_at=2).row(0, named=True)
    assert (round(at2["agreement"], 3), round(at2["kappa"], 3)) == (0.716, 0.431)
    at1 = rf.assessor_agreement(nist, umbrela, binarize_at=1).row(0, named=True)
    assert (round(at1["agreement"], 3), round(at1["kappa"], 3)) == (0.731, 0.367)


def test_rag25_per_query_equals_sklearn(rag25) -> None:
    nist, umbrela = rag25
    per_query = rf.assessor_agreement(nist, umbrela, by="query_id")
    assert per_query.height == 22 and per_query["pairs"].sum() == 10284
    joined = nist.join(umbrela, on=["query_id", "doc_id"], suffix="_b")
    for row in per_query.iter_rows(named=True):
        q = joined.filter(pl.col("query_id") == row["query_id"])
        x, y = q["relevance"].to_numpy(), q["relevance_b"].to_numpy()
        assert row["agreement"] == pytest.approx(float(np.mean(x == y)))
        assert row["kappa"] == pytest.approx(cohen_kappa_score(x, y))
        assert row["kappa_linear"] == pytest.approx(cohen_kappa_score(x, y, weights="linear"))
        assert row["kappa_quadratic"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"))


def test_rag25_confusion_matrix(rag25) -> None:
    nist, umbrela = rag25
    matrix = rf.assessor_agreement(nist, umbrela, confusion=True)
    assert matrix["count"].sum() == 10284
    # the diagonal over the total is the exact agreement
    diagonal = matrix.filter(pl.col("label_a") == pl.col("label_b"))["count"].sum()
    assert diagonal / 10284 == pytest.approx(0.441170750680669)
    # the README's label counts are the margins
    by_a = dict(matrix.group_by("label_a").agg(pl.col("count").sum()).iter_rows())
    assert by_a == {0: 3619, 1: 1499, 2: 3760, 3: 1318, 4: 88}


def test_hand_example_and_unshared_pairs() -> None:
    a = pl.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3", "d9"], "relevance": [0, 1, 2, 1]}
    )
    b = pl.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q3"], "doc_id": ["d1", "d2", "d4", "d9"], "relevance": [0, 0, 3, 1]}
    )
    row = rf.assessor_agreement(a, b).row(0, named=True)
    # common: (q1,d1): 0/0, (q1,d2): 1/0 -> labels {0, 1}; table [[1,0],[1,0]]: po = 1/2, pe = (2/2)(1/2)+0 = 1/2
    assert (row["pairs"], row["only_a"], row["only_b"], row["agreement"], row["kappa"]) == (2, 2, 2, 0.5, 0.0)
    per = rf.assessor_agreement(a, b, by="query_id")
    assert per["query_id"].to_list() == ["q1", "q2", "q3"]
    assert per["pairs"].to_list() == [2, 0, 0]
    assert per["only_a"].to_list() == [1, 1, 0] and per["only_b"].to_list() == [1, 0, 1]
    assert per["kappa"].to_list()[1:] == [None, None]


ratings = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=40)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(ratings, st.randoms())
def test_property_equals_sklearn_and_row_order_free(pairs, rnd) -> None:
    x = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    ids = [f"d{i}" for i in range(len(pairs))]
    a = pl.DataFrame({"query_id": "q", "doc_id": ids, "relevance": x})
    b = pl.DataFrame({"query_id": "q", "doc_id": ids, "relevance": y})
    order = list(range(len(pairs)))
    rnd.shuffle(order)
    got = rf.assessor_agreement(a, b[order])
    if len(set(x) | set(y)) > 1:  # sklearn is nan where chance agreement is 1
        assert got["kappa"].item() == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)
        assert got["kappa_quadratic"].item() == pytest.approx(cohen_kappa_score(x, y, weights="quadratic"), abs=1e-12)
    assert got["agreement"].item() == pytest.approx(float(np.mean(x == y)))


def test_query_result_does_not_depend_on_other_queries() -> None:
    a = pl.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "doc_id": list("abcabc"), "relevance": [0, 1, 3, 2, 2, 0]})
    b = pl.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "doc_id": list("abcabc"), "relevance": [0, 2, 3, 2, 1, 1]})
    both = rf.assessor_agreement(a, b, by="query_id").filter(pl.col("query_id") == "q1")
    alone = rf.assessor_agreement(a.head(3), b.head(3), by="query_id")
    assert both.equals(alone)


def test_frame_kinds_and_column_names() -> None:
    a = pl.DataFrame({"qid": [1, 1], "docno": ["x", "y"], "rel": [1.0, 0.0]})
    b = pl.DataFrame({"qid": [1, 1], "docno": ["x", "y"], "rel": [1, 1]}, schema_overrides={"qid": pl.Int32})
    got = rf.assessor_agreement(a.to_pandas(), b.to_arrow(), query_id="qid", doc_id="docno", relevance="rel")
    assert got["pairs"].item() == 2 and got["agreement"].item() == 0.5


def test_bad_inputs() -> None:
    a = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["d", "d"], "relevance": [1, 2]})
    good = pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})
    with pytest.raises(rf.SchemaError, match=r"judged twice in qrels a.*row 1"):
        rf.assessor_agreement(a, good)
    with pytest.raises(rf.SchemaError, match="relevance"):
        rf.assessor_agreement(good, good.with_columns(pl.lit(1.5).alias("relevance")))
    with pytest.raises(rf.SchemaError, match="null value in qrels b"):
        rf.assessor_agreement(good, good.with_columns(pl.lit(None, dtype=pl.Int64).alias("relevance")))
    with pytest.raises(rf.SchemaError, match="different types"):
        rf.assessor_agreement(good, good.with_columns(pl.lit(7).alias("query_id")))
    with pytest.raises(rf.InvalidParameterError, match="share no judged"):
        rf.assessor_agreement(good, good.with_columns(pl.lit("e").alias("doc_id")))
    with pytest.raises(rf.InvalidParameterError, match="binarize_at"):
        rf.assessor_agreement(good, good, binarize_at=1.5)
    with pytest.raises(rf.InvalidParameterError, match="by must be"):
        rf.assessor_agreement(good, good, by="doc_id")
