"""rf.preference_agreement: RAGChecker's meta-evaluation protocol, reproduced on its own data."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ragframe as rf
from ragframe.stats.preference import weighted_correlations

ASPECTS = ("correctness_label", "completeness_label", "overall_label")


@pytest.fixture(scope="module")
def ragchecker() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(560 label rows with RAGChecker's scores of both answers, 280 instances with both annotators' labels)."""
    human = json.loads(shared_path("ragchecker_human_labels", "human_labeled_data.json").read_text())
    baseline = json.loads(shared_path("ragchecker_human_labels", "baseline_ragchecker.json").read_text())
    by_id = {row["instance_id"]: row for row in baseline}
    rows = []
    for row in human:
        base = by_id[row["instance_id"]]
        for aspect in ASPECTS:
            rows.append(
                {
                    "instance_id": row["instance_id"],
                    "aspect": aspect,
                    "first": base["model1"]["ragchecker"][aspect],
                    "second": base["model2"]["ragchecker"][aspect],
                    "human": row[aspect],
                }
            )
    labels = pl.DataFrame(rows)
    pairs = pl.DataFrame(
        [
            {"instance_id": a["instance_id"], **{f"{k}_1": a[k] for k in ASPECTS}, **{f"{k}_2": b[k] for k in ASPECTS}}
            for a, b in zip(human[0::2], human[1::2], strict=True)
        ]
    )
    return labels, pairs


# RAGChecker paper, Table 2 (and ragchecker_human_labels/README.md): Pearson / Spearman x100
RAGCHECKER_ROW = {
    "correctness_label": (49.66, 46.95),
    "completeness_label": (60.67, 58.11),
    "overall_label": (61.93, 60.90),
}
HUMAN_ROW = {"correctness_label": (63.67, 59.19), "completeness_label": (71.91, 68.36), "overall_label": (70.09, 68.89)}


@pytest.mark.parametrize("aspect", ASPECTS)
def test_reproduces_ragchecker_row(ragchecker, aspect) -> None:
    labels, _ = ragchecker
    got = rf.preference_agreement(
        labels.filter(pl.col("aspect") == aspect), first="first", second="second", human="human", cluster="instance_id"
    ).row(0, named=True)
    assert got["n"] == 560 and got["missing"] == 0
    assert (round(100 * got["pearson"], 2), round(100 * got["spearman"], 2)) == RAGCHECKER_ROW[aspect]
    assert got["pearson_low"] < got["pearson"] < got["pearson_high"]
    assert got["spearman_low"] < got["spearman"] < got["spearman_high"]


@pytest.mark.parametrize("aspect", ASPECTS)
def test_reproduces_annotator_ceiling(ragchecker, aspect) -> None:
    _, pairs = ragchecker
    frame = pairs.with_columns(pl.lit(0).alias("zero"))
    got = rf.preference_agreement(frame, first="zero", second=f"{aspect}_1", human=f"{aspect}_2", n_resamples=0).row(
        0, named=True
    )
    assert (round(100 * got["pearson"], 2), round(100 * got["spearman"], 2)) == HUMAN_ROW[aspect]
    assert got["pearson_low"] is None


def test_median_imputation_and_normalisation_by_hand() -> None:
    # differences 0.6, -0.8, 0.0, missing -> median 0.0; normalised: 2, -2, 2/7*... ; compare with scipy
    frame = pl.DataFrame({"a": [0.2, 0.9, 0.5, 0.4], "b": [0.8, 0.1, 0.5, None], "h": [2, -2, 0, 1]})
    got = rf.preference_agreement(frame, first="a", second="b", human="h", n_resamples=0).row(0, named=True)
    x = np.array([0.6, -0.8, 0.0, 0.0])
    assert got["missing"] == 1
    assert got["pearson"] == pytest.approx(stats.pearsonr(x, [2, -2, 0, 1])[0])
    assert got["spearman"] == pytest.approx(stats.spearmanr(x, [2, -2, 0, 1])[0])


def test_constant_preference_is_null_not_a_number() -> None:
    frame = pl.DataFrame({"a": [0.5, 0.5, 0.5], "b": [0.5, 0.5, 0.5], "h": [1, 0, -1]})
    got = rf.preference_agreement(frame, first="a", second="b", human="h", n_resamples=50)
    assert got["pearson"].item() is None and got["spearman"].item() is None


