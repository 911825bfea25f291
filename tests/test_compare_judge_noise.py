"""``rf.compare(..., samples=...)``: several judge samples per row, the row as the unit of the test.

- The result equals ``rf.compare`` on the row means computed here by hand (every test).
- A seeded simulation under the null (the same pipeline run twice, each answer judged 5
  times): testing every verdict as its own pair calls the runs different far more often than
  alpha; ``samples=`` (and the row means ragframe's judges write) hold alpha. The margins
  are several binomial standard deviations wide, and the seed fixes the outcome.
- Bad input: duplicate (id, sample), slices varying within a row, the samples column used
  as an id or slice, a missing column, samples on one side only.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError


def long_frames(rows: int, k: int, seed: int, shared_answers: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two runs of 0/1 verdicts, ``k`` per answer, one frame row per verdict (as benchmarks/calibration.py, 3)."""
    rng = np.random.default_rng(seed)
    mu = rng.beta(2.0, 2.0, size=(rows, 1))
    if shared_answers:
        q_a = q_b = mu
    else:
        q_a = np.clip(mu + rng.normal(0.0, 0.2, size=(rows, 1)), 0.0, 1.0)
        q_b = np.clip(mu + rng.normal(0.0, 0.2, size=(rows, 1)), 0.0, 1.0)
    a = rng.binomial(1, q_a, size=(rows, k)).astype(float)
    b = rng.binomial(1, q_b, size=(rows, k)).astype(float)
    ids = np.repeat(np.arange(rows), k)
    sample = np.tile(np.arange(k), rows)
    left = pl.DataFrame({"id": ids, "sample": sample, "faithfulness": a.ravel()})
    right = pl.DataFrame({"id": ids, "sample": sample, "faithfulness": b.ravel()})
    return left, right


@pytest.mark.parametrize("test", ["t", "wilcoxon", "permutation", "bootstrap"])
def test_samples_equal_the_test_on_row_means_computed_by_hand(test):
    left, right = long_frames(40, 4, seed=3, shared_answers=False)
    # some samples failed on one side (a null verdict): the row mean uses the samples both sides scored
    left = left.with_columns(pl.when(pl.col("id").is_in([2, 5]) & (pl.col("sample") == 1)).then(None)
                             .otherwise(pl.col("faithfulness")).alias("faithfulness"))  # fmt: skip
    right = right.with_columns(pl.when((pl.col("id") == 7) & (pl.col("sample") < 3)).then(None)
                               .otherwise(pl.col("faithfulness")).alias("faithfulness"))  # fmt: skip
    left = left.with_columns(group=pl.col("id") % 3)
    got = rf.compare(left, right, on="id", samples="sample", by="group", test=test, n_resamples=999)
    both = left.join(right, on=["id", "sample"], suffix="_b", maintain_order="left")
    both = both.drop_nulls(["faithfulness", "faithfulness_b"])
    means = both.group_by("id", maintain_order=True).agg(
        pl.col("group").first(), pl.col("faithfulness").mean(), a_b=pl.col("faithfulness_b").mean()
    )
    expected = rf.compare(
        means.select("id", "group", "faithfulness"),
        means.select("id", faithfulness="a_b"),
        on="id",
        by="group",
        test=test,
        n_resamples=999,
    )
    assert got.equals(expected)
    assert got["n"].sum() == 40  # every row, one pair each
    # by hand, row 7: only sample 3 was scored on both sides
    row7 = both.filter(pl.col("id") == 7)
    assert row7.height == 1 and row7["sample"].item() == 3


def test_row_means_use_only_the_samples_both_sides_scored():
    a = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "sample": [0, 1] * 3, "mrr": [0.2, None, 0.4, 0.6, None, None]})
    b = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "sample": [0, 1] * 3, "mrr": [0.5, 0.9, 0.8, 0.8, 0.1, 0.3]})
    row = rf.compare(a, b, samples="sample").row(0, named=True)
    # id 1: sample 0 only (a's sample 1 is null): a 0.2, b 0.5; id 2: a 0.5, b 0.8; id 3: no sample on both sides
    assert row["n"] == 2
    assert row["mean_a"] == pytest.approx((0.2 + 0.5) / 2) and row["mean_b"] == pytest.approx((0.5 + 0.8) / 2)
    assert row["delta"] == pytest.approx(0.3)


