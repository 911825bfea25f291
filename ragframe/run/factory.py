"""One factory for every per-metric and per-family function (``score_faithfulness``, ``judge_faithfulness``,
``score_retrieval``), driven by the registry.

A family says which functions it has (:class:`~ragframe.metrics.registry.Family`'s ``per_metric``
and ``function``); its options dataclass gives each function its signature (only that family's
options, the pass ``threshold`` of a per-metric function, ``prefix`` and the run options the
family names), its docstring and its checks. A generated function refuses any other keyword
with an :class:`~ragframe.exceptions.InvalidParameterError` naming itself, and every check
below it names it too (the :class:`~ragframe.run.Evaluator` is built with its name).

``ragframe/run/functions.pyi`` is :func:`stub_text` written out, so that IDEs and type checkers
see the signatures (``tests/test_architecture.py`` checks it is in sync with the registry).

Examples
--------
>>> import inspect
>>> from ragframe.run.functions import score_faithfulness
>>> list(inspect.signature(score_faithfulness).parameters)[:3]
['df', 'question', 'answer']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragframe.exceptions import InvalidParameterError
from ragframe.metrics import registry
from ragframe.metrics.judge import EXAMPLE_REPLY
from ragframe.metrics.registry import Family, Metric
from ragframe.public import public
from ragframe.run.evaluator import Evaluator
from ragframe.run.options import RunOptions

__all__ = ["public_functions", "make_metric_function", "make_family_function", "stub_text", "write_stub", "STUB"]

#: The stub IDEs read for :mod:`ragframe.run.functions`.
STUB = Path(__file__).with_name("functions.pyi")

_FRAME = "Frame"
#: What each family's per-metric function appends (docs: docs/metrics.md, docs/judges.md).
_APPENDS = {
    "heuristic": "``{name}`` and ``{name}_passed`` (and ``{name}_signals`` with ``explain=True``)",
    "judge": "``{name}`` and its ``_passed``, ``_reason``, ``_status``, ``_error`` (and ``_std``)",
}
#: How errors call a family's metrics.
_NOUNS = {"retrieval": "ranking"}
_SAMPLE = '>>> df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["a"]], "ground_truth": ["a"]})'
#: The sample frame of a metric reading other columns than the text roles.
_SAMPLES = {
    "nuggets": '>>> df = pl.DataFrame({"question": ["q"], "answer": ["a"], '
    '"nuggets": [[{"text": "a", "importance": "vital", "assignment": None}]]})',
}
_FAMILY_EXAMPLES = {
    "score_retrieval": (
        '>>> df = pl.DataFrame({"retrieved_ids": [["a", "b", "c"]], "relevant_ids": [["b"]]})\n'
        '>>> score_retrieval(df, k=2, metrics=["precision_at_k", "mrr"]).row(0)\n'
        "(['a', 'b', 'c'], ['b'], 0.5, 0.5)"
    ),
}


def _run_field(name: str) -> Any:
    return next(spec for spec in registry.declared_options(RunOptions) if spec.name == name)


def _parameters(family: Family, *, per_metric: bool) -> list[inspect.Parameter]:
    """The frame, then the keyword-only options: the family's, threshold or metrics, prefix, the run's it names."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("df", inspect.Parameter.POSITIONAL_ONLY, annotation=_FRAME)]
    if not per_metric:
        params.append(inspect.Parameter("metrics", keyword, default=None, annotation="str | list[str] | None"))
    for spec in registry.declared_options(family.options):
        params.append(inspect.Parameter(spec.name, keyword, default=spec.default, annotation=spec.type))
    if per_metric:
        params.append(inspect.Parameter("threshold", keyword, default=None, annotation="float | None"))
    params.append(inspect.Parameter("prefix", keyword, default="", annotation="str"))
    for name in family.run_options:
        spec = _run_field(name)
        params.append(inspect.Parameter(name, keyword, default=spec.default, annotation=spec.type))
    return params


def _option_docs(family: Family, *, per_metric: bool, metric: Metric | None) -> list[str]:
    lines = []
    if not per_metric:
        lines += [
            "metrics : str or list of str, optional",
            f"    Names of {family.name} metrics (``rf.list_metrics()``), or output names such as ``ndcg_at_10``;",
            "    by default the family's default set.",
        ]
    for spec in registry.declared_options(family.options):
        lines += [f"{spec.name} : {spec.type}", f"    {spec.metadata['doc']} Default {spec.default!r}."]
    if per_metric and metric is not None:
        lines += [
            "threshold : float, optional",
            f"    Pass threshold of ``{metric.name}_passed`` (default {metric.threshold}).",
        ]
    lines += ["prefix : str", "    Prepended to the output columns (``''`` or ending with ``_ - . : /``)."]
    for name in family.run_options:
        spec = _run_field(name)
        lines += [f"{name} : {spec.type}", f"    {spec.metadata['doc']} Default {spec.default!r}."]
    return lines


