"""The metric registry: every fact about a metric lives in its :class:`Metric`, and only there.

A :class:`Metric` is a frozen, picklable description: name, family, input roles,
direction, bounds, default threshold, a one-line description and the family-specific
kernel that computes it. A :class:`Family` knows how to score several of its metrics at
once over a polars frame (the heuristic metrics share one text stage; the ranking measures
one ranking kernel). :func:`ragframe.evaluate`, the statistics, streaming and the CLI ask
the registry; nothing else keeps lists of metric names.

Score columns are recognised by name: a column is a score when it is
``prefix + output name`` of a registered metric, where the prefix is empty or ends with a
separator (``_ - . : /``). ``bm25_ndcg_at_10`` is ``ndcg_at_k`` at k=10 with the prefix
``bm25_``; ``xmrr`` is not a score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from typing import Any, NamedTuple

import polars as pl

from ragframe.exceptions import InvalidParameterError
from ragframe.public import public

__all__ = [
    "Metric",
    "Family",
    "RunState",
    "Requests",
    "option",
    "declared_options",
    "option_defaults",
    "check_options",
    "is_built_in",
    "ScoreColumn",
    "COMPOSITE",
    "SEPARATORS",
    "register_metric",
    "register_family",
    "unregister_metric",
    "get_metric",
    "get_family",
    "metrics",
    "families",
    "list_metrics",
    "parse_column",
    "column_keys",
    "score_columns",
    "passed_column",
    "metric_for_column",
    "check_prefix",
]

#: A prefix is empty or ends with one of these (so ``bm25_mrr`` is a score and ``xmrr`` is not).
SEPARATORS = "_-.:/"
#: The derived per-row score of :func:`ragframe.evaluate` (weighted mean of the thresholded metrics).
COMPOSITE = "composite_score"


def option(default: Any, doc: str, *, check: Callable[[Any, str], Any] | None = None, **facts: Any) -> Any:
    """Declare one option of a family's options dataclass: its default, its check and its documentation at once.

    Parameters
    ----------
    default : object
        The default value (immutable: a tuple, not a list).
    doc : str
        One or two sentences for the generated docstrings and ``docs/metrics.md``.
    check : callable, optional
        ``check(value, name) -> value``: the canonical value, or a typed error naming
        ``name`` (see :mod:`ragframe.validate`).
    **facts
        Further facts other parts read (``seed_only=True``: tunes the seed's methods only;
        ``invalid=(...)``: values a test must see refused; ``costly=True``: a large valid value
        means large work, so the bad-value property test does not draw it).

    Returns
    -------
    dataclasses.Field
        For the class body of a frozen dataclass.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from ragframe import validate
    >>> @dataclass(frozen=True)
    ... class ToyOptions:
    ...     size: int = option(3, "How many.", check=validate.positive_int, invalid=(0,))
    >>> option_defaults(ToyOptions), check_options(ToyOptions, {"size": 5})
    ({'size': 3}, {'size': 5})
    """
    return field(default=default, metadata={"doc": doc, "check": check, **facts})


def declared_options(declaration: Any) -> tuple[Field, ...]:
    """The declared options (dataclass fields) of a family's options class; () for a plain mapping."""
    return fields(declaration) if is_dataclass(declaration) else ()


def option_defaults(declaration: Any) -> dict[str, Any]:
    """Option name -> default of an options dataclass (or a copy of a plain mapping of defaults)."""
    if not is_dataclass(declaration):
        return dict(declaration)
    return {f.name: f.default for f in fields(declaration) if f.default is not MISSING}


