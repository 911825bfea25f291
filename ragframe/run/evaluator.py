"""One run configuration: which metrics, with which options, for every way of running them.

:class:`Evaluator` is immutable and picklable: it is what :func:`evaluate`,
:func:`ragframe.evaluate_parquet`, its child processes and the CLI's TOML config share, so an
option name exists once. It resolves metric names through the registry (metric names such
as ``"ndcg_at_k"``, output names such as ``"ndcg_at_10"``, family names such as
``"retrieval"``), asks each family to score its metrics over the frame, adds a pass flag to
every score that has a threshold, and the per-row ``composite_score`` / ``passed`` over them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, TypeVar

import polars as pl

from ragframe import secrets, validate
from ragframe.exceptions import InvalidParameterError
from ragframe.metrics import registry
from ragframe.metrics.registry import Metric, RunState
from ragframe.public import public
from ragframe.run import routing
from ragframe.run.configure import build_plan
from ragframe.run.plan import RunPlan, all_options
from ragframe.run.requests import (
    AUTO,
    auto_requests,
    check_named_columns,
    default_requests,
    input_roles,
    require_inputs,
    resolve,
    warn_skipped,
)
from ragframe.run.scoring import budget_eligible, family_blocks, score_frame, score_groups
from ragframe.schema import CONTRACT_DTYPES, apply_to_frame, column_names, conform_text

__all__ = ["Evaluator", "evaluate", "aevaluate", "AUTO"]

Frame = TypeVar("Frame")
Request = tuple[Metric, "int | None"]
#: Options whose value may be a dict (frozen as sorted (key, value) pairs, thawed back to a dict).
_DICT_OPTIONS = ("metric_modes", "hybrid_band", "prompt", "judge", "budget")
#: What to do when the input already has some of the columns a run writes (see ragframe.schema).
CLASH_HINT = (
    "choose a prefix for this run's columns (prefix='run2_'; ragframe eval --prefix run2_), "
    "or rename or drop that column"
)


def _freeze(value: Any) -> Any:
    """A hashable, picklable copy: dicts become sorted item tuples, lists tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True, init=False)