def test_bootstrap_is_seeded_and_clustered(ragchecker) -> None:
    labels, _ = ragchecker
    frame = labels.filter(pl.col("aspect") == "overall_label")
    kw = {"first": "first", "second": "second", "human": "human"}
    one = rf.preference_agreement(frame, **kw, cluster="instance_id", seed=3)
    assert one.equals(rf.preference_agreement(frame, **kw, cluster="instance_id", seed=3))
    # resampling rows treats the two annotators of one pair as independent: a narrower interval
    rows = rf.preference_agreement(frame, **kw, seed=3).row(0, named=True)
    pairs = one.row(0, named=True)
    assert rows["pearson_high"] - rows["pearson_low"] < pairs["pearson_high"] - pairs["pearson_low"]
    # row order does not change the point values
    shuffled = rf.preference_agreement(frame.sample(fraction=1.0, shuffle=True, seed=1), **kw, n_resamples=0)
    assert shuffled["pearson"].item() == pytest.approx(pairs["pearson"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-2, 2), st.integers(-3, 3), st.integers(0, 3)), min_size=3, max_size=25),
)
def test_weighted_correlations_equal_scipy_on_the_written_out_sample(rows) -> None:
    x = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=float) / 3
    w = np.array([r[2] for r in rows], dtype=float)
    p, s = weighted_correlations(x, y, w[None, :])
    xs, ys = np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int))
    if xs.size < 2 or np.ptp(xs) == 0 or np.ptp(ys) == 0:
        assert np.isnan(p[0]) and np.isnan(s[0])
        return
    assert p[0] == pytest.approx(stats.pearsonr(xs, ys)[0], abs=1e-9)
    assert s[0] == pytest.approx(stats.spearmanr(xs, ys)[0], abs=1e-9)


def test_frame_kinds() -> None:
    frame = pl.DataFrame({"a": [0.1, 0.4, 0.3], "b": [0.3, 0.2, 0.3], "h": [1, -1, 0]})
    want = rf.preference_agreement(frame, first="a", second="b", human="h", n_resamples=0)
    for other in (frame.to_pandas(), frame.to_arrow(), frame.lazy()):
        assert rf.preference_agreement(other, first="a", second="b", human="h", n_resamples=0).equals(want)


def test_bad_inputs() -> None:
    frame = pl.DataFrame({"a": [0.1, 0.4], "b": [0.3, 0.2], "h": [1, None], "s": ["x", "y"]})
    with pytest.raises(rf.SchemaError, match=r"not a finite number.*'h', row 1"):
        rf.preference_agreement(frame, first="a", second="b", human="h")
    with pytest.raises(rf.SchemaError, match="wrong dtype"):
        rf.preference_agreement(frame, first="s", second="b", human="a")
    with pytest.raises(rf.SchemaError, match=r"missing|not found|column"):
        rf.preference_agreement(frame, first="nope", second="b", human="a")
    with pytest.raises(rf.InvalidParameterError, match="every score difference is missing"):
        rf.preference_agreement(
            frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("b")), first="a", second="b", human="a"
        )
    with pytest.raises(rf.InvalidParameterError, match="confidence"):
        rf.preference_agreement(frame, first="a", second="b", human="a", confidence=1.0)
    with pytest.raises(rf.InvalidParameterError, match="n_resamples"):
        rf.preference_agreement(frame, first="a", second="b", human="a", n_resamples=-1)


def test_bootstrap_in_blocks_gives_the_same_intervals(ragchecker, monkeypatch) -> None:
    import ragframe.stats.preference as preference

    labels, _ = ragchecker
    frame = labels.filter(pl.col("aspect") == "completeness_label")
    kw = {"first": "first", "second": "second", "human": "human", "cluster": "instance_id", "n_resamples": 300}
    whole = rf.preference_agreement(frame, **kw)
    monkeypatch.setattr(preference, "_CELLS", 7 * frame.height)  # blocks of 7 resamples
    assert rf.preference_agreement(frame, **kw).equals(whole)
