"""One vocabulary for the comparison family (issue 21, item 3).

rf.compare, rf.compare_runs, rf.regressions, rf.gate and rf.distributed.compare_datasets:
frames first (the reference side first), every option keyword-only, the shared options
declared once (ragframe.stats.options.ComparisonOptions: one default, one check, one
order), ``max_drop`` for the drop size with ``threshold=`` deprecated for one release.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings

import polars as pl
import pytest

import ragframe as rf
from ragframe.cli.main import build_parser, main
from ragframe.stats.options import DEFAULTS, ComparisonOptions, max_drop_from

RUN_A = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
RUN_B = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["b", "a", "d"], "score": [2.0, 1.0, 1.0]})
QRELS = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 1]})
# means by hand: base mrr (0.2 + 0.4 + 0.6 + 0.8) / 4 = 0.5, now (0.1 + 0.3 + 0.5 + 0.7) / 4 = 0.4
BASE = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.2, 0.4, 0.6, 0.8]})
NOW = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.1, 0.3, 0.5, 0.7]})

#: name -> (function, its frame parameters in order)
FUNCTIONS = {
    "compare": (rf.compare, ["a", "b"]),
    "compare_runs": (rf.compare_runs, ["run_a", "run_b", "qrels"]),
    "regressions": (rf.regressions, ["baseline", "current"]),
    "gate": (rf.gate, ["baseline", "current"]),
    "compare_datasets": (rf.distributed.compare_datasets, ["a", "b"]),
}
SHARED = ComparisonOptions.names()


def _parameters(name: str) -> list[inspect.Parameter]:
    return list(inspect.signature(FUNCTIONS[name][0]).parameters.values())


# ----------------------------------------------------------------------------- the shared settings


@pytest.mark.parametrize("name", FUNCTIONS)
def test_shared_options_have_the_declared_defaults_and_order(name):
    options = [p for p in _parameters(name) if p.name not in FUNCTIONS[name][1]]
    shared = [p for p in options if p.name in SHARED]
    assert shared, name
    assert [p.name for p in shared] == [n for n in SHARED if n in {p.name for p in shared}]  # the declared order
    for parameter in shared:
        assert parameter.default == getattr(DEFAULTS, parameter.name), (name, parameter.name)
    own = [p.name for p in options if p.name not in SHARED]
    assert [p.name for p in options] == [p.name for p in shared] + own  # a function's own options come after


@pytest.mark.parametrize("name", FUNCTIONS)
def test_shared_options_are_checked_in_the_functions_name(name):
    function = FUNCTIONS[name][0]
    frames = {
        "compare": (BASE, NOW),
        "compare_runs": (RUN_A, RUN_B, QRELS),
        "regressions": (BASE, NOW),
        "compare_datasets": (None, None),  # the check comes before the datasets are read
    }
    call = (
        (lambda **kw: function(baseline=BASE, current=NOW, **kw))
        if name == "gate"
        else lambda **kw: function(*frames[name], **kw)
    )
    for option, bad in (("alpha", 1.5), ("test", "anova"), ("seed", -1), ("correction", "sidak")):
        with pytest.raises(rf.InvalidParameterError, match=rf"^{name}: {option} must be"):
            call(**{option: bad})


def test_comparison_options_are_one_frozen_declaration():
    assert DEFAULTS == ComparisonOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.alpha = 0.1  # type: ignore[misc]
    checked = ComparisonOptions.check(on=["query_id"], by="split", metrics="mrr", correction=None)
    assert (checked.on, checked.by, checked.metrics, checked.correction) == (("query_id",), ("split",), ("mrr",), None)
    assert checked.paired_test() == {
        "on": ["query_id"],
        "test": "t",
        "alpha": 0.05,
        "correction": None,
        "how": "error",
        "n_resamples": 9999,
        "seed": 0,
    }
    with pytest.raises(rf.InvalidParameterError, match=r"^unknown comparison option"):
        ComparisonOptions.check(k=10)


def test_the_cli_defaults_are_the_declared_ones():
    args = build_parser().parse_args(["gate", "now.parquet", "--baseline", "base.parquet"])
    for name in ("test", "alpha", "correction", "how", "n_resamples", "seed"):
        assert getattr(args, name) == getattr(DEFAULTS, name), name


# ----------------------------------------------------------------------------- keyword-only options


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_option_is_keyword_only(name):
    frames = FUNCTIONS[name][1]
    for parameter in _parameters(name):
        if parameter.name in frames:
            expected = (
                inspect.Parameter.KEYWORD_ONLY
                if name == "gate"
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
                if name == "regressions"
                else inspect.Parameter.POSITIONAL_ONLY
            )
        else:
            expected = inspect.Parameter.KEYWORD_ONLY
        assert parameter.kind == expected, (name, parameter.name)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("compare", lambda: rf.compare(BASE, NOW, "id")),
        ("compare_runs", lambda: rf.compare_runs(RUN_A, RUN_B, QRELS, ["mrr"])),
        ("regressions", lambda: rf.regressions(BASE, NOW, 0.05)),
        ("compare_datasets", lambda: rf.distributed.compare_datasets(None, None, "id")),
    ],
)
def test_an_option_given_by_position_is_refused(name, call):
    with pytest.raises(TypeError, match="positional argument"):
        call()


# ----------------------------------------------------------------------------- one argument order


def test_compare_reference_first():
    row = rf.compare(BASE, NOW).row(0, named=True)
    assert (row["mean_a"], row["mean_b"]) == (pytest.approx(0.5), pytest.approx(0.4))
    assert row["delta"] == pytest.approx(-0.1) and row["winner"] == "a"  # every pair fell by 0.1: a is better


def test_compare_runs_reference_first():
    # run_a ranks the relevant b second in q1 (RR 1/2) and c first in q2 (RR 1): mean 0.75;
    # run_b ranks b first in q1 (RR 1) and misses c in q2 (RR 0): mean 0.5
    row = rf.compare_runs(RUN_A, RUN_B, QRELS, metrics=["mrr"]).row(0, named=True)
    assert (row["mean_a"], row["mean_b"], row["delta"]) == (0.75, 0.5, -0.25)


def test_regressions_baseline_then_current():
    row = rf.regressions(BASE, NOW, max_drop=0.05).row(0, named=True)
    assert (row["baseline"], row["current"]) == (pytest.approx(0.5), pytest.approx(0.4))
    assert row["delta"] == pytest.approx(-0.1) and row["regressed"] is True  # constant -0.1 drop: p = 0
    named = rf.regressions(baseline=BASE, current=NOW, max_drop=0.05)
    assert named.equals(rf.regressions(BASE, NOW, max_drop=0.05))
    assert rf.regressions(NOW, BASE, max_drop=0.05)["regressed"].to_list() == [False]  # the other way: a gain


def test_gate_baseline_then_current_by_name():
    row = rf.gate(baseline=BASE, current=NOW).row(0, named=True)
    assert (row["baseline"], row["current"], row["passed"]) == (pytest.approx(0.5), pytest.approx(0.4), False)
    assert rf.gate(current=NOW, baseline=BASE).equals(rf.gate(baseline=BASE, current=NOW))
    assert rf.gate(baseline=NOW, current=BASE)["passed"].to_list() == [True]


@pytest.mark.parametrize("frames", [(NOW, BASE), (NOW,)], ids=["old order", "current only"])
def test_gate_refuses_positional_frames_with_the_reason(frames):
    with pytest.raises(rf.InvalidParameterError, match=r"gate: pass the frames by name, gate\(baseline=") as error:
        rf.gate(*frames, minimums={"mrr": 0.1})
    assert "gate(current, baseline) was the order before" in str(error.value)


def test_compare_datasets_reference_first():
    assert [p.name for p in _parameters("compare_datasets")[:2]] == ["a", "b"]
    assert [p.name for p in _parameters("compare")[:2]] == ["a", "b"]  # and rf.compare, which it equals


# ----------------------------------------------------------------------------- threshold -> max_drop


@pytest.mark.parametrize("name", ["regressions", "gate"])
def test_threshold_is_a_deprecated_name_of_max_drop(name):
    def call(**kw):
        if name == "gate":
            return rf.gate(baseline=BASE, current=NOW, **kw)
        return rf.regressions(BASE, NOW, **kw)

    with pytest.warns(DeprecationWarning, match=rf"{name}: threshold= is deprecated .* pass max_drop=") as caught:
        old = call(threshold=0.2)
    assert caught[0].filename == __file__  # points at the caller's line
    assert old.equals(call(max_drop=0.2))
    assert old["max_drop" if name == "gate" else "exceeds_max_drop"].to_list() == [0.2 if name == "gate" else False]
    with pytest.raises(rf.InvalidParameterError, match=f"{name}: pass max_drop= only"):
        call(threshold=0.2, max_drop=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(max_drop=0.2)  # the new name does not warn


@pytest.mark.parametrize("name", ["compare", "compare_runs", "compare_datasets"])
def test_no_threshold_where_there_is_no_drop(name):
    assert "threshold" not in inspect.signature(FUNCTIONS[name][0]).parameters
    assert "max_drop" not in inspect.signature(FUNCTIONS[name][0]).parameters


def test_max_drop_from_leaves_max_drop_alone():
    assert max_drop_from(0.3, None) == 0.3


def test_cli_threshold_is_a_deprecated_name_of_max_drop(capsys, tmp_path):
    BASE.write_parquet(tmp_path / "base.parquet")
    NOW.write_parquet(tmp_path / "now.parquet")
    argv = ["gate", str(tmp_path / "now.parquet"), "--baseline", str(tmp_path / "base.parquet"), "--format", "json"]
    assert main([*argv, "--max-drop", "0.2"]) == 0
    new, err = capsys.readouterr()
    assert err == ""
    assert main([*argv, "--threshold", "0.2"]) == 0
    old, err = capsys.readouterr()
    assert "--threshold is deprecated" in err and "use --max-drop" in err
    assert json.loads(old) == json.loads(new) and json.loads(new)["checks"][0]["max_drop"] == 0.2
    assert main(argv) == 1  # the default max_drop 0.05: the drop of 0.1 fails
    capsys.readouterr()
    assert main([*argv, "--max-drop", "0.2", "--threshold", "0.2"]) == 2
    assert "not allowed with argument --max-drop" in capsys.readouterr().err


def test_the_rf_namespace_gates_its_frame_as_current():
    assert NOW.rf.gate(baseline=BASE).equals(rf.gate(baseline=BASE, current=NOW))
    with pytest.raises(rf.InvalidParameterError, match="pass the frames by name"):
        NOW.rf.gate(BASE)  # the old df.rf.gate(baseline) form: refused, not read as another order
    assert NOW.rf.regressions(BASE).equals(rf.regressions(NOW, BASE))  # regressions: the frame is the baseline