class Evaluator:
    """A run configuration: metrics and options, checked once, reused for every frame.

    Parameters
    ----------
    metrics : str or list of str, optional
        Metric names (``"faithfulness"``, ``"ndcg_at_k"``), output names (``"ndcg_at_10"``),
        family names (``"heuristic"``, ``"retrieval"``) or ``"auto"`` (every metric the
        frame's columns allow). Default (None): each of the seven heuristic metrics whose
        input columns the frame has, with a :class:`~ragframe.exceptions.SkippedMetricWarning`
        per metric skipped (:meth:`skipped_metrics`); a frame without the columns of any is a
        :class:`~ragframe.exceptions.SchemaError`. A metric named explicitly (also
        ``"heuristic"``) whose input column is missing is a SchemaError. Under ``"auto"``
        and the default, a column option set (``answer="response"``) that names a column
        the frame lacks is a SchemaError too (it would silently drop the metrics reading it).
    **options
        ``prefix`` (prepended to every output column), ``thresholds`` and ``weights``
        (dicts keyed by metric or output name; a threshold lies within the metric's
        bounds), ``composite_threshold`` (0.6),
        ``composite`` (add ``composite_score``/``passed``, default True), and the families'
        options: heuristic ``question``, ``answer``, ``contexts``, ``ground_truth`` (column
        names), ``explain`` (add ``<metric>_signals``), ``slice_rows`` (rows per pair-stage
        slice, 10,000: bounds memory, never changes a score), ``ngram_sizes``,
        ``ngram_weights``, ``claim_support_threshold``, ``chunk_relevance_threshold``;
        retrieval ``k``, ``relevance_level``, ``match``, ``retrieved_ids``,
        ``retrieved_scores``, ``relevant_ids``, ``relevance``; judge ``judge`` (a callable
        ``prompt -> str``, ``rf.OpenAIJudge``, a model name or its options: name the key's
        variable with ``api_key_env``, see :mod:`ragframe.secrets`), ``cache``,
        ``n_samples``, ``prompt``, ``dry_run``, ``parse_retries``, ``retry_parse_errors``; and the
        modes: ``mode`` (``"heuristic"``, the default, ``"llm"`` or ``"hybrid"``), ``metric_modes``
        (per metric), ``hybrid_band``
        (``(lo, hi)`` or per metric; docs/judges.md); a judge budget: ``budget`` (a number of
        calls, or ``{"calls": n, "cost": x}``), ``budget_seed`` (0) and ``by`` (columns that
        stratify the budget's draw; :mod:`ragframe.judges.budget`). ``Evaluator.option_defaults()``
        lists every name with its default.

    Examples
    --------
    >>> import pickle
    >>> import polars as pl
    >>> ev = Evaluator(["answer_relevance", "mrr"], thresholds={"answer_relevance": 0.1})
    >>> pickle.loads(pickle.dumps(ev)) == ev
    True
    >>> df = pl.DataFrame({"question": ["cats?"], "answer": ["cats purr"],
    ...                    "retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> ev.evaluate(df).select("answer_relevance_passed", "mrr").row(0)
    (True, 0.5)
    >>> df.pipe(ev.replace(prefix="v2_")).columns[-4:]
    ['v2_answer_relevance_passed', 'v2_mrr', 'v2_composite_score', 'v2_passed']
    """

    metrics: str | tuple[str, ...] | None
    options: tuple[tuple[str, Any], ...]

    @public(name="Evaluator")
    def __init__(self, metrics: str | Iterable[str] | None = None, **options: Any) -> None:
        self._setup(metrics, options)

    def _setup(self, metrics: Any, options: dict[str, Any]) -> None:
        if metrics is not None and not isinstance(metrics, str):
            if not isinstance(metrics, Iterable):
                raise validate.fail("metrics", "a name or a list of names", metrics)
            metrics = tuple(metrics)
        object.__setattr__(self, "metrics", metrics)
        object.__setattr__(self, "options", _freeze(secrets.protect(options)))  # keys held as Secrets
        checked = build_plan(self._options_given())  # every check runs once, here
        object.__setattr__(self, "_run_plan", checked)
        if metrics != AUTO:
            routing.check_judging(resolve(metrics, checked), checked)

    @public(name="Evaluator.replace")
    def replace(self, **changes: Any) -> Evaluator:
        """A copy with some options (or ``metrics``) changed; ``None`` resets an option to its default.

        Parameters
        ----------
        **changes
            Option names (see :meth:`option_defaults`) or ``metrics``, with their new values.

        Returns
        -------
        Evaluator
            A new, checked evaluator; this one is unchanged (evaluators are immutable).

        Examples
        --------
        >>> Evaluator(["mrr"], k=[5]).replace(k=[10]).to_dict()
        {'metrics': ['mrr'], 'k': [10]}
        """
        config = self._given()
        metrics = changes.pop("metrics", config.pop("metrics", None))
        config.update(changes)
        return Evaluator(metrics, **{k: v for k, v in config.items() if v is not None})

    def __call__(self, frame: Frame, /) -> Frame:
        """``df.pipe(evaluator)``: the same as :meth:`evaluate`."""
        return self.evaluate(frame)

    def __repr__(self) -> str:
        # scrubbed: a key in a judge's base_url (its query string or userinfo) is a str, not a Secret
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return secrets.scrub(f"{type(self).__name__}({shown})")

    def __getstate__(self) -> dict[str, Any]:
        # the user metrics it names travel with it, so that a child process (evaluate_parquet's,
        # Ray's) that starts from a fresh registry knows them; a key only to evaluate_parquet's
        # children (through a pipe), never into a pickle that may be stored (ragframe.secrets)
        options = self.options if secrets.is_carrying() else secrets.portable(self.options)
        return {"metrics": self.metrics, "options": options, "user_metrics": self._user_metrics()}

    def __copy__(self) -> Evaluator:
        return self  # immutable; and a copy keeps its key, which a pickle would leave out

    def __deepcopy__(self, memo: dict) -> Evaluator:
        return self

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "metrics", state["metrics"])
        object.__setattr__(self, "options", state["options"])
        # the carried definition wins over an older one of the same name in this process (a Ray
        # worker kept from an earlier run whose driver re-registered the metric); never a built-in
        known = {m.name: m for m in registry.metrics()}
        for metric in state.get("user_metrics", ()):
            if metric.name not in known:
                registry.register_metric(metric)
            elif not registry.is_built_in(metric.name) and known[metric.name] != metric:
                registry.register_metric(metric, replace=True)

    def _user_metrics(self) -> list[Metric]:
        """The metrics this run names that were registered by the user (not shipped with ragframe)."""
        if self.metrics == AUTO:
            return []
        requests = resolve(self.metrics, self.run_plan)
        return list({m.name: m for m, _ in requests if not registry.is_built_in(m.name)}.values())

    # ------------------------------------------------------------------ options

    @staticmethod
    def option_defaults() -> dict[str, Any]:
        """Every option name with its default (the run's own and each family's).

        Returns
        -------
        dict of str to object
            Option name to default value (a new dict on each call).

        Examples
        --------
        >>> Evaluator.option_defaults()["composite_threshold"]
        0.6
        """
        return all_options()

    def option(self, name: str) -> Any:
        """The value of one option (its default when not set).

        Parameters
        ----------
        name : str
            An option name of :meth:`option_defaults`; another name is an
            :class:`~ragframe.exceptions.InvalidParameterError` listing them.

        Returns
        -------
        object
            The value set, as :meth:`to_dict` gives it, else the default.

        Examples
        --------
        >>> Evaluator(k=[5]).option("k"), Evaluator().option("composite_threshold")
        ([5], 0.6)
        """
        known = all_options()
        if name not in known:
            raise InvalidParameterError(f"Evaluator.option: unknown option {name!r}; choose from {sorted(known)}")
        return self.to_dict().get(name, known[name])

    def to_dict(self) -> dict[str, Any]:
        """The options set (not the defaults), as plain dicts and lists (JSON/TOML-safe).

        Returns
        -------
        dict of str to object
            ``metrics`` (when given), then every option set, by name;
            :meth:`from_dict` makes an equal evaluator from it. A key is never in it: a
            judge's ``api_key`` (any secret-named value, see :mod:`ragframe.secrets`) is
            ``'***'``, which :meth:`from_dict` refuses (give the key again); a key named
            by its environment variable (``api_key_env``) round-trips.

        Examples
        --------
        >>> Evaluator(["mrr"], k=[5, 10]).to_dict()
        {'metrics': ['mrr'], 'k': [5, 10]}
        >>> Evaluator(["judge_faithfulness"], judge={"model": "m", "api_key": "sk-0123456789"}).to_dict()["judge"]
        {'api_key': '***', 'model': 'm'}
        """
        return secrets.redact(self._given())

    def _given(self) -> dict[str, Any]:
        """The options set, thawed, keys still held as :class:`~ragframe.secrets.Secret` (for this process only)."""
        out: dict[str, Any] = {}
        if self.metrics is not None:
            out["metrics"] = self.metrics if isinstance(self.metrics, str) else list(self.metrics)
        for name, value in self.options:
            out[name] = _thaw(name, value)
        return out

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> Evaluator:
        """The evaluator a :meth:`to_dict` mapping (or a TOML ``[evaluate]`` table) describes.

        Parameters
        ----------
        config : mapping of str to object
            ``metrics`` (optional) and option names with their values.

        Returns
        -------
        Evaluator
            ``Evaluator(config["metrics"], **other_keys)``, checked as the constructor checks.

        Notes
        -----
        A ``to_dict`` (or a manifest's) judge holds ``api_key: '***'`` in place of a key
        given as a value: that is refused with an
        :class:`~ragframe.exceptions.InvalidParameterError` (pass the key again), never sent.
        A key named by its environment variable (``api_key_env``) round-trips: name keys
        that way in configs that are stored.

        Examples
        --------
        >>> ev = Evaluator.from_dict({"metrics": ["mrr"], "k": [5, 10]})
        >>> ev == Evaluator(["mrr"], k=[5, 10]), Evaluator.from_dict(ev.to_dict()) == ev
        (True, True)
        """
        config = dict(config)
        return cls(config.pop("metrics", None), **config)

    @property
    def run_plan(self) -> RunPlan:
        """The checked options (:class:`~ragframe.run.plan.RunPlan`), built once when the evaluator is made.

        Every scoring call reads it; none checks the options again (an evaluator read back from
        a pickle, in a child process, checks them once there).

        Examples
        --------
        >>> Evaluator(["mrr"], prefix="v2_").run_plan.prefix
        'v2_'
        """
        plan = self.__dict__.get("_run_plan")
        if plan is None:
            plan = build_plan(self._options_given())
            object.__setattr__(self, "_run_plan", plan)
        return plan

    def _options_given(self) -> dict[str, Any]:
        given = self._given()
        given.pop("metrics", None)
        return given

    # ------------------------------------------------------------------ metrics and columns

    def requests(self, columns: Iterable[str] | None = None) -> list[Request]:
        """The (metric, cutoff) pairs this run computes; ``columns`` resolves ``"auto"``.

        Parameters
        ----------
        columns : iterable of str, optional
            The frame's column names; needed when ``metrics="auto"``.

        Returns
        -------
        list of (Metric, int or None)
            Each metric with its cutoff (None for metrics without one), each pair once,
            grouped by family.

        Examples
        --------
        >>> [(m.name, k) for m, k in Evaluator(["ndcg_at_10", "mrr"]).requests()]
        [('ndcg_at_k', 10), ('mrr', None)]
        """
        checked = self.run_plan
        if columns is not None:
            return self._requests_for(checked, list(columns))
        if self.metrics == AUTO:
            raise InvalidParameterError("{metrics} needs the frame's columns", mentions={"metrics": "'auto'"})
        return resolve(self.metrics, checked)

    def skipped_metrics(self, columns: Iterable[str], /) -> dict[str, str]:
        """The default metrics a frame with ``columns`` does not get, each with the column it lacks.

        Only the default metric set (``metrics=None``) skips metrics: explicit names fail on a
        missing column instead, and ``"auto"`` chooses silently by definition.

        Parameters
        ----------
        columns : iterable of str
            The frame's column names.

        Returns
        -------
        dict of str to str
            Output column (with the prefix) -> the missing input column; empty when nothing is
            skipped.

        Examples
        --------
        >>> Evaluator().skipped_metrics(["question", "answer", "contexts"])
        {'context_recall': 'ground_truth', 'answer_correctness': 'ground_truth'}
        >>> Evaluator(["faithfulness"]).skipped_metrics(["answer", "contexts"])
        {}
        """
        if self.metrics is not None:
            return {}
        checked = self.run_plan
        prefix = checked.prefix
        available = list(columns)
        return {
            prefix + m.column(k): column for (m, k), _, column in default_requests(checked, available, strict=False)[1]
        }

    def outputs(self, columns: Iterable[str] | None = None) -> list[str]:
        """The score columns this run writes (prefixed), in order.

        Parameters
        ----------
        columns : iterable of str, optional
            The frame's column names; needed when ``metrics="auto"``.

        Returns
        -------
        list of str
            The metric columns (not the ``_passed`` flags, ``composite_score`` or ``passed``).

        Examples
        --------
        >>> Evaluator("retrieval", k=[10], prefix="bm25_").outputs()[:3]
        ['bm25_precision_at_10', 'bm25_recall_at_10', 'bm25_f1_at_10']
        """
        checked = self.run_plan
        return [checked.prefix + m.column(k) for m, k in self.requests(columns)]

    def input_columns(self, columns: Iterable[str] | None = None) -> dict[str, str]:
        """The input columns the run reads, keyed by role (after renames).

        Parameters
        ----------
        columns : iterable of str, optional
            The frame's column names; needed when ``metrics="auto"``, and used by families
            whose inputs depend on what is present (such as ``retrieved_scores``).

        Returns
        -------
        dict of str to str
            Role (``"answer"``, ``"retrieved_ids"``, ...) to column name.

        Examples
        --------
        >>> Evaluator(["faithfulness", "mrr"], answer="response").input_columns()
        {'answer': 'response', 'contexts': 'contexts', 'retrieved_ids': 'retrieved_ids', 'relevant_ids': 'relevant_ids'}
        >>> Evaluator("auto").input_columns(["question", "answer", "contexts"])
        {'question': 'question', 'answer': 'answer', 'contexts': 'contexts'}
        """
        checked = self.run_plan
        available = list(columns) if columns is not None else []
        return input_roles(self.requests(columns), checked, available)

    # ------------------------------------------------------------------ running

    @public(name="evaluate")
    def evaluate(self, frame: Frame, /, *, warn: bool = True) -> Frame:
        """Score ``frame``: the same kind of frame with the score columns appended.

        Text columns may be String, Categorical or Enum (Arrow dictionaries, pandas
        ``category``, ``large_string``, ``string_view``), also inside lists: all are text.
        A frame that already has *some* of the columns the run writes (its own
        ``faithfulness`` or ``passed``) is a :class:`~ragframe.exceptions.SchemaError` naming
        the column: nothing of the user's is replaced silently; pass a ``prefix`` to write
        beside it. A frame that has *every* one of them was scored by this same run before
        (a notebook cell run again), and gets them replaced in place.

        Parameters
        ----------
        frame : frame
            polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, or pandas DataFrame
            with the input columns of the requested metrics.
        warn : bool
            Warn (:class:`~ragframe.exceptions.SkippedMetricWarning`) once per default metric
            the frame's columns do not allow; engines scoring batch after batch pass False.

        Returns
        -------
        frame
            The same kind of frame (a LazyFrame stays lazy) with appended: each score column,
            followed by its ``_passed`` flag when it has a threshold, then ``composite_score``
            and ``passed`` (unless ``composite=False``).

        Examples
        --------
        >>> import polars as pl
        >>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
        >>> Evaluator(["mrr"]).evaluate(df)["mrr"].to_list()
        [0.5]
        """
        checked = self.run_plan
        requests, roles = self._plan(checked, column_names(frame), warn=warn)

        state = RunState()  # one call (one LazyFrame plan): each judge prompt asked once, however often collected

        def compute(view: pl.DataFrame) -> pl.DataFrame:
            return score_frame(view, requests, checked, state)

        inputs = list(dict.fromkeys(roles.values()))
        return apply_to_frame(frame, compute, columns=inputs, clash_hint=CLASH_HINT)

    def scores(self, frame: pl.DataFrame, /, *, budget: Any = None) -> pl.DataFrame:
        """Only the new columns for a polars DataFrame (what streaming and cluster engines write).

        Parameters
        ----------
        frame : polars.DataFrame
            A batch with the input columns of the requested metrics.
        budget : BudgetState, optional
            A streaming run's judge budget as this batch starts (:class:`ragframe.budgeting.BudgetState`:
            the run's plan and what earlier batches spent); None scores the batch on its own.

        Returns
        -------
        polars.DataFrame
            The columns :meth:`evaluate` would append, one row per input row, and no other.

        Examples
        --------
        >>> import polars as pl
        >>> Evaluator(["mrr"]).scores(pl.DataFrame({"retrieved_ids": [["a"]], "relevant_ids": [["a"]]})).columns
        ['mrr']
        """
        checked = self.run_plan
        requests, roles = self._plan(checked, frame.columns, warn=False)
        view = conform_text(frame.select(list(dict.fromkeys(roles.values()))))
        return score_frame(view, requests, checked, RunState(), budget)

    def budget_candidates(self, frame: pl.DataFrame, /) -> Any:
        """A batch's judge budget candidates, truncated to those the run's budget could choose.

        A streaming run's first pass (:func:`ragframe.evaluate_parquet` with ``budget=``) finds
        every batch's candidates, and :func:`ragframe.budgeting.merged_plan` draws the run's rows
        from all of them, so the rows chosen do not depend on the batches.

        Parameters
        ----------
        frame : polars.DataFrame
            A batch with the input columns of the requested metrics.

        Returns
        -------
        ragframe.judges.budget.Candidates

        Examples
        --------
        >>> import polars as pl
        >>> ev = Evaluator(["judge_faithfulness"], judge=lambda prompt: "Score: 1", budget=1)
        >>> frame = pl.DataFrame({"answer": ["a", "b"], "contexts": [["a"], ["b"]]})
        >>> ev.budget_candidates(frame).table.height
        2
        """
        from ragframe import budgeting

        checked = self.run_plan
        requests, roles = self._plan(checked, frame.columns, warn=False)
        view = conform_text(frame.select(list(dict.fromkeys(roles.values()))))
        routes = {m.name: routing.route(m, checked) for m, _ in requests}
        hybrid = [r for r in requests if r[0].family != "judge" and routes[r[0].name] == "hybrid"]
        blocks = family_blocks(view, hybrid, checked, RunState())
        groups = score_groups(blocks, {m.column(k) for m, k in hybrid})
        eligible = budget_eligible(view, requests, routes, groups, checked)
        return budgeting.truncated(budgeting.candidates(view, eligible, checked), checked)

    def written_columns(self, schema: Mapping[str, pl.DataType], /) -> list[str]:
        """Every column the run appends to a frame of this ``schema``, in order (from scoring zero rows).

        The score columns, their ``_passed`` flags, companions (``_signals``, a judge's
        ``_reason``/``_status``/...), ``composite_score`` and ``passed``: what an engine checks
        against the input's names before writing anything. The zero rows have the column
        contract's dtypes, so a wrong dtype in ``schema`` (found later, row by row) does not
        stop it.

        Parameters
        ----------
        schema : mapping of str to polars.DataType
            The input's column names and dtypes.

        Returns
        -------
        list of str

        Examples
        --------
        >>> import polars as pl
        >>> schema = {"retrieved_ids": pl.List(pl.Int64), "relevant_ids": pl.Null}
        >>> Evaluator(["mrr", "ndcg_at_10"]).written_columns(schema)
        ['ndcg_at_10', 'mrr']
        """
        checked = self.run_plan
        requests, roles = self._plan(checked, list(schema), warn=False)
        dtypes = {name: CONTRACT_DTYPES.get(role, schema[name]) for role, name in roles.items()}
        return score_frame(pl.DataFrame(schema=dtypes), requests, checked, RunState()).columns

    def plan(self, columns: Iterable[str], /, *, warn: bool = True) -> tuple[list[Request], dict[str, str]]:
        """What a frame with these ``columns`` gets: the (metric, cutoff) requests and the input columns by role.

        A missing input column is a :class:`SchemaError` naming the metric that needs it.

        Parameters
        ----------
        columns : iterable of str
            The frame's column names.
        warn : bool
            Warn once per default metric skipped (see :meth:`evaluate`).

        Returns
        -------
        tuple of (list of (Metric, int or None), dict of str to str)
            What :meth:`requests` and :meth:`input_columns` give for these columns.

        Examples
        --------
        >>> requests, roles = Evaluator(["faithfulness"], answer="response").plan(["response", "contexts"])
        >>> roles
        {'answer': 'response', 'contexts': 'contexts'}
        """
        return self._plan(self.run_plan, list(columns), warn=warn)

    def _plan(self, checked: RunPlan, available: list[str], *, warn: bool):
        """The requests and input roles for a frame of these columns, bound once per list of columns.

        A streaming run asks for every batch: its batches share their columns, so the requests
        are resolved and the columns bound once (a list of columns that fails is checked again,
        and fails again, each time).
        """
        bound = self.__dict__.get("_bound")
        if bound is None:
            bound = {}
            object.__setattr__(self, "_bound", bound)  # schema -> (requests, roles); not pickled
        key = tuple(available)
        if key not in bound:
            requests = self._requests_for(checked, available)
            roles = input_roles(requests, checked, available)
            require_inputs(requests, checked, available)
            routing.check_judging(requests, checked)
            bound[key] = (tuple(requests), MappingProxyType(roles))
        if warn and self.metrics is None:
            warn_skipped(checked, available)
        requests, roles = bound[key]
        return list(requests), dict(roles)

    def _requests_for(self, checked: RunPlan, available: list[str]) -> list[Request]:
        if self.metrics == AUTO or self.metrics is None:
            check_named_columns(self.to_dict(), available)
        if self.metrics == AUTO:
            return auto_requests(checked, available)
        if self.metrics is None:
            return default_requests(checked, available)[0]
        return resolve(self.metrics, checked)


