"""evaluate_run gives the same per-query frame whatever form the ids come in (issue 22 item 3).

String ids, Categorical and Enum ids (Arrow dictionaries, as a Parquet reader may give them),
a LazyFrame over a Parquet file (only the needed columns read) and a pyarrow table with
dictionary ids: one answer, compared with polars ``equals`` (bit for bit), and the errors for
bad input still name the column and the row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragframe as rf
from ragframe.exceptions import SchemaError

METRICS = ["ndcg_at_k", "mrr", "recall_at_k", "precision_at_k", "hit_rate_at_k", "average_precision"]


def _frames(seed: int = 0, queries: int = 40, docs: int = 15) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run with ties (ranked by doc id among them) and qrels with a judged-only query."""
    rng = np.random.default_rng(seed)
    qid = np.repeat([f"q{i:03d}" for i in range(queries)], docs)
    doc = np.concatenate([rng.choice(60, size=docs, replace=False) for _ in range(queries)])
    run = pl.DataFrame(
        {"query_id": qid, "doc_id": [f"d{d}" for d in doc], "score": rng.integers(0, 4, qid.size).astype(float)}
    )
    judged = run.sample(fraction=0.3, seed=seed).select("query_id", "doc_id")
    extra = pl.DataFrame({"query_id": ["q999"], "doc_id": ["d1"]})
    qrels = pl.concat([judged, extra]).with_columns(relevance=pl.lit(1) + pl.int_range(pl.len()) % 3).sort("query_id")
    return run, qrels


def _as(frame: pl.DataFrame, dtype: pl.DataType) -> pl.DataFrame:
    return frame.with_columns(pl.col("query_id", "doc_id").cast(dtype))


def _score(run: object, qrels: object) -> pl.DataFrame:
    return rf.evaluate_run(run, qrels, k=[3, 10], metrics=METRICS, complete=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_categorical_and_enum_ids_equal_strings(seed):
    run, qrels = _frames(seed)
    expected = _score(run, qrels)
    ids = pl.concat([run, qrels], how="diagonal").get_column("doc_id").unique().sort()
    enum = pl.Enum(pl.concat([ids, run["query_id"].unique().sort(), pl.Series(["q999"])]).unique())
    for dtype in (pl.Categorical, enum):
        got = _score(_as(run, dtype), _as(qrels, dtype))
        assert got.equals(expected), dtype
        assert got.schema["query_id"] == pl.String
    assert _score(_as(run, pl.Categorical), qrels).equals(expected)  # one side categorical


def test_lazy_parquet_and_arrow_dictionaries_equal_eager(tmp_path: Path):
    run, qrels = _frames(3)
    expected = _score(run, qrels)
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    run.with_columns(rank=pl.int_range(pl.len())).write_parquet(run_path)
    qrels.write_parquet(qrels_path)
    assert _score(pl.scan_parquet(run_path), pl.scan_parquet(qrels_path)).equals(expected)
    ids = ["query_id", "doc_id"]
    run_table = pq.read_table(run_path, columns=[*ids, "score"], read_dictionary=ids)
    assert pa.types.is_dictionary(run_table.schema.field("doc_id").type)
    assert _score(run_table, pq.read_table(qrels_path, read_dictionary=ids)).equals(expected)


def test_categorical_bad_input_names_column_and_row():
    run, qrels = _frames(4)
    repeated = _as(pl.concat([run.head(3), run.head(1)]), pl.Categorical)
    with pytest.raises(SchemaError, match="doc_id") as info:
        rf.evaluate_run(repeated, _as(qrels, pl.Categorical))
    assert "row 3" in str(info.value)
    nulls = run.with_columns(doc_id=pl.when(pl.int_range(pl.len()) == 5).then(None).otherwise("doc_id"))
    with pytest.raises(SchemaError, match="null id") as info:
        rf.evaluate_run(_as(nulls, pl.Categorical), qrels)
    assert "doc_id" in str(info.value) and "row 5" in str(info.value)