def check_options(declaration: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each declared option passed through its declared check (in declaration order)."""
    out = dict(options)
    for spec in declared_options(declaration):
        check = spec.metadata.get("check")
        if check is not None and spec.name in out:
            out[spec.name] = check(out[spec.name], spec.name)
    return out


@dataclass(frozen=True)
class Metric:
    """What one metric is: the single source of every fact about it.

    A frozen dataclass: each parameter is also the read-only attribute of that name.

    Parameters
    ----------
    name : str
        Registry name; also the output column, except for cutoff metrics, whose name ends in
        ``_at_k`` and whose columns are ``..._at_<k>`` (``ndcg_at_k`` writes ``ndcg_at_10``).
    family : str
        ``"retrieval"``, ``"heuristic"``, ``"judge"`` or ``"custom"``.
    inputs : tuple of str
        The roles (canonical column names) it reads, e.g. ``("answer", "contexts")``.
    description : str
        One line for :func:`list_metrics` and the docs.
    kernel : object
        The family-specific computation (picklable: a module-level function or a frozen object).
    higher_is_better : bool
        Direction (every built-in metric: True).
    bounds : tuple of float, or None
        The closed range of the scores, or None when unbounded.
    threshold : float or None
        Default pass threshold (``<column>_passed``); None for none (ranking measures).
    cutoff : bool
        True for ``*_at_k`` metrics, computed at each requested ``k``.
    by_default : bool
        True (every metric but a few specialised ranking measures): computed when its family
        is requested by name (``metrics="retrieval"``) and by ``metrics="auto"``; False: only
        when named (``"bpref"``, ``"err_at_10"``).
    geometric_mean : str or None
        The name of the metric's geometric-mean summary when trec_eval also summarises it
        that way (``"gm_map"`` for ``average_precision``, ``"gm_bpref"`` for ``bpref``):
        exp(mean(log(max(value, 0.00001)))). :func:`ragframe.run_summary` writes it as a
        column, :func:`ragframe.summarize` as the ``gm`` statistic. None for every other metric.

    Examples
    --------
    >>> m = get_metric("faithfulness")
    >>> m.family, m.inputs, m.threshold, m.higher_is_better
    ('heuristic', ('answer', 'contexts'), 0.4, True)
    >>> get_metric("ndcg_at_k").column(10, prefix="bm25_")
    'bm25_ndcg_at_10'
    """

    name: str
    family: str
    inputs: tuple[str, ...]
    description: str
    kernel: Any = field(default=None, compare=False, repr=False)
    higher_is_better: bool = True
    bounds: tuple[float, float] | None = (0.0, 1.0)
    threshold: float | None = None
    cutoff: bool = False
    by_default: bool = True
    geometric_mean: str | None = None

    def column(self, k: int | None = None, prefix: str = "") -> str:
        """The output column name for cutoff ``k`` (cutoff metrics only) and ``prefix``.

        Parameters
        ----------
        k : int, optional
            The cutoff; required for cutoff (``*_at_k``) metrics, ignored by the others.
        prefix : str
            Prepended as is (``"bm25_"``).

        Returns
        -------
        str
            ``prefix + name``, with ``_at_k`` replaced by ``_at_<k>`` for cutoff metrics.

        Examples
        --------
        >>> get_metric("recall_at_k").column(100)
        'recall_at_100'
        >>> get_metric("mrr").column(prefix="v2_")
        'v2_mrr'
        """
        if self.cutoff:
            if k is None:
                raise InvalidParameterError(f"metric {self.name!r} needs a cutoff k")
            return f"{prefix}{self.name.removesuffix('_at_k')}_at_{int(k)}"
        return prefix + self.name


@dataclass
class RunState:
    """What one scoring call keeps while it runs: never part of the options (which a run checks once).

    Parameters
    ----------
    memos : dict of str to dict
        Per family, the replies of the judge prompts asked during this call (a prompt is sent
        once per call however many metrics render it).
    budget : object, optional
        A judge budget's draw for the rows of this call (:class:`ragframe.budgeting.BudgetRun`).

    Examples
    --------
    >>> state = RunState()
    >>> state.memo("judge") is state.memo("judge"), state.budget is None
    (True, True)
    """

    memos: dict[str, dict[Any, Any]] = field(default_factory=dict)
    budget: Any = None

    def memo(self, family: str) -> dict[Any, Any]:
        """The family's memo of judge replies for this call (made on first use)."""
        return self.memos.setdefault(family, {})

    def with_budget(self, budget: Any) -> RunState:
        """The same memos, another budget draw (hybrid routing judges a subset of the rows)."""
        return RunState(self.memos, budget)


@dataclass(frozen=True)
class Family:
    """How a family scores its metrics together.

    Attributes
    ----------
    name : str
        The family name.
    score : callable
        ``score(view, requests, options) -> polars.DataFrame``: ``view`` holds the
        input columns, ``requests`` is a list of ``(Metric, k or None)``, ``options`` the
        family's checked options; returns one Float64 column per request named
        ``metric.column(k)``, plus optional companion columns (``<column>_signals``).
    options : type or mapping
        The family's options: a frozen dataclass whose fields are declared with :func:`option`
        (the default, the check and the documentation of each; column names included), or a
        plain mapping of names to defaults for a family without documented options.
    check : callable
        ``check(options) -> options``: validated, canonical option values.
    columns : callable
        ``columns(requests, options, available) -> {role: column}``: the input columns it reads.
    threshold : callable, optional
        ``threshold(metric, options) -> float or None``: the default pass threshold under these
        options, when it depends on them (a family with several methods); else ``metric.threshold``.
    per_metric : str, optional
        A pattern naming one public function per metric (``"score_{name}"``; ``"{name}"`` for
        the judge metrics, whose names start with ``judge_``), generated likewise.
    run_options : tuple of str
        The run's options (:class:`ragframe.run.RunOptions`) these functions also take (the judge
        family's: ``budget``, ``budget_seed``, ``by``).
    reads_judge : bool
        The family calls the ``judge=`` option itself when it is given (``citations``: the
        uncertain sentence x passage pairs), so a run of its metrics alone may pass a judge.
    run_state : bool
        ``score`` also takes ``state=``, the :class:`RunState` of the call (the judge's
        memo of replies, a judge budget's draw): state lives for one call, never in ``options``.
    reads : tuple of str, or None
        Options declared elsewhere (by the run or another family) that ``check``, ``score``,
        ``columns`` or ``threshold`` read: ``("contexts",)`` for retrieval, which declares no
        contexts column of its own. The family's options in the run's plan hold its declared
        options and these, nothing else (reading another is an error, never a silent None).
        None: every option (the custom family: its callbacks name any column role).
    """

    name: str
    score: Callable[..., pl.DataFrame]
    options: Any
    check: Callable[[dict[str, Any]], dict[str, Any]]
    columns: Callable[..., dict[str, str]]
    threshold: Callable[[Metric, Mapping[str, Any]], float | None] | None = None
    function: str | None = None
    per_metric: str | None = None
    run_options: tuple[str, ...] = ()
    reads_judge: bool = False
    run_state: bool = False
    reads: tuple[str, ...] | None = ()

    @property
    def defaults(self) -> dict[str, Any]:
        """Option name -> default (a new dict on each call)."""
        return option_defaults(self.options)


#: What a family is asked to compute: (metric, cutoff k or None) pairs.
Requests = Sequence[tuple[Metric, "int | None"]]

_METRICS: dict[str, Metric] = {}
#: Names of the metrics ragframe registers itself (filled by ``ragframe.metrics`` on import).
_BUILT_IN: set[str] = set()
_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add a metric family (the built-in ones register themselves on import).

    Parameters
    ----------
    family : Family
        Its name must be new, lower_snake_case and not a metric's name.

    Returns
    -------
    Family
        The registered family; :func:`register_metric` then accepts metrics of it.

    Examples
    --------
    >>> get_family("heuristic").defaults["slice_rows"]
    10000
    """
    if not isinstance(family, Family):
        raise InvalidParameterError(f"register_family: expected a Family, found {type(family).__name__}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", family.name) or family.name in _METRICS or family.name == COMPOSITE:
        raise InvalidParameterError(f"register_family: {family.name!r} is not a free lower_snake_case name")
    if family.name in _FAMILIES:
        raise InvalidParameterError(f"register_family: family {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


@public
def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` to the registry so that every part of ragframe knows it.

    Parameters
    ----------
    metric : Metric
        Its family must be registered; its name must be new (or ``replace=True``) and must
        not collide with a family name.
    replace : bool
        Replace a metric of the same name (for notebooks re-running a cell).

    Returns
    -------
    Metric
        The registered metric.

    Examples
    --------
    >>> m = register_metric(Metric("toy_len", "custom", ("answer",), "Answer length.",
    ...                            kernel=lambda view: view["answer"].str.len_chars(), bounds=None))
    >>> metric_for_column("run1_toy_len").name
    'toy_len'
    >>> unregister_metric("toy_len")
    """
    if not isinstance(metric, Metric):
        raise InvalidParameterError(f"expected a Metric, found {type(metric).__name__}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", metric.name):
        raise InvalidParameterError(f"metric names are lower_snake_case, found {metric.name!r}")
    if metric.family not in _FAMILIES:
        raise InvalidParameterError(
            f"register_metric: family must be one of {list(_FAMILIES)}, found {metric.family!r}"
        )
    if metric.name in _FAMILIES or metric.name == COMPOSITE or metric.name.endswith("_passed"):
        raise InvalidParameterError(f"{metric.name!r} is a reserved name")
    if metric.name in _METRICS and not replace:
        raise InvalidParameterError(f"metric {metric.name!r} is already registered")
    if metric.cutoff != metric.name.endswith("_at_k"):
        raise InvalidParameterError(f"{metric.name!r}: cutoff metrics, and only they, end in '_at_k'")
    _METRICS[metric.name] = metric
    _PATTERN.cache_clear()
    return metric


@public
def unregister_metric(name: str) -> None:
    """Remove a metric registered by :func:`register_metric` (built-in metrics stay).

    Parameters
    ----------
    name : str
        The registry name of a custom metric; an unknown or built-in name is an
        :class:`~ragframe.exceptions.InvalidParameterError`.

    Examples
    --------
    >>> import ragframe as rf
    >>> _ = rf.register_metric(rf.Metric("toy_len", "custom", ("answer",), "Answer length.",
    ...                                  kernel=lambda view: view["answer"].str.len_chars(), bounds=None))
    >>> rf.score_columns(["toy_len"])
    ['toy_len']
    >>> rf.unregister_metric("toy_len")
    >>> rf.score_columns(["toy_len"])
    []
    """
    metric = get_metric(name)
    if metric.family in ("retrieval", "heuristic") or name in _BUILT_IN:
        raise InvalidParameterError(f"{name!r} is built in")
    del _METRICS[name]
    _PATTERN.cache_clear()


def is_built_in(name: str) -> bool:
    """True for the metrics ragframe registers itself (they travel with no pickle and cannot be unregistered)."""
    return name in _BUILT_IN


def get_metric(name: str) -> Metric:
    """The registered metric called ``name`` (InvalidParameterError naming the choices otherwise)."""
    try:
        return _METRICS[name]
    except (KeyError, TypeError):
        raise InvalidParameterError(f"unknown metric {name!r}; choose from {list(_METRICS)}") from None


def get_family(name: str) -> Family:
    """The registered family called ``name``."""
    try:
        return _FAMILIES[name]
    except KeyError:
        raise InvalidParameterError(f"unknown metric family {name!r}; choose from {list(_FAMILIES)}") from None


def metrics(family: str | None = None) -> list[Metric]:
    """Registered metrics in registration order, optionally of one family."""
    return [m for m in _METRICS.values() if family is None or m.family == family]


def families() -> list[str]:
    """Names of the registered families."""
    return list(_FAMILIES)


@public
def list_metrics() -> pl.DataFrame:
    """One row per registered metric: what it reads, its direction, bounds and default threshold.

    Returns
    -------
    polars.DataFrame
        Columns ``name, family, inputs, higher_is_better, lower, upper, threshold, cutoff,
        by_default, description``.

    Examples
    --------
    >>> import ragframe as rf
    >>> table = rf.list_metrics()
    >>> table.filter(table["name"] == "mrr").select("family", "inputs", "threshold").row(0)
    ('retrieval', ['retrieved_ids', 'relevant_ids'], None)
    """
    rows = [
        {
            "name": m.name,
            "family": m.family,
            "inputs": list(m.inputs),
            "higher_is_better": m.higher_is_better,
            "lower": None if m.bounds is None else float(m.bounds[0]),
            "upper": None if m.bounds is None else float(m.bounds[1]),
            "threshold": m.threshold,
            "cutoff": m.cutoff,
            "by_default": m.by_default,
            "description": m.description,
        }
        for m in _METRICS.values()
    ]
    schema = {
        "name": pl.String,
        "family": pl.String,
        "inputs": pl.List(pl.String),
        "higher_is_better": pl.Boolean,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "threshold": pl.Float64,
        "cutoff": pl.Boolean,
        "by_default": pl.Boolean,
        "description": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


# ----------------------------------------------------------------------------- score columns


class ScoreColumn(NamedTuple):
    """A score column taken apart: ``prefix + metric.column(k)``; metric None for composite_score."""

    column: str
    prefix: str
    metric: Metric | None
    k: int | None


class _Pattern:
    """The compiled column-name pattern of the registered metrics, rebuilt when the registry changes."""

    def __init__(self) -> None:
        self._regex: re.Pattern[str] | None = None

    def cache_clear(self) -> None:
        self._regex = None

    def get(self) -> re.Pattern[str]:
        if self._regex is None:
            plain = sorted((m.name for m in _METRICS.values() if not m.cutoff), key=len, reverse=True)
            cut = sorted((m.name.removesuffix("_at_k") for m in _METRICS.values() if m.cutoff), key=len, reverse=True)
            names = "|".join(map(re.escape, [*plain, COMPOSITE]))
            cuts = "|".join(map(re.escape, cut)) or "(?!)"
            sep = re.escape(SEPARATORS)
            self._regex = re.compile(
                rf"^(?P<prefix>(?:.*?[{sep}])??)(?:(?P<plain>{names})|(?P<cut>{cuts})_at_(?P<k>[1-9]\d*))$"
            )
        return self._regex


_PATTERN = _Pattern()


def parse_column(column: str) -> ScoreColumn | None:
    """Take a column name apart into prefix, metric and cutoff; None when it is not a score.

    Examples
    --------
    >>> parse_column("bm25_ndcg_at_10")[1:]  # doctest: +ELLIPSIS
    ('bm25_', Metric(name='ndcg_at_k', ...), 10)
    >>> parse_column("faithfulness_passed") is None, parse_column("xmrr") is None
    (True, True)
    """
    if not isinstance(column, str):
        return None
    found = _PATTERN.get().match(column)
    if found is None:
        return None
    prefix = found["prefix"]
    if found["plain"] is not None:
        name = found["plain"]
        return ScoreColumn(column, prefix, None if name == COMPOSITE else _METRICS[name], None)
    return ScoreColumn(column, prefix, _METRICS[found["cut"] + "_at_k"], int(found["k"]))


def column_keys(column: str) -> list[str]:
    """The names an option keyed by metric may use for a score column: the column, without its prefix, the metric.

    ``thresholds={...}`` of the statistics and plots accept any of them, most specific first.

    Parameters
    ----------
    column : str
        A column name.

    Returns
    -------
    list of str
        ``[column]`` for a column that is not a score.

    Examples
    --------
    >>> column_keys("bm25_ndcg_at_10"), column_keys("label")
    (['bm25_ndcg_at_10', 'ndcg_at_10', 'ndcg_at_k'], ['label'])
    """
    parsed = parse_column(column)
    if parsed is None:
        return [column]
    keys = [column, column[len(parsed.prefix) :]]
    if parsed.metric is not None:
        keys.append(parsed.metric.name)
    return list(dict.fromkeys(keys))


@public
def score_columns(columns: Iterable[str] | Mapping[str, Any]) -> list[str]:
    """The columns among ``columns`` that are ragframe scores, in their order.

    Registered metrics' output columns (with any prefix) and ``composite_score``; not the pass
    flags, signals, reasons or trec_eval counts. Given a schema (``df.schema``, a mapping of
    names to dtypes), a *prefixed* name counts only when its column holds floats (ragframe
    writes every score as Float64), so integer or boolean metadata such as a human label
    ``human_faithfulness`` (Int8) is never taken for a score; an unprefixed output name always
    counts (a wrong dtype is then reported by the function reading it). Given names only,
    every name that parses counts:
    pass ``metrics=[...]`` to the statistics when a float metadata column would parse.

    Parameters
    ----------
    columns : iterable of str, or mapping of str to polars dtype
        Column names, or a schema.

    Returns
    -------
    list of str

    Examples
    --------
    >>> score_columns(["id", "ndcg_at_10", "faithfulness", "faithfulness_passed", "num_ret", "bm25_mrr"])
    ['ndcg_at_10', 'faithfulness', 'bm25_mrr']
    >>> import polars as pl
    >>> score_columns(pl.Schema({"human_faithfulness": pl.Int8, "v2_faithfulness": pl.Float64, "mrr": pl.Float64}))
    ['v2_faithfulness', 'mrr']
    """
    if isinstance(columns, Mapping):
        return [c for c, dtype in columns.items() if _is_score(c, dtype)]
    return [c for c in columns if parse_column(c) is not None]


def _is_score(column: str, dtype: Any) -> bool:
    parsed = parse_column(column)
    if parsed is None:
        return False
    if not parsed.prefix:  # an exact output name is a score; a wrong dtype is reported where it is read
        return True
    return dtype == pl.Null or (hasattr(dtype, "is_float") and dtype.is_float())


def metric_for_column(column: str) -> Metric | None:
    """The metric behind a score column (None for ``composite_score`` and non-scores).

    Examples
    --------
    >>> metric_for_column("bm25_recall_at_100").name
    'recall_at_k'
    """
    parsed = parse_column(column)
    return None if parsed is None else parsed.metric


def passed_column(column: str) -> str:
    """Name of the pass/fail column that goes with a score column.

    Examples
    --------
    >>> passed_column("faithfulness"), passed_column("composite_score"), passed_column("v2_composite_score")
    ('faithfulness_passed', 'passed', 'v2_passed')
    """
    if column.endswith(COMPOSITE):
        return column.removesuffix(COMPOSITE) + "passed"
    return f"{column}_passed"


def check_prefix(prefix: Any) -> str:
    """A column prefix: empty, or a string ending with one of ``_ - . : /``.

    Examples
    --------
    >>> check_prefix("bm25_")
    'bm25_'
    """
    if not isinstance(prefix, str) or (prefix and prefix[-1] not in SEPARATORS):
        raise InvalidParameterError(
            f"prefix must be '' or end with one of {list(SEPARATORS)} "
            f"(so its columns stay recognisable as scores), found {prefix!r}"
        )
    return prefix