def _thaw(name: str, value: Any) -> Any:
    if name in ("thresholds", "weights") and isinstance(value, tuple):
        return {k: v for k, v in value}
    if name in _DICT_OPTIONS:
        return _thaw_nested(value)
    return list(value) if isinstance(value, tuple) else value


def _thaw_nested(value: Any) -> Any:
    """Frozen dicts (sorted pairs) back to dicts, tuples to lists, at any depth."""
    if isinstance(value, tuple) and value and routing._frozen_items(value) is not None:
        return {k: _thaw_nested(v) for k, v in value}
    return [_thaw_nested(v) for v in value] if isinstance(value, tuple) else value


@public
def evaluate(df: Frame, /, metrics: str | Iterable[str] | None = None, **options: Any) -> Frame:
    """Score any mix of metrics at once: the one entry point.

    Parameters
    ----------
    df : frame
        polars DataFrame/LazyFrame, pyarrow Table/RecordBatch or pandas DataFrame.
    metrics : str or list of str, optional
        Metric names (``"faithfulness"``, ``"mrr"``, ``"ndcg_at_k"``), output names
        (``"ndcg_at_10"``), family names (``"heuristic"``, ``"retrieval"``) or ``"auto"``.
        Default: each of the seven heuristic metrics whose input columns ``df`` has, with a
        :class:`~ragframe.exceptions.SkippedMetricWarning` per metric skipped (none possible:
        a :class:`~ragframe.exceptions.SchemaError`). A metric named here whose input column
        is missing is a SchemaError.
    **options
        As :class:`Evaluator` (``prefix``, ``thresholds``, ``weights``, ``composite_threshold``,
        ``explain``, ``k``, column names, ``judge``, ``mode``, ``metric_modes``,
        ``hybrid_band``, ...). With ``mode="llm"`` each heuristic metric that has a judge
        counterpart is scored by the judge under its own name (plus ``_reason``, ``_status``,
        ``_error``, ``_source``); with ``mode="hybrid"`` only the rows whose heuristic score is
        in ``hybrid_band`` go to the judge. ``budget=N`` (or ``{"calls": N, "cost": x}``) caps
        what the judge is sent, on rows drawn at random (``budget_seed``, strata ``by``), and
        adds ``<name>_heuristic`` to each routed metric (:mod:`ragframe.judges.budget`).

    Returns
    -------
    The same kind of frame, with one column per score, ``<score>_passed`` for every score
    with a threshold, and ``composite_score``/``passed`` over those.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"question": ["What is the capital of France?"],
    ...                    "answer": ["Paris is the capital of France."],
    ...                    "contexts": [["Paris is the capital and largest city of France."]],
    ...                    "ground_truth": ["Paris"]})
    >>> out = evaluate(df, metrics=["faithfulness", "answer_correctness"])
    >>> round(out["faithfulness"][0], 4), out["passed"][0]  # 4 of the answer's 5 bigrams are in the context
    (0.8, False)
    """
    return Evaluator(metrics, **options).evaluate(df)


@public
async def aevaluate(df: Frame, /, metrics: str | Iterable[str] | None = None, **options: Any) -> Frame:
    """:func:`evaluate` for async code (a web server, a notebook's event loop): awaitable, never blocking the loop.

    The options are checked at once, in the caller; the scoring (and any judge calls, on a
    private event loop) runs in a worker thread, so the caller's event loop keeps serving
    while it runs.

    Parameters
    ----------
    df : frame
        As :func:`evaluate`.
    metrics : str or list of str, optional
        As :func:`evaluate`.
    **options
        As :func:`evaluate`.

    Returns
    -------
    The same kind of frame as :func:`evaluate` returns.

    Examples
    --------
    >>> import asyncio
    >>> import polars as pl
    >>> async def judge(prompt):
    ...     return "Score: 0.8"
    >>> df = pl.DataFrame({"question": ["q?"], "answer": ["a."]})
    >>> out = asyncio.run(aevaluate(df, ["judge_answer_relevance"], judge=judge, cache=False))
    >>> out["judge_answer_relevance"].to_list()
    [0.8]
    """
    import asyncio

    evaluator = Evaluator(metrics, **options)
    return await asyncio.to_thread(evaluator.evaluate, df)  # the thread runs in a copy of this context
