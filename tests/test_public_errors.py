"""Errors name the public function the user called and its parameters, in its words (ragframe.public)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import threading
import warnings

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import CALLER, InvalidParameterError, SchemaError
from ragframe.public import is_public, parameter_name, public, user_stacklevel

BASE = pl.DataFrame({"id": [1, 2, 3], "mrr": [0.5, 0.2, 0.9]})
SHORT = pl.DataFrame({"id": [1, 2], "mrr": [0.4, 0.1]})
TWICE = pl.DataFrame({"id": [1, 1, 2], "mrr": [0.4, 0.1, 0.3]})


def test_every_public_function_carries_the_mark():
    functions = [n for n in rf.__all__ if callable(getattr(rf, n)) and not inspect.isclass(getattr(rf, n))]
    assert len(functions) > 60
    assert [n for n in functions if not is_public(getattr(rf, n))] == []


@pytest.mark.parametrize(
    "module", ["ragframe.plot", "ragframe.distributed", "ragframe.datasets", "ragframe.judges", "ragframe.reporting"]
)
def test_every_function_of_a_public_namespace_carries_the_mark(module):
    """rf.plot.*, rf.distributed.*, ...: no function threads its name to its errors, so each is marked."""
    namespace = importlib.import_module(module)
    functions = [n for n in namespace.__all__ if inspect.isfunction(getattr(namespace, n))]
    assert functions
    assert [n for n in functions if not is_public(getattr(namespace, n))] == []


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: rf.gate(baseline=BASE, current=SHORT), "gate: 1 id(s) of baseline are missing from current, e.g. [3]"),
        (lambda: rf.gate(baseline=SHORT, current=BASE), "gate: 1 id(s) of current are missing from baseline, e.g. [3]"),
        (lambda: rf.regressions(BASE, SHORT), "regressions: 1 id(s) of baseline are missing from current, e.g. [3]"),
        (lambda: rf.regressions(BASE, TWICE), "regressions: duplicate id in current: each sample must appear once"),
        (lambda: rf.gate(baseline=TWICE, current=BASE), "gate: duplicate id in baseline: each sample must appear once"),
        (lambda: rf.compare(BASE, SHORT), "compare: 1 id(s) of a are missing from b, e.g. [3]"),
    ],
)
def test_gate_and_regressions_name_themselves_and_their_parameters(call, expected):
    # rf.gate calls rf.regressions, which calls rf.compare: the error names what the user called
    with pytest.raises(SchemaError) as info:
        call()
    assert str(info.value).startswith(expected), str(info.value)
    assert info.value.function == expected.split(":")[0]
    assert info.value.parameter in {"baseline", "current", "a", "b"}


def test_the_parameter_field_is_in_the_callers_vocabulary():
    with pytest.raises(SchemaError) as info:
        rf.gate(baseline=BASE, current=SHORT)
    assert (info.value.function, info.value.parameter, info.value.column) == ("gate", "current", "id")
    with pytest.raises(InvalidParameterError) as info:
        rf.regressions(BASE, BASE, alpha=2)
    assert (info.value.function, info.value.parameter) == ("regressions", "alpha")
    assert str(info.value) == "regressions: alpha must be a finite number > 0.0 and < 1.0, found 2"


def test_compare_runs_names_itself_not_its_helper():
    run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    with pytest.raises(SchemaError) as info:
        rf.compare_runs(run, run.drop("score"), qrels)
    assert info.value.function == "compare_runs" and str(info.value).startswith("compare_runs: ")


def test_outermost_wins_and_inner_calls_see_the_outer_vocabulary():
    @public
    def inner(a):
        raise InvalidParameterError(f"{parameter_name('a')} is wrong", parameter="a", mentions={"a": None})

    @public(rename={"a": "left"})
    def outer(left):
        return inner(left)

    with pytest.raises(InvalidParameterError) as info:
        outer(1)
    assert (str(info.value), info.value.function, info.value.parameter) == ("outer: left is wrong", "outer", "left")
    with pytest.raises(InvalidParameterError) as info:
        inner(1)
    assert (str(info.value), info.value.function, info.value.parameter) == ("inner: a is wrong", "inner", "a")
    assert CALLER.get() is None  # the call left no trace


def test_an_error_of_a_worker_thread_is_stamped_on_its_way_out():
    @public
    def threaded():
        caught = []

        def work():
            try:
                raise SchemaError("bad rows", function="helper", column="x")  # threads do not see the caller
            except SchemaError as error:
                caught.append(error)

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        raise caught[0]

    with pytest.raises(SchemaError) as info:
        threaded()
    assert str(info.value) == "threaded: bad rows [column 'x']"


async def _async_fails():
    raise InvalidParameterError("n must be positive", function="deep", parameter="n")


def test_async_public_functions_are_stamped_too():
    import asyncio

    wrapped = public(name="aouter")(_async_fails)
    with pytest.raises(InvalidParameterError, match=r"^aouter: n must be positive$"):
        asyncio.run(wrapped())


def test_the_fields_survive_pickling():
    error = SchemaError("x", function="gate", column="id", row=2, parameter="current", mentions={"how": "'inner'"})
    back = pickle.loads(pickle.dumps(error))
    assert (back.function, back.parameter, back.mentions, back.column, back.row) == (
        "gate",
        "current",
        {"how": "'inner'"},
        "id",
        2,
    )
    assert str(back) == str(error) == "gate: x [column 'id', row 2]"
    plain = pickle.loads(pickle.dumps(InvalidParameterError("{k} must be an int", parameter="k", mentions={"k": None})))
    assert (str(plain), plain.parameter) == ("k must be an int", "k")


def test_mentions_render_in_python_and_in_any_other_spelling():
    error = rf.RagframeError("pass {overwrite} or {keep}", mentions={"overwrite": "True", "keep": "[...]"})
    assert str(error) == "pass overwrite=True or keep=[...]"
    assert error.render(lambda name, value: f"<{name}>") == "pass <overwrite> or <keep>"
    error.stamp("evaluate_parquet", {"overwrite": "replace"})
    assert str(error) == "evaluate_parquet: pass replace=True or keep=[...]"


def test_warnings_point_at_the_users_line_through_the_wrappers():
    @public
    def warns():
        warnings.warn("careful", UserWarning, stacklevel=user_stacklevel())

    with pytest.warns(UserWarning) as caught:
        warns()
    assert caught[0].filename == __file__


def test_a_renamed_mention_survives_pickling_and_a_second_mention_keeps_its_value():
    error = SchemaError(
        "{a} and {mode} or {mode#2}", column="c", mentions={"a": None, "mode": "'llm'", "mode#2": "'x'"}
    )
    error.stamp("gate", {"a": "baseline"})
    back = pickle.loads(pickle.dumps(error))
    assert str(back) == str(error) == "gate: baseline and mode='llm' or mode='x' [column 'c']"


def test_a_users_own_error_keeps_its_text_and_gets_the_stamp_in_front():
    # a callback metric raising a ragframe error with its own "name: " prefix: that is the user's text
    @public
    def runs_a_callback():
        raise InvalidParameterError("refuse: a batch holds the answer")

    with pytest.raises(InvalidParameterError) as info:
        runs_a_callback()
    assert str(info.value) == "runs_a_callback: refuse: a batch holds the answer"