def _false_positive_rates(shared_answers: bool, sims: int = 1000, n: int = 50, k: int = 5) -> dict[str, float]:
    """Rates of 'significant' at alpha 0.05 over ``sims`` null simulations: the three analyses, one call each."""
    left, right = long_frames(sims * n, k, seed=2024, shared_answers=shared_answers)
    left = left.with_columns(sim=pl.col("id") // n)
    options = {"metrics": ["faithfulness"], "correction": None, "by": "sim"}
    as_pairs = rf.compare(left, right, on=["id", "sample"], **options)
    clustered = rf.compare(left, right, on="id", samples="sample", **options)
    means = [f.group_by("id", maintain_order=True).agg(pl.col("faithfulness").mean()) for f in (left, right)]
    row_means = rf.compare(means[0].with_columns(sim=pl.col("id") // n), means[1], on="id", **options)
    for out, pairs in ((as_pairs, n * k), (clustered, n), (row_means, n)):
        assert out.height == sims and out["n"].min() == out["n"].max() == pairs
    return {name: out["significant"].mean() for name, out in
            (("as pairs", as_pairs), ("samples=", clustered), ("row means", row_means))}  # fmt: skip


def test_judge_noise_simulation_samples_hold_alpha_where_pairs_of_verdicts_do_not():
    """Two runs of one pipeline (new answers, 5 verdicts each), 1,000 null simulations of 50 rows, seed 2024.

    Binomial sd of a rate over 1,000 simulations: 0.007 at 0.05, 0.010 at 0.12. The row-level
    analyses must lie in [0.03, 0.07] (about 3 sd either side of 0.05); verdicts tested as
    pairs must exceed 0.09 (expected about 0.12 for this design; 0.09 is about 5 sd above
    0.05). Measured with this seed: as pairs 0.133, samples= and row means 0.047.
    """
    rates = _false_positive_rates(shared_answers=False)
    assert rates["samples="] == rates["row means"]  # the same test on the same row means
    assert 0.03 <= rates["samples="] <= 0.07
    assert rates["as pairs"] > 0.09


def test_runs_that_differ_only_by_judge_noise_are_called_different_at_alpha():
    """The same answers judged twice: every verdict is an independent pair, so every analysis holds alpha.

    Measured with seed 2024: as pairs 0.039, samples= and row means 0.044 (1,000 simulations).
    """
    rates = _false_positive_rates(shared_answers=True)
    for name, rate in rates.items():
        assert 0.03 <= rate <= 0.07, (name, rate)


def test_bad_samples_arguments_are_refused():
    a = pl.DataFrame(
        {"id": [1, 1, 2, 2], "sample": [0, 1, 0, 1], "mrr": [0.1, 0.2, 0.3, 0.4], "g": ["x", "x", "y", "z"]}
    )
    assert rf.compare(a, a, samples="sample", metrics="mrr")["n"].item() == 2
    with pytest.raises(SchemaError, match=r"duplicate id in a") as error:
        rf.compare(a.with_columns(sample=pl.lit(0)), a, samples="sample", metrics="mrr")
    assert error.value.row == 1
    with pytest.raises(SchemaError, match="slice column differs between the samples of one row") as error:
        rf.compare(a, a.drop("g"), samples="sample", by="g", metrics="mrr")
    assert error.value.column == "g" and error.value.found == "row 2"
    for bad in ({"samples": "id"}, {"samples": "g", "by": "g"}, {"samples": ""}, {"samples": 3}):
        with pytest.raises(InvalidParameterError, match="samples"):
            rf.compare(a, a, metrics="mrr", **bad)
    with pytest.raises(SchemaError, match="missing id column in b") as error:
        rf.compare(a, a.drop("sample"), samples="sample", metrics="mrr")
    assert error.value.column == "sample"
    with pytest.raises(SchemaError, match=r"1 id\(s\) of a are missing from b, e\.g\. \[\(2, 1\)\]"):
        rf.compare(a, a.filter((pl.col("id") != 2) | (pl.col("sample") != 1)), samples="sample", metrics="mrr")
