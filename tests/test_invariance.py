"""Invariants every registered metric keeps, driven by the registry (``rf.list_metrics()``).

A metric joins these tests by being registered: row order, any batch split, LazyFrame vs
DataFrame, every frame kind, untouched input columns, bounds and determinism. Each metric is
scored alone through ``rf.evaluate`` with its family's example options (``tests/metric_cases.py``),
plus a few whole-family cases (graded and scored judgments, every heuristic at once).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from frames import make_frame
from hypothesis import given, settings
from hypothesis import strategies as st
from metric_cases import CASES
from polars.testing import assert_frame_equal

from ragframe.judges.base import STATUSES
from ragframe.stats.summary import score_bounds

SPECS = CASES
IDS = [case.name for case in CASES]


def _score(spec, frame):
    return spec.score(frame)


def _outputs(spec):
    return spec.outputs()


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40))
def test_row_order_does_not_matter(spec, seed, n):
    frame = make_frame(spec.inputs, n, seed)
    whole = _score(spec, frame)
    perm = np.random.default_rng(seed).permutation(n)
    shuffled = _score(spec, frame[perm])
    restored = shuffled[np.argsort(perm)]
    assert_frame_equal(restored, whole, check_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 40), data=st.data())
def test_any_batch_split_gives_the_same_rows(spec, seed, n, data):
    frame = make_frame(spec.inputs, n, seed)
    whole = _score(spec, frame)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=5)))
    bounds = [0, *cuts, n]
    parts = [_score(spec, frame[a:b]) for a, b in itertools.pairwise(bounds)]
    assert_frame_equal(pl.concat(parts), whole, check_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_lazy_equals_eager_and_stays_lazy(spec):
    frame = make_frame(spec.inputs, 50, 7)
    lazy = _score(spec, frame.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect_schema().names() == _score(spec, frame).columns
    assert_frame_equal(lazy.collect(), _score(spec, frame))


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("kind", ["arrow_table", "arrow_batch", "pandas"])
def test_every_frame_kind_in_is_the_same_kind_out(spec, kind):
    frame = make_frame(spec.inputs, 30, 11)
    expected = _score(spec, frame)
    if kind == "arrow_table":
        given_frame = frame.to_arrow()
        out = _score(spec, given_frame)
        assert isinstance(out, pa.Table)
        assert out.schema.names[: frame.width] == given_frame.schema.names
        assert out.select(given_frame.schema.names).equals(given_frame)  # input columns untouched
        got = pl.DataFrame(pl.from_arrow(out))
    elif kind == "arrow_batch":
        given_frame = frame.to_arrow().to_batches()[0]
        out = _score(spec, given_frame)
        assert isinstance(out, pa.RecordBatch)
        got = pl.DataFrame(pl.from_arrow(out))
    else:
        pd = pytest.importorskip("pandas")
        given_frame = frame.to_pandas()
        given_frame.index = pd.RangeIndex(100, 100 + frame.height)
        out = _score(spec, given_frame)
        assert isinstance(out, pd.DataFrame)
        assert list(out.index) == list(given_frame.index)
        got = pl.from_pandas(out.reset_index(drop=True))
    outputs = _outputs(spec)
    assert_frame_equal(got.select(outputs), expected.select(outputs), check_dtypes=False)


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_inputs_untouched_outputs_bounded_and_deterministic(spec):
    frame = make_frame(spec.inputs, 200, 3)
    before = frame.clone()
    out = _score(spec, frame)
    assert_frame_equal(frame, before)
    assert out.height == frame.height
    assert out.columns == [*frame.columns, *_outputs(spec)]
    assert_frame_equal(out.select(frame.columns), frame)
    for name in _outputs(spec):
        values = out[name]
        if name.endswith(("_signals", "_nuggets")):  # list companions (judge_nugget_assignment_nuggets)
            assert isinstance(values.dtype, pl.List), name
            continue
        if name.endswith("passed"):
            assert values.dtype == pl.Boolean, name
            continue
        if name.endswith(("_reason", "_status", "_error", "_source")):  # judge metrics' companions
            assert values.dtype == pl.String, name
            if name.endswith("_status"):
                assert set(values.unique()) <= set(STATUSES), name
            continue
        assert values.dtype == pl.Float64, name
        assert values.drop_nulls().len() > 0, name  # the random frame exercises real values
        finite = values.drop_nulls()
        assert not finite.is_nan().any(), name
        low, high = score_bounds(name) or (-np.inf, np.inf)  # the registered bounds ([0, 1]; utility: none)
        assert finite.len() == 0 or (finite.min() >= low and finite.max() <= high), name
    assert_frame_equal(_score(spec, frame), out)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_empty_frame_gives_empty_outputs(spec):
    frame = make_frame(spec.inputs, 0, 0)
    out = _score(spec, frame)
    assert out.height == 0
    assert out.columns == [*frame.columns, *_outputs(spec)]


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_the_number_of_threads_does_not_change_a_score(spec):
    """One thread (a Ray task holding one CPU) and every core give the same scores, bit for bit."""
    from ragframe.concurrency import thread_limit

    frame = make_frame(spec.inputs, 300, 5)
    with thread_limit(1):
        one = _score(spec, frame)
    with thread_limit(4):  # more threads than a 2-core machine has: capped at its cores
        many = _score(spec, frame)
    assert_frame_equal(one, many)
    assert_frame_equal(one, _score(spec, frame))