def _docstring(function: str, family: Family, metric: Metric | None) -> str:
    per_metric = metric is not None
    if per_metric:
        appends = _APPENDS.get(family.name, "``{name}`` and ``{name}_passed``").format(name=metric.name)
        summary = f"Append {appends}.\n\n{metric.description}"
        reads = ", ".join(f"``{c}``" for c in metric.inputs)
        if "judge" in family.defaults:
            reply = f">>> reply = {EXAMPLE_REPLY[metric.kernel.scoring]!r}"
            call = f"{function}(df, judge=lambda prompt: reply, cache=False)"
            example = f"{reply}\n>>> {call}[\"{metric.name}_status\"].to_list()\n['ok']"
        else:
            example = f'>>> "{metric.name}" in {function}(df).columns\nTrue'
        sample = next((_SAMPLES[role] for role in metric.inputs if role in _SAMPLES), _SAMPLE)
        example = f">>> import polars as pl\n{sample}\n{example}"
    else:
        summary = f"Append {family.name} metrics to a frame, one Float64 column per metric (and cutoff)."
        reads = "the columns its metrics read"
        example = ">>> import polars as pl\n" + _FAMILY_EXAMPLES.get(function, f">>> callable({function})\nTrue")
    params = [
        "df : frame",
        "    polars DataFrame/LazyFrame, pyarrow Table/RecordBatch or pandas DataFrame; reads " + reads + ".",
        *_option_docs(family, per_metric=per_metric, metric=metric),
    ]
    lines = [
        summary,
        "",
        f"Generated from the registry (:mod:`ragframe.run.factory`): it takes the {family.name} family's options",
        "only; any other keyword is an InvalidParameterError naming this function (``rf.evaluate`` takes them all).",
        "",
        "Parameters",
        "----------",
        *params,
        "",
        "Returns",
        "-------",
        "frame",
        "    The same kind of frame with the new columns (docs/metrics.md, docs/judges.md).",
        "",
        "Examples",
        "--------",
        *example.splitlines(),
    ]
    return "\n".join(lines) + "\n"


def _build(
    function: str, family: Family, metric: Metric | None, run: Callable[[Any, dict[str, Any]], Any]
) -> Callable[..., Any]:
    params = _parameters(family, per_metric=metric is not None)
    allowed = [p.name for p in params[1:]]

    def generated(*args: Any, **kwargs: Any) -> Any:
        if len(args) != 1:
            raise InvalidParameterError(
                f"{function}: takes one frame as its only positional argument, found {len(args)} positional "
                f"arguments; pass the options by keyword ({allowed})"
            )
        unknown = [name for name in kwargs if name not in allowed]
        if unknown:
            raise InvalidParameterError(
                f"{function}: unexpected option {unknown[0]!r}: {function} takes the {family.name} family's options "
                f"only, {allowed} (rf.evaluate takes every family's)"
            )
        return run(args[0], kwargs)

    generated.__name__ = generated.__qualname__ = function
    generated.__module__ = "ragframe.run.functions"
    generated.__doc__ = _docstring(function, family, metric)
    generated.__signature__ = inspect.Signature(params, return_annotation=_FRAME)  # type: ignore[attr-defined]
    return public(generated)


def make_metric_function(metric: Metric) -> Callable[..., Any]:
    """The public function of one metric (``score_faithfulness``), named by its family's ``per_metric`` pattern."""
    family = registry.get_family(metric.family)
    function = family.per_metric.format(name=metric.name)

    def run(df: Any, given: dict[str, Any]) -> Any:
        threshold = given.pop("threshold", None)
        options = {**given, "composite": False}
        if threshold is not None:
            options["thresholds"] = {metric.name: threshold}
        return Evaluator([metric.name], **options).evaluate(df)

    return _build(function, family, metric, run)


def make_family_function(family: Family) -> Callable[..., Any]:
    """The public function of a whole family (``score_retrieval``): any of its metrics, by name."""
    function = family.function

    def run(df: Any, given: dict[str, Any]) -> Any:
        metrics = given.pop("metrics", None)
        evaluator = Evaluator(family.name if metrics is None else metrics, **{**given, "composite": False})
        for metric, _ in evaluator.requests():
            if metric.family != family.name:
                noun = _NOUNS.get(family.name, family.name)
                raise InvalidParameterError(f"{function}: {metric.name!r} is not a {noun} metric; use rf.evaluate")
        return evaluator.evaluate(df)

    return _build(function, family, None, run)


def public_functions() -> dict[str, Callable[..., Any]]:
    """Every generated function by name: each family's, then one per metric of the families that have them."""
    out: dict[str, Callable[..., Any]] = {}
    for name in registry.families():
        family = registry.get_family(name)
        if family.function:
            out[family.function] = make_family_function(family)
        if family.per_metric:
            for metric in registry.metrics(name):
                if registry.is_built_in(metric.name):  # a metric registered later has no function of its own
                    function = make_metric_function(metric)
                    out[function.__name__] = function
    return out


def _literal(value: Any) -> str:
    """A default as ruff formats it in a stub (double-quoted strings)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple):
        items = ", ".join(_literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def stub_text(functions: dict[str, Callable[..., Any]]) -> str:
    """The ``functions.pyi`` text for ``functions``: their signatures, for IDEs and type checkers (ruff-formatted)."""
    lines = [
        "# Generated from the metric registry by ragframe.run.factory.stub_text: do not edit by hand.",
        '# Regenerate: python -c "from ragframe.run import factory; factory.write_stub()"',
        "from typing import Any, TypeVar",
        "",
        'Frame = TypeVar("Frame")',
        "",
        "__all__ = [",
        *[f'    "{name}",' for name in sorted(functions)],
        "]",
        "",
    ]
    for name in sorted(functions):
        lines.append(f"def {name}(")
        for param in inspect.signature(functions[name]).parameters.values():
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                lines += [f"    {param.name}: {param.annotation},", "    /,", "    *,"]
            else:
                lines.append(f"    {param.name}: {param.annotation} = {_literal(param.default)},")
        lines.append(") -> Frame: ...")
    return "\n".join(lines) + "\n"


def write_stub() -> None:
    """Write :data:`STUB` from the registry (after adding a family function or a built-in metric)."""
    STUB.write_text(stub_text(public_functions()), encoding="utf-8")
