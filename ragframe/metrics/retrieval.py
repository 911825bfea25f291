"""Ranking metrics over whole batches, trec_eval-exact (``docs/metrics.md``).

Two entry points share one kernel (:mod:`ragframe.kernels.ranking`):

* wide frames, one row per query: :func:`score_retrieval` appends
  ``precision_at_k`` ... ``r_precision`` columns;
* long TREC tables: :func:`evaluate_run` takes a run and qrels and returns one
  row per query; :func:`run_summary` gives trec_eval's ``all`` line.

Nulls and empties (wide frames): a null judgments list means "not judged": the
row's scores are null. An empty judgments list means "judged, nothing relevant":
scores are 0. A null ``retrieved_ids`` list gives null scores; an empty one
(nothing retrieved) gives 0 for a judged row. A null ``retrieved_scores`` list
means "rank by list order" for that row.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, NamedTuple, TypeVar, cast

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.ranking import (
    COUNT_MEASURES,
    CUT_MEASURES,
    FULL_MEASURES,
    Judgments,
    dedupe_judgments,
    maybe_repeated,
    rank_measures,
)
from ragframe.kernels.trec_measures import (
    MIN_GEO_MEAN,
    R_MULTIPLES,
    RECALL_POINTS,
    UTILITY_COEFFICIENTS,
    TrecMeasure,
    TrecOptions,
)
from ragframe.metrics import registry
from ragframe.metrics.registry import Family, Metric, Requests, register_family, register_metric
from ragframe.public import public
from ragframe.schema import (
    check_id_list_column,
    check_same_id_kind,
    first_true_row,
    id_dtype_ok,
    integer_grades,
    to_polars,
    value_text,
)

__all__ = [
    "RETRIEVAL_METRICS",
    "TrecKernel",
    "judgment_column",
    "RetrievalOptions",
    "evaluate_run",
    "run_summary",
    "retrieval_metrics",
]

Frame = TypeVar("Frame")

#: The ranking measures of :func:`ragframe.kernels.ranking.compute_measures` (the default set).
_CLASSIC: tuple[str, ...] = CUT_MEASURES + FULL_MEASURES


# ----------------------------------------------------------------------------- parameters


def _check_ks(k: int | Iterable[int], function: str) -> list[int]:
    """One cutoff or a non-empty list of them, each an int >= 1 (sorted, repeats dropped)."""
    return validate.k_list(k, "k", function)


def _chosen_requests(metrics: Any, ks: Sequence[int], function: str) -> list[tuple[Metric, int | None]]:
    """Ranking metric names -> (metric, cutoff) pairs, read as :func:`ragframe.evaluate` reads them.

    ``None`` or ``"retrieval"`` is the family's default set; a metric name (``"ndcg_at_k"``,
    ``"mrr"``) is computed at every cutoff of ``ks`` when it has one; an output name
    (``"ndcg_at_10"``) at its own cutoff only. Each pair once: the cutoff metrics by k (registry
    order within a k), then the others (registry order), the order trec_eval prints them in.
    """
    family = registry.metrics("retrieval")
    allowed = [m.name for m in family]
    names = ["retrieval"] if metrics is None else [metrics] if isinstance(metrics, str) else metrics
    if not isinstance(names, Iterable) or not (names := list(names)):
        raise validate.fail(function, "metrics", f"a name or a non-empty list of names from {allowed}", metrics)
    pairs: list[tuple[Metric, int | None]] = []
    for name in names:
        if not isinstance(name, str):
            raise validate.fail(function, "metrics", "metric names (str)", name)
        parsed = registry.parse_column(name)
        if name == "retrieval":
            pairs += [(m, k) for m in family if m.by_default for k in (ks if m.cutoff else [None])]
        elif parsed is not None and not parsed.prefix and parsed.k is not None and parsed.metric.family == "retrieval":
            pairs.append((parsed.metric, parsed.k))
        elif name in allowed:
            metric = registry.get_metric(name)
            pairs += [(metric, k) for k in ks] if metric.cutoff else [(metric, None)]
        else:
            raise InvalidParameterError(
                f"{function}: unknown ranking metric {name!r}; choose from {allowed}, an output name of a "
                "cutoff metric ('ndcg_at_10') or 'retrieval' (the default set)"
            )
    position = {m.name: i for i, m in enumerate(family)}
    unique = {(m.name, k): m for m, k in pairs}

    def key(item: tuple[str, int | None]) -> tuple[int, int, int]:
        return (1, 0, position[item[0]]) if item[1] is None else (0, item[1], position[item[0]])

    return [(unique[item], item[1]) for item in sorted(unique, key=key)]


def _check_level(relevance_level: int, function: str) -> int:
    """trec_eval's ``-l``: an int >= 0 (a judged document is relevant when its grade >= the level).

    trec_eval takes any level, but below 0 its measures disagree with its own counts: a
    retrieved document missing from the qrels has the internal grade -1, so at ``-l -1`` P,
    recall, MAP and MRR count it as relevant while R and num_rel_ret do not (recall can
    exceed 1). ragframe refuses those levels; at 0 and above it follows trec_eval exactly.
    """
    level = validate.integer(relevance_level, "relevance_level", function)
    if level < 0:
        raise validate.fail(
            function,
            "relevance_level",
            "an int >= 0 (below 0 trec_eval counts unjudged documents as relevant in some measures and not in "
            "others; at 0 every judged document with grade >= 0 is relevant)",
            relevance_level,
        )
    return level


# ----------------------------------------------------------------------------- ordering


def _pieces(score: np.ndarray | pl.Series) -> list[np.ndarray]:
    """The values as NumPy arrays without copying: one per chunk of a Series."""
    if isinstance(score, np.ndarray):
        return [score]
    return [chunk.to_numpy() for chunk in score.get_chunks() if chunk.len()]


def _score_steps(score: np.ndarray | pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose score is above the previous row's (rises) and equal to it (ties).

    A Series is read chunk by chunk (its few Arrow chunks, not its rows), never copied whole.
    """
    rises, ties = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    offset, last = 0, None
    for part in _pieces(score):
        if last is not None and part[0] >= last:
            (rises if part[0] > last else ties).append(np.array([offset]))
        steps = np.flatnonzero(part[1:] >= part[:-1])  # one pass: >= is > or == (NaN is neither)
        up = part[steps + 1] > part[steps]
        rises.append(steps.compress(up) + (offset + 1))
        ties.append(steps.compress(~up) + (offset + 1))
        offset, last = offset + part.size, part[-1]
    return np.concatenate(rises), np.concatenate(ties)


def _in_trec_order(
    lengths: np.ndarray,
    score: np.ndarray | pl.Series,
    doc: pl.Series,
    steps: tuple[np.ndarray, np.ndarray] | None = None,
) -> bool:
    """True when each group of ``lengths`` rows is by score descending, then doc id descending.

    ``steps`` is :func:`_score_steps` of ``score``, when already computed.
    """
    if len(score) < 2:
        return True
    boundary = np.cumsum(lengths)[:-1]  # first row of every group but the first (sorted)

    def at_boundary(rows: np.ndarray) -> np.ndarray:  # rows sorted: a binary search each
        found = np.searchsorted(boundary, rows).clip(max=max(boundary.size - 1, 0))
        return boundary[found] == rows if boundary.size else np.zeros(rows.size, dtype=bool)

    rises, tie = steps if steps is not None else _score_steps(score)
    if rises.size and not at_boundary(rises).all():
        return False
    tie = tie[~at_boundary(tie)]
    if tie.size == 0:
        return True
    return not bool((doc.gather(tie - 1) < doc.gather(tie)).any())


def _has_nan(part: np.ndarray) -> bool:
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN: that alone is not a NaN score
        total = np.add.reduce(part)
    return bool(np.isnan(total) and np.isnan(part).any())


def _check_scores(series: pl.Series, column: str, function: str) -> pl.Series:
    """The scores as Float64 (not copied when they are Float64); a typed error for null or NaN."""
    if not series.dtype.is_numeric():
        raise SchemaError("wrong dtype", function=function, column=column, expected="a number", found=str(series.dtype))
    values = series.cast(pl.Float64)
    # a sum is NaN when a value is NaN (or when +inf and -inf meet, silently: no RuntimeWarning): then look
    # row by row
    if values.null_count() or any(_has_nan(part) for part in _pieces(values)):
        row = first_true_row(values.is_null() | values.is_nan())
        raise SchemaError(
            "null or NaN score",
            function=function,
            column=column,
            row=row,
            expected="a number",
            found=str(values[row]),
        )
    return values


# ----------------------------------------------------------------------------- wide frames


# ----------------------------------------------------------------------------- the retrieval family


def _family_check(options: dict[str, Any], function: str) -> dict[str, Any]:
    names = [spec.name for spec in registry.declared_options(RetrievalOptions)]
    checked = registry.check_options(RetrievalOptions, {name: options[name] for name in names}, function)
    return {**checked, "contexts": options["contexts"], "_function": function}


def _column_option(value: Any, name: str, function: str) -> str | None:
    return None if value is None else validate.column_name(value, name, function)


@dataclass(frozen=True)
class RetrievalOptions:
    """The retrieval family's options: each one's default, check and documentation, declared once."""

    k: tuple[int, ...] = registry.option(
        (1, 5, 10),
        "Cutoffs of the ``*_at_k`` metrics: an int or a list of ints >= 1.",
        check=lambda value, name, function: _check_ks(value, function),
        invalid=(0, (5, 0), ()),
    )
    relevance_level: int = registry.option(
        1,
        "Minimum grade of a relevant document (trec_eval ``-l``), an int >= 0.",
        check=lambda value, name, function: _check_level(value, function),
        invalid=(-1,),
    )
    match: str = registry.option(
        "id",
        "``'id'`` compares ids; ``'contains'`` matches retrieved chunk texts against gold document texts "
        "(:mod:`ragframe.kernels.matching`).",
        check=lambda value, name, function: validate.choice(value, name, function, ["id", "contains"]),
        invalid=("ids",),
    )
    retrieved_ids: str | None = registry.option(
        None,
        "Column of the retrieved ids in rank order; defaults to ``retrieved_ids`` (``contexts`` with "
        "``match='contains'``).",
        check=_column_option,
    )
    retrieved_scores: str | None = registry.option(
        "retrieved_scores",
        "Column of the retrieval scores (list of floats); when it exists, rows are ranked by score descending, "
        "then id descending (trec_eval). None ignores scores.",
        check=_column_option,
    )
    relevant_ids: str | None = registry.option(
        None,
        "Column of the binary judgments (list of ids); defaults to ``relevant_ids`` (``gold_documents`` with "
        "``match='contains'``).",
        check=_column_option,
    )
    relevance: str | None = registry.option(
        "relevance",
        "Column of the graded judgments, list of struct{id, grade}; used when it exists.",
        check=_column_option,
    )
    rbp_persistence: float = registry.option(
        0.9,
        "``rbp``'s persistence p, strictly between 0 and 1 (trec_eval's 0.9).",
        check=lambda value, name, function: _check_persistence(value, function),
        invalid=(0.0, 1.0),
    )
    err_max_grade: int = registry.option(
        4,
        "``err_at_k``'s highest grade (gdeval's 4); a higher grade is an error.",
        check=validate.positive_int,
        invalid=(0,),
    )


def _check_persistence(value: Any, function: str) -> float:
    return validate.number(value, "rbp_persistence", function, minimum=0.0, maximum=1.0, inclusive=False)


def _needs_grades(requests: Sequence[Any]) -> bool:
    """Some requested metric reads judged non-relevant documents (its registered inputs name ``relevance``)."""
    return any("relevance" in metric.inputs for metric, _ in requests)


def _family_columns(requests: Sequence[Any], options: dict[str, Any], available: Sequence[str]) -> dict[str, str]:
    """The columns the ranking metrics read: ids, optional scores, graded or binary judgments.

    A metric whose registered inputs name ``relevance`` reads the graded column whatever
    else the frame has (when it is missing, the caller's check names the metric and the column).
    """
    contains = options["match"] == "contains"
    names = set(available)
    columns = {"retrieved_ids": options["retrieved_ids"] or (options["contexts"] if contains else "retrieved_ids")}
    if options["retrieved_scores"] and options["retrieved_scores"] in names and not contains:
        columns["retrieved_scores"] = options["retrieved_scores"]
    judgments, graded = judgment_column(
        available,
        relevant_ids=options["relevant_ids"],
        relevance=options["relevance"],
        contains=contains,
        function=options["_function"],
    )
    if _needs_grades(requests) and not graded:  # named first: a check for missing columns reports it
        columns["relevance"] = options["relevance"] or "relevance"
    columns["relevance" if graded else "relevant_ids"] = judgments
    return columns


def _family_score(view: pl.DataFrame, requests: Sequence[Any], options: dict[str, Any], function: str) -> pl.DataFrame:
    columns = _family_columns(requests, options, view.columns)
    binary_only = options["match"] == "contains" or options["relevance"] is None
    if _needs_grades(requests) and (binary_only or columns["relevance"] not in view.columns):
        graded = [metric.name for metric, _ in requests if "relevance" in metric.inputs]
        raise InvalidParameterError(
            f"{function}: {graded} count judged non-relevant documents and need graded judgments "
            "(match='id' with a relevance column; binary judgments do not say what was judged)"
        )
    graded = "relevance" in columns
    return _score_wide(
        view,
        retrieved_col=columns["retrieved_ids"],
        score_col=columns.get("retrieved_scores"),
        judgment_col=columns["relevance"] if graded else columns["relevant_ids"],
        graded=graded,
        contains=options["match"] == "contains",
        requests=requests,
        options=options,
        function=function,
    )


register_family(
    Family(
        name="retrieval",
        score=_family_score,
        options=RetrievalOptions,
        check=_family_check,
        columns=_family_columns,
        function="score_retrieval",
    )
)


@dataclass(frozen=True)
class TrecKernel:
    """A ranking metric computed by :mod:`ragframe.kernels.trec_measures` (the registry's ``kernel``).

    Attributes
    ----------
    root : str
        The measure's root there: trec_eval's name (``"bpref"``, ``"map_cut"``), or
        ``"judged"``/``"err"`` for the measures beyond trec_eval.
    params : str
        What it is given: ``"none"`` (``fixed``), ``"cutoffs"`` (the requested k),
        ``"persistence"`` (``rbp_persistence``) or ``"err"`` (``err_max_grade`` and the k).
    fixed : tuple
        The parameters of a ``"none"`` measure (``11pt_avg``'s recall points).

    Examples
    --------
    >>> TrecKernel("map_cut", "cutoffs").measure(("average_precision_at_5",), (5,), {})
    TrecMeasure(root='map_cut', params=(5,), names=('average_precision_at_5',), placeholder_kept=False)
    """

    root: str
    params: Literal["none", "cutoffs", "persistence", "err"] = "none"
    fixed: tuple[Any, ...] = ()

    def measure(self, names: tuple[str, ...], ks: tuple[int, ...], options: Mapping[str, Any]) -> TrecMeasure:
        """The trec measure writing ``names`` (one per cutoff in ``ks``, or one) under the family's ``options``."""
        if self.params == "cutoffs":
            params: tuple[Any, ...] = ks
        elif self.params == "persistence":
            params = (("p", float(options["rbp_persistence"])),)
        elif self.params == "err":
            params = (int(options["err_max_grade"]), ks)
        else:
            params = self.fixed
        return TrecMeasure(self.root, params, names)


def _trec_options(requests: Requests, options: Mapping[str, Any]) -> TrecOptions | None:
    """The requests computed by trec kernels, as one :class:`TrecOptions` (None when there are none)."""
    by_metric: dict[str, tuple[Metric, list[int]]] = {}
    for metric, k in requests:
        if isinstance(metric.kernel, TrecKernel):
            by_metric.setdefault(metric.name, (metric, []))[1].extend([] if k is None else [k])
    measures = []
    for metric, ks in by_metric.values():
        cutoffs = tuple(sorted(set(ks)))
        names = tuple(metric.column(k) for k in cutoffs) if metric.cutoff else (metric.column(),)
        measures.append(metric.kernel.measure(names, cutoffs, options))
    return TrecOptions(tuple(measures)) if measures else None


def _classic(requests: Requests) -> tuple[list[int], list[str]]:
    """The cutoffs and names of the requests :func:`~ragframe.kernels.ranking.compute_measures` computes."""
    chosen = [(m, k) for m, k in requests if m.name in _CLASSIC]
    return sorted({k for _, k in chosen if k is not None}) or [1], list(dict.fromkeys(m.name for m, _ in chosen))


_DESCRIPTIONS = {
    "precision_at_k": "Relevant documents in the top k, divided by k (trec_eval P_k).",
    "recall_at_k": "Relevant documents in the top k, divided by all relevant (trec_eval recall_k).",
    "f1_at_k": "Harmonic mean of precision_at_k and recall_at_k.",
    "hit_rate_at_k": "1 if any relevant document is in the top k (trec_eval success_k).",
    "recall_all_at_k": "1 if every relevant document is in the top k.",
    "ndcg_at_k": "nDCG at k, gains = grades, ideal from all judged documents (trec_eval ndcg_cut_k).",
    "mrr_at_k": "Reciprocal rank of the first relevant document within the top k.",
    "ndcg": "nDCG over the whole ranking (trec_eval ndcg).",
    "mrr": "Reciprocal rank of the first relevant document (trec_eval recip_rank).",
    "average_precision": "Average precision over the whole ranking (trec_eval map).",
    "r_precision": "Precision at R, the number of relevant documents (trec_eval Rprec).",
}
#: The measures trec_eval also summarises by a geometric mean, and that summary's name.
_GEOMETRIC = {"average_precision": "gm_map", "bpref": "gm_bpref"}
for _name in _CLASSIC:
    register_metric(
        Metric(
            name=_name,
            family="retrieval",
            inputs=("retrieved_ids", "relevant_ids"),
            description=_DESCRIPTIONS[_name],
            cutoff=_name.endswith("_at_k"),
            geometric_mean=_GEOMETRIC.get(_name),
        )
    )

_IDS = ("retrieved_ids", "relevant_ids")
_GRADED = ("retrieved_ids", "relevance")
#: The measures computed only when named: (name, kernel, inputs, higher_is_better, description).
_OPT_IN: tuple[tuple[str, TrecKernel, tuple[str, ...], bool, str], ...] = (
    (
        "average_precision_at_k",
        TrecKernel("map_cut", "cutoffs"),
        _IDS,
        True,
        "Average precision counting only the relevant documents within the top k, over R (trec_eval map_cut_k).",
    ),
    (
        "relative_precision_at_k",
        TrecKernel("relative_P", "cutoffs"),
        _IDS,
        True,
        "Relevant documents in the top k, divided by min(k, R) (trec_eval relative_P_k).",
    ),
    (
        "err_at_k",
        TrecKernel("err", "err"),
        _IDS,
        True,
        "Expected reciprocal rank at k, stop probability (2^grade - 1) / 2^err_max_grade (ir_measures ERR@k).",
    ),
    (
        "judged_at_k",
        TrecKernel("judged", "cutoffs"),
        _GRADED,
        True,
        "Share of the top k (of the documents retrieved there) that is judged (ir_measures Judged@k).",
    ),
    (
        "unjudged_at_k",
        TrecKernel("unj", "cutoffs"),
        _GRADED,
        False,
        "Documents in the top k without a judgment, divided by k; lower is better (trec_eval unj_k).",
    ),
    (
        "bpref",
        TrecKernel("bpref"),
        _GRADED,
        True,
        "Relevant retrieved documents, each penalised by the judged non-relevant ones above it (trec_eval bpref).",
    ),
    (
        "infap",
        TrecKernel("infAP"),
        _GRADED,
        True,
        "Inferred average precision, estimating AP from incomplete judgments (trec_eval infAP).",
    ),
    (
        "interpolated_precision_11pt",
        TrecKernel("11pt_avg", fixed=RECALL_POINTS),
        _IDS,
        True,
        "Interpolated precision averaged over the recall points 0, 0.1, ..., 1 (trec_eval 11pt_avg).",
    ),
    (
        "rbp",
        TrecKernel("rbp", "persistence"),
        _IDS,
        True,
        "Rank-biased precision with persistence rbp_persistence, gains = grades scaled to [0, 1] (trec_eval rbp).",
    ),
    (
        "rbp_residual",
        TrecKernel("rbp_resid", "persistence"),
        _GRADED,
        False,
        "How far rbp could rise if every unjudged document were relevant; lower is better (trec_eval rbp_resid).",
    ),
    (
        "ndcg_rel",
        TrecKernel("ndcg_rel"),
        _IDS,
        True,
        "nDCG averaged at the rank of each document with a positive gain (trec_eval ndcg_rel).",
    ),
    (
        "rndcg",
        TrecKernel("Rndcg"),
        _IDS,
        True,
        "nDCG averaged at each rank where the ideal gain changes (trec_eval Rndcg).",
    ),
    (
        "normalized_gain",
        TrecKernel("G"),
        _IDS,
        True,
        "Gain of each retrieved document discounted by how far the ranking lags the ideal (trec_eval G).",
    ),
    (
        "binary_normalized_gain",
        TrecKernel("binG"),
        _IDS,
        True,
        "normalized_gain with binary gains, over R (trec_eval binG).",
    ),
    (
        "set_precision",
        TrecKernel("set_P"),
        _IDS,
        True,
        "Relevant retrieved over retrieved, the ranking as a set (trec_eval set_P).",
    ),
    (
        "set_recall",
        TrecKernel("set_recall"),
        _IDS,
        True,
        "Relevant retrieved over R, the ranking as a set (trec_eval set_recall).",
    ),
    (
        "set_relative_precision",
        TrecKernel("set_relative_P"),
        _IDS,
        True,
        "Relevant retrieved over min(retrieved, R) (trec_eval set_relative_P).",
    ),
    (
        "set_average_precision",
        TrecKernel("set_map"),
        _IDS,
        True,
        "set_precision times set_recall (trec_eval set_map).",
    ),
    (
        "set_f1",
        TrecKernel("set_F"),
        _IDS,
        True,
        "Harmonic mean of set_precision and set_recall (trec_eval set_F).",
    ),
)
for _name, _kernel, _inputs, _higher, _description in _OPT_IN:
    register_metric(
        Metric(
            name=_name,
            family="retrieval",
            inputs=_inputs,
            description=_description,
            kernel=_kernel,
            higher_is_better=_higher,
            cutoff=_name.endswith("_at_k"),
            by_default=False,
            geometric_mean=_GEOMETRIC.get(_name),
        )
    )


def _parameter_name(root: str, value: float) -> str:
    """A trec_eval measure's library name at one parameter: ``iprec_at_recall_0.50`` -> ``iprec_at_recall_0_50``."""
    return f"{root.lower()}_{value:3.2f}".replace(".", "_")


#: trec_eval's parameterised measures at its default parameters, one registry entry each:
#: (trec_eval root, parameter, description).
_PARAMETERISED: tuple[tuple[str, float, str], ...] = (
    *(
        (
            "iprec_at_recall",
            level,
            f"Interpolated precision at recall {level:3.2f}: the highest precision at or below the rank "
            f"where recall reaches {level:3.2f} (trec_eval iprec_at_recall_{level:3.2f}).",
        )
        for level in RECALL_POINTS
    ),
    *(
        (
            "Rprec_mult",
            multiple,
            f"Precision at {multiple:3.2f} R (R relevant documents), the cutoff floor({multiple:3.2f} R + 0.9) "
            f"(trec_eval Rprec_mult_{multiple:3.2f}).",
        )
        for multiple in R_MULTIPLES
    ),
)
for _root, _value, _description in _PARAMETERISED:
    register_metric(
        Metric(
            name=_parameter_name(_root, _value),
            family="retrieval",
            inputs=_IDS,
            description=_description,
            kernel=TrecKernel(_root, fixed=(_value,)),
            by_default=False,
        )
    )
register_metric(
    Metric(
        name="utility",
        family="retrieval",
        inputs=_IDS,
        description=(
            "Relevant retrieved minus non-relevant retrieved, a - (N - a); unbounded "
            "(trec_eval utility at its default coefficients 1, -1, 0, 0)."
        ),
        kernel=TrecKernel("utility", fixed=UTILITY_COEFFICIENTS),
        bounds=None,
        by_default=False,
    )
)

#: Every ranking metric name :func:`score_retrieval` and :func:`evaluate_run` accept in ``metrics=``.
RETRIEVAL_METRICS: tuple[str, ...] = tuple(m.name for m in registry.metrics("retrieval"))


def judgment_column(
    names: Iterable[str],
    *,
    relevant_ids: str | None,
    relevance: str | None,
    contains: bool = False,
    function: str | None = None,
) -> tuple[str, bool]:
    """The judgments column a wide frame is scored with, and whether it is graded.

    ``relevant_ids`` and ``relevance`` are the caller's keywords (``relevant_ids=None``: the
    default column ``relevant_ids``, or ``gold_documents`` with ``match="contains"``;
    ``relevance=None``: no graded judgments). The graded column is used when it exists; when
    the frame also holds the binary column, which one to score is ambiguous, so that is a
    :class:`SchemaError` whether or not ``relevant_ids`` was named: pass ``relevance=None``
    to score the binary judgments, or leave the binary column out of the frame to score the
    graded ones. Content matching (``contains``) always reads the binary column.

    Examples
    --------
    >>> judgment_column(["retrieved_ids", "relevance"], relevant_ids=None, relevance="relevance")
    ('relevance', True)
    >>> judgment_column(["retrieved_ids", "relevant_ids", "relevance"], relevant_ids=None, relevance=None)
    ('relevant_ids', False)
    """
    available = set(names)
    binary = relevant_ids or ("gold_documents" if contains else "relevant_ids")
    if contains or not relevance or relevance not in available:
        return binary, False
    if binary in available:
        raise SchemaError(
            f"both {relevance!r} (graded) and {binary!r} (binary) judgments are present; pass relevance=None "
            f"to score the binary ones, or leave {binary!r} out of the frame to score the graded ones",
            function=function,
            column=binary,
        )
    return relevance, True


def _score_wide(
    view: pl.DataFrame,
    *,
    retrieved_col: str,
    score_col: str | None,
    judgment_col: str,
    graded: bool,
    contains: bool,
    requests: Requests,
    options: Mapping[str, Any],
    function: str,
) -> pl.DataFrame:
    n = view.height
    if contains:
        from ragframe.kernels.matching import contains_to_ids

        retrieved, relevant = contains_to_ids(view, retrieved_col, judgment_col, function)
    else:
        retrieved = check_id_list_column(view, retrieved_col, function)
        check_same_id_kind(
            function,
            (repr(retrieved_col), view.schema[retrieved_col].inner),  # type: ignore[union-attr]
            (repr(judgment_col), _judged_id_dtype(view.schema[judgment_col], graded)),
            column=judgment_col,
        )
        relevant = None
    lengths = retrieved.list.len().fill_null(0).to_numpy().astype(np.int64)
    run_q = np.repeat(np.arange(n, dtype=np.int64), lengths)
    run_doc = retrieved.explode(empty_as_null=False, keep_nulls=False).rename("doc")

    if score_col is not None:
        run_q, run_doc = _order_by_scores(view, score_col, retrieved, run_q, run_doc, lengths, function)

    judgments = _wide_judgments(view, judgment_col, graded, relevant, function)
    trec = _trec_options(requests, options)
    _check_err_grades(trec, judgments.grade, lambda at: int(judgments.q[at]), judgment_col, function)
    ks, metrics = _classic(requests)
    values = rank_measures(
        run_doc, lengths, judgments, ks=ks, measures=metrics, relevance_level=options["relevance_level"], trec=trec
    )
    null_run = retrieved.is_null().to_numpy()
    columns = []
    for name in (metric.column(k) for metric, k in requests):
        arr = values[name]
        if null_run.any():
            arr = np.where(null_run, np.nan, arr)
        columns.append(pl.Series(name, arr, dtype=pl.Float64, nan_to_null=True))
    return pl.DataFrame(columns, height=n) if columns else pl.DataFrame(height=n)


def _check_err_grades(trec: TrecOptions | None, grades: np.ndarray, row_of: Any, column: str, function: str) -> None:
    """``err_at_k`` needs every grade <= ``err_max_grade``: an error naming the first row above it."""
    for measure in trec.measures if trec is not None else ():
        if measure.root != "err":
            continue
        above = np.flatnonzero(grades > measure.params[0])
        if above.size:
            raise SchemaError(
                "grade above err_max_grade",
                function=function,
                column=column,
                row=row_of(int(above[0])),
                expected=f"grades <= err_max_grade={measure.params[0]} (err_at_k's stop probabilities)",
                found=str(int(grades[above[0]])),
            )


def _order_by_scores(
    view: pl.DataFrame,
    score_col: str,
    retrieved: pl.Series,
    run_q: np.ndarray,
    run_doc: pl.Series,
    lengths: np.ndarray,
    function: str,
) -> tuple[np.ndarray, pl.Series]:
    scores = view.get_column(score_col)
    dtype = scores.dtype
    if not isinstance(dtype, pl.List) or not dtype.inner.is_numeric():
        raise SchemaError("wrong dtype", function=function, column=score_col, expected="list[f64]", found=str(dtype))
    score_len = scores.list.len()
    mismatch = score_len.is_not_null() & retrieved.is_not_null() & (score_len != retrieved.list.len())
    row = first_true_row(mismatch)
    if row is not None:
        raise SchemaError(
            "scores list and ids list differ in length",
            function=function,
            column=score_col,
            row=row,
            expected=f"{retrieved.list.len()[row]} scores",
            found=f"{score_len[row]}",
        )
    bad = scores.cast(pl.List(pl.Float64)).list.eval(pl.element().is_null() | pl.element().is_nan()).list.any()
    row = first_true_row(bad)
    if row is not None:
        raise SchemaError(
            "null or NaN inside a scores list",
            function=function,
            column=score_col,
            row=row,
            expected="numbers",
            found=value_text(view, score_col, row),
        )
    # rows with a null scores list (or a null ids list) keep list order: score = -position
    usable = (scores.is_not_null() & retrieved.is_not_null()).to_numpy()
    flat_scores = (
        scores.filter(pl.Series(usable))
        .cast(pl.List(pl.Float64))
        .explode(empty_as_null=False, keep_nulls=False)
        .to_numpy()
    )
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    pos = np.arange(run_q.size, dtype=np.int64) - starts[run_q]
    key = -pos.astype(np.float64)
    key[usable[run_q]] = flat_scores
    if _in_trec_order(lengths, key, run_doc):
        return run_q, run_doc
    ordered = pl.DataFrame({"q": run_q, "s": key, "doc": run_doc}).sort(
        ["q", "s", "doc"], descending=[False, True, True], maintain_order=True
    )
    return ordered.get_column("q").to_numpy(), ordered.get_column("doc")


def _graded_fields(dtype: pl.DataType) -> tuple[str, str] | None:
    """The id and grade field names of a graded judgments dtype, list[struct{id, grade}], or None.

    ``key``/``value`` are accepted for ``id``/``grade`` (a map read from Arrow); the id is a str
    or int, the grade an int or a float (whole numbers only, checked on the values).
    """
    inner = dtype.inner if isinstance(dtype, pl.List) else None
    fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
    id_field = "id" if "id" in fields else "key" if "key" in fields else None
    grade_field = "grade" if "grade" in fields else "value" if "value" in fields else None
    if id_field is None or grade_field is None or not id_dtype_ok(fields[id_field]):
        return None
    if not (fields[grade_field].is_integer() or fields[grade_field].is_float()):
        return None
    return id_field, grade_field


def _judged_id_dtype(dtype: pl.DataType, graded: bool) -> pl.DataType:
    """The dtype of the ids in a judgments column (Null when it is not a valid judgments dtype)."""
    if graded:
        fields = _graded_fields(dtype)
        return {f.name: f.dtype for f in dtype.inner.fields}[fields[0]] if fields else pl.Null  # type: ignore[union-attr]
    return dtype.inner if isinstance(dtype, pl.List) else pl.Null


def _wide_judgments(
    view: pl.DataFrame, column: str, graded: bool, relevant: pl.Series | None, function: str
) -> Judgments:
    n = view.height
    if graded:
        series = view.get_column(column)
        fields = _graded_fields(series.dtype)
        if fields is None:
            raise SchemaError(
                "wrong dtype",
                function=function,
                column=column,
                expected="list[struct{id: str, grade: int}]",
                found=str(series.dtype),
            )
        flat = series.explode(empty_as_null=False, keep_nulls=False).struct.unnest()
        ids = flat.get_column(fields[0]).cast(pl.String)
        grades = flat.get_column(fields[1])
        lengths = series.list.len().fill_null(0).to_numpy().astype(np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        bad = ids.is_null() | grades.is_null()
        at = first_true_row(bad)
        if at is not None:
            raise SchemaError(
                "null id or grade inside judgments",
                function=function,
                column=column,
                row=int(row_of[at]),
                expected="non-null id and grade",
                found=str(flat.row(at)),
            )
        grade = integer_grades(grades, column, function, row_of).to_numpy()
    else:
        series = relevant if relevant is not None else check_id_list_column(view, column, function)
        lengths = series.list.len().fill_null(0).to_numpy().astype(np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        ids = series.explode(empty_as_null=False, keep_nulls=False)
        grade = np.ones(ids.len(), dtype=np.int64)
    q, ids, grade = dedupe_judgments(row_of, ids, grade, function=function, column=column, row_of=row_of)
    judged = series.is_not_null().to_numpy()
    return Judgments(q=q, doc=ids.rename("doc"), grade=grade, judged=judged)


# ----------------------------------------------------------------------------- long (TREC) tables


def _id_column(df: pl.DataFrame, column: str, function: str) -> pl.Series:
    series = df.get_column(column)
    if not id_dtype_ok(series.dtype):
        raise SchemaError(
            "wrong dtype", function=function, column=column, expected="str or int", found=str(series.dtype)
        )
    if series.null_count():
        row = first_true_row(series.is_null())
        raise SchemaError("null id", function=function, column=column, row=row, expected="an id", found="null")
    return series if series.dtype == pl.String else series.cast(pl.String)


@public
def evaluate_run(
    run: Any,
    qrels: Any,
    /,
    *,
    k: int | Iterable[int] = (5, 10, 100),
    metrics: Iterable[str] | str | None = None,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
    rbp_persistence: float = 0.9,
    err_max_grade: int = 4,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    score: str = "score",
    relevance: str = "relevance",
) -> pl.DataFrame:
    """Score a TREC-style run against qrels: one row per query, as trec_eval ``-q``.

    Documents are ranked by score descending, ties broken by doc id descending
    (trec_eval; a ``rank`` column is ignored). A run already in that order (the
    usual case) is not sorted again.

    Parameters
    ----------
    run : frame
        Columns ``query_id, doc_id, score`` (names overridable). A document listed twice
        for one query is a :class:`~ragframe.exceptions.SchemaError` naming the row, as
        :func:`~ragframe.io.trec.read_trec_run` refuses such a file (naming its lines) and
        trec_eval stops on it: one rule for files and frames. A null or NaN score is a
        SchemaError naming the row.
    qrels : frame
        Columns ``query_id, doc_id, relevance``: integer grades (a float column is accepted
        when every grade is a whole number, ``2.0``; ``1.5`` is an error naming the row).
        Query and doc ids are str or int, of the same kind as the run's: an int id never
        equals a str id. Categorical and Enum ids (Arrow dictionaries) are str ids and score
        as the same strings. Either frame may be a LazyFrame (``pl.scan_parquet(path)``):
        only the named columns are read.
    k : int or list of int
        Cutoffs for the ``*_at_k`` measures. The default, 5, 10 and 100, is not
        :func:`score_retrieval`'s 1, 5 and 10 on purpose: a TREC run ranks hundreds to
        thousands of documents per query and is read at trec_eval's cutoffs (``P_5``,
        ``P_10``, ``P_100``, ``recall_100``), while a wide frame holds a retriever's top few
        chunks. Pass ``k`` to get the other's.
    metrics : str or list of str, optional
        The names :func:`ragframe.evaluate` and :func:`score_retrieval` accept for the
        ranking family: metric names from :data:`RETRIEVAL_METRICS` (``"ndcg_at_k"``,
        ``"bpref"``, ``"iprec_at_recall_0_50"``, ...; a cutoff metric at every ``k``),
        output names of cutoff metrics (``"ndcg_at_10"``: that cutoff only, whatever ``k``
        is) and ``"retrieval"`` (the default set). Each value equals what ``ragframe trec``
        prints for its trec_eval measure (see ``docs/metrics.md``). By default the
        family's default set (``by_default`` in :func:`ragframe.list_metrics`).
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0: a judged
        document is relevant when its grade >= the level (at 0, grade-0 documents
        too); negative grades and unjudged documents never are.
    complete : bool
        trec_eval ``-c``: queries in the qrels but absent from the run are
        scored 0 instead of being left out.
    max_docs : int, optional
        trec_eval ``-M``: keep at most this many documents per query, after ranking.
    rbp_persistence, err_max_grade
        As in :func:`score_retrieval`.
    query_id, doc_id, score, relevance : str
        Column names: ``query_id`` and ``doc_id`` in both frames, ``score`` in the run,
        ``relevance`` in the qrels. The output's id column is ``query_id`` whatever its name here.

    Returns
    -------
    polars.DataFrame
        ``query_id, num_ret, num_rel, num_rel_ret`` and one Float64 column per
        measure, sorted by ``query_id``. Queries of the run that have no
        judgments are kept with null measures (trec_eval skips them); use
        :func:`run_summary` for the ``all`` line.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]})
    >>> evaluate_run(run, qrels, k=1, metrics=["mrr"])["mrr"].to_list()
    [0.5]
    >>> evaluate_run(run, qrels, metrics=["ndcg_at_2", "rprec_mult_2_00"]).columns[4:]
    ['ndcg_at_2', 'rprec_mult_2_00']
    """
    function = "evaluate_run"
    ks = _check_ks(k, function)
    requests = _chosen_requests(metrics, ks, function)
    level = _check_level(relevance_level, function)
    complete = validate.flag(complete, "complete", function)
    max_docs = None if max_docs is None else validate.positive_int(max_docs, "max_docs", function)
    family_options = {
        "rbp_persistence": _check_persistence(rbp_persistence, function),
        "err_max_grade": validate.positive_int(err_max_grade, "err_max_grade", function),
    }
    names = {
        name: validate.column_name(value, name, function)
        for name, value in (("query_id", query_id), ("doc_id", doc_id), ("score", score), ("relevance", relevance))
    }
    tables = _long_tables(run, qrels, **names, function=function)
    # the repeated-document check is fused with the scoring, which hashes the doc ids anyway,
    # unless -M drops rows first (a repeat below the cut is still refused)
    fused = max_docs is None
    qids, run_doc, run_counts, qrels_runs = _ranked_run(
        tables, names["score"], names["doc_id"], function, check_repeats=not fused
    )
    if max_docs is not None:
        run_doc, run_counts = _truncated(run_doc, run_counts, max_docs)
    query_ids, counts, judgments, jrows = _coded_judgments(qids, run_counts, qrels_runs, tables, complete)
    trec = _trec_options(requests, family_options)
    refuse_repeats = partial(_refuse_repeats_exactly, tables, names["doc_id"], function) if fused else None
    try:
        row_of = (lambda at: at) if jrows is None else (lambda at: int(jrows[at]))
        if trec is not None:  # (the grades are converted only when needed)
            _check_err_grades(trec, judgments.grade, row_of, names["relevance"], function)
    except SchemaError:
        if refuse_repeats is not None:  # a repeated document is named first, as when it is checked first
            refuse_repeats()
        raise
    measures = [*_classic(requests)[1], *COUNT_MEASURES]
    virtual = np.arange(counts.size) >= qids.len() if trec is not None else None
    values = _measures(
        run_doc,
        counts,
        judgments,
        jrows,
        ks=sorted({k for _, k in requests if k is not None}) or [1],
        measures=measures,
        level=level,
        column=doc_id,
        trec=trec,
        virtual=virtual,
        refuse_repeats=refuse_repeats,
    )
    return _per_query(query_ids, values, [metric.column(k) for metric, k in requests])


def trec_eval_run(
    run: Any,
    qrels: Any,
    /,
    options: TrecOptions,
    *,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
) -> pl.DataFrame:
    """trec_eval's per-query values of a run (the lines ``trec_eval -q`` prints), for ``ragframe trec``.

    Only the queries trec_eval evaluates are returned: those with judgments, and with
    ``complete`` (``-c``) every judged query, a query missing from the run scored as
    trec_eval scores its placeholder. Columns are the printed measure names of
    ``options`` (Int64 counts, Float64 values, String ``relstring``), by ``query_id``.

    Parameters
    ----------
    run, qrels : frame
        As :func:`evaluate_run` takes them (``query_id, doc_id, score`` and
        ``query_id, doc_id, relevance``).
    options : ragframe.kernels.trec_measures.TrecOptions
        The measures and trec_eval's ``-J``/``-N``.
    relevance_level, complete, max_docs
        trec_eval's ``-l``, ``-c`` and ``-M``.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> import polars as pl
    >>> from ragframe.kernels.trec_measures import TrecMeasure, TrecOptions
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [0, 1]})
    >>> opts = TrecOptions((TrecMeasure("bpref", (), ("bpref",)), TrecMeasure("relstring", (), ("relstring",))))
    >>> trec_eval_run(run, qrels, opts).row(0)
    ('q1', 0.0, '01')
    """
    function = "evaluate_run"
    level = _check_level(relevance_level, function)
    complete = validate.flag(complete, "complete", function)
    max_docs = None if max_docs is None else validate.positive_int(max_docs, "max_docs", function)
    names = {"query_id": "query_id", "doc_id": "doc_id", "score": "score", "relevance": "relevance"}
    tables = _long_tables(run, qrels, **names, function=function)
    fused = max_docs is None  # the repeated-document check is fused with the scoring (see evaluate_run)
    qids, run_doc, run_counts, qrels_runs = _ranked_run(tables, "score", "doc_id", function, check_repeats=not fused)
    if max_docs is not None:
        run_doc, run_counts = _truncated(run_doc, run_counts, max_docs)
    query_ids, counts, judgments, jrows = _coded_judgments(qids, run_counts, qrels_runs, tables, complete)
    virtual = np.arange(counts.size) >= qids.len()
    values = _measures(
        run_doc,
        counts,
        judgments,
        jrows,
        ks=[1],
        measures=[],
        level=level,
        column="doc_id",
        trec=options,
        virtual=virtual,
        refuse_repeats=partial(_refuse_repeats_exactly, tables, "doc_id", function) if fused else None,
    )
    columns = [query_ids.rename("query_id")]
    for name, array in values.items():
        if array.dtype == object:
            columns.append(pl.Series(name, array.tolist(), dtype=pl.String))
        elif array.dtype.kind in "iu":
            columns.append(pl.Series(name, array, dtype=pl.Int64))
        else:
            columns.append(pl.Series(name, array, dtype=pl.Float64))
    out = pl.DataFrame(columns).filter(pl.Series(judgments.judged))
    return out if out.get_column("query_id").is_sorted() else out.sort("query_id")


class _LongTables(NamedTuple):
    """The columns :func:`evaluate_run` reads, checked: ids as String, grades as Int64."""

    run_qid: pl.Series
    run_doc: pl.Series
    run_score: pl.Series  # as given (checked on a thread by :func:`_ranked_run`)
    qrels_qid: pl.Series
    qrels_doc: pl.Series
    grades: pl.Series


def _long_tables(
    run: Any, qrels: Any, *, query_id: str, doc_id: str, score: str, relevance: str, function: str
) -> _LongTables:
    run_df = to_polars(run, [query_id, doc_id, score], function)
    qrels_df = to_polars(qrels, [query_id, doc_id, relevance], function)
    grades = integer_grades(qrels_df.get_column(relevance), relevance, function)
    row = first_true_row(grades.is_null())
    if row is not None:
        raise SchemaError("null grade", function=function, column=relevance, row=row, expected="int", found="null")
    for column in (query_id, doc_id):  # an int id never equals a str id
        check_same_id_kind(
            function,
            (f"the run's {column!r}", run_df.schema[column]),
            (f"the qrels' {column!r}", qrels_df.schema[column]),
            column=column,
        )
    return _LongTables(
        run_qid=_id_column(run_df, query_id, function),
        run_doc=_id_column(run_df, doc_id, function),
        run_score=run_df.get_column(score),
        qrels_qid=_id_column(qrels_df, query_id, function),
        qrels_doc=_id_column(qrels_df, doc_id, function),
        grades=grades,
    )


def _ranked_run(
    tables: _LongTables, column: str, doc_column: str, function: str, *, check_repeats: bool = True
) -> tuple[pl.Series, pl.Series, np.ndarray, pl.DataFrame]:
    """The run in trec_eval order (:func:`_group_run`) and the qrels' query-id run lengths.

    The scores are checked, the (query, document) pairs checked for repeats (unless
    ``check_repeats`` is False: the caller has :func:`rank_measures` check them), and the run
    lengths of the query ids (both halves of the run, and the qrels') computed, on threads.
    """
    run_qid = tables.run_qid
    with ThreadPoolExecutor(max_workers=2) as pool:  # scores are checked while the query ids are read
        checking = pool.submit(_checked_scores, tables.run_score, column, function)
        half = run_qid.len() // 2
        first_half = pool.submit(lambda: run_qid.slice(0, half).rle().struct.unnest())
        # qrels come grouped by query: one code lookup per run of equal query ids
        qrels_coding = pool.submit(lambda: tables.qrels_qid.rle().struct.unnest())
        run_runs = _joined_runs(first_half, run_qid.slice(half).rle().struct.unnest())
        if check_repeats:
            repeats = pool.submit(_refuse_repeated_pairs, run_qid, tables.run_doc, run_runs, doc_column, function)
        qrels_runs = qrels_coding.result()
        run_score, steps = checking.result()
        if check_repeats:
            repeats.result()
    qids, run_doc, run_counts = _group_run(run_qid, tables.run_doc, run_score, run_runs, steps)
    return qids, run_doc, run_counts, qrels_runs


def _truncated(run_doc: pl.Series, run_counts: np.ndarray, max_docs: int) -> tuple[pl.Series, np.ndarray]:
    """trec_eval ``-M``: the first ``max_docs`` documents of each query (the run is in trec_eval order)."""
    if not run_counts.size or int(run_counts.max()) <= max_docs:
        return run_doc, run_counts
    starts = np.cumsum(run_counts) - run_counts
    run_q = np.repeat(np.arange(run_counts.size), run_counts)
    keep = (np.arange(run_q.size) - starts[run_q]) < max_docs
    return run_doc.filter(pl.Series(keep)), np.minimum(run_counts, max_docs)


def _coded_judgments(
    qids: pl.Series, run_counts: np.ndarray, qrels_runs: pl.DataFrame, tables: _LongTables, complete: bool
) -> tuple[pl.Series, np.ndarray, Judgments, np.ndarray | None]:
    """Query codes for the judgments: the run's queries first, then (``complete``) judged-only ones.

    Returns the query ids in code order, the number of retrieved rows of each, the judgments of
    the coded queries (judgments of queries the run does not have are left out unless
    ``complete``) and each judgment's row in the qrels (``None`` when judgment ``i`` is row ``i``).
    """
    qrels_firsts = qrels_runs.get_column("value")
    codes = pl.DataFrame({"qid": qids, "code": np.arange(qids.len(), dtype=np.int64)})
    if qrels_firsts.equals(qids):  # the usual case: the same queries in the same order, no lookup
        per_query = qrels_runs.get_column("len").to_numpy().astype(np.int64)  # a query's judgments: one run
        judged = np.ones(qids.len(), dtype=bool)
        judgments = Judgments(None, tables.qrels_doc, tables.grades, judged, per_query=per_query)
        return codes.get_column("qid"), run_counts.astype(np.int64), judgments, None  # judgment i: qrels row i
    judged_qids = qrels_firsts.unique(maintain_order=True)
    extra = judged_qids.filter(~judged_qids.is_in(qids.implode()))
    if complete and extra.len():
        extra = extra.sort()
        codes = pl.concat([codes, pl.DataFrame({"qid": extra, "code": np.arange(extra.len()) + qids.len()})])
    first_codes = (
        pl.DataFrame({"qid": qrels_firsts})
        .join(codes, on="qid", how="left", maintain_order="left")
        .get_column("code")
        .fill_null(-1)
        .to_numpy()
    )
    j_code = np.repeat(first_codes, qrels_runs.get_column("len").to_numpy())  # -1: a query the run does not have
    if extra.len() == 0 or complete:  # every judged query has a code: nothing to drop
        jq, jdoc, jgrade = j_code, tables.qrels_doc, tables.grades.to_numpy()
        jrows = None  # judgment i is qrels row i
    else:  # judgments of queries the run does not have are left out
        known = j_code >= 0
        jq = j_code[known]
        jdoc = tables.qrels_doc.filter(pl.Series(known))
        jgrade = tables.grades.filter(pl.Series(known)).to_numpy()
        jrows = np.flatnonzero(known)
    n_queries = codes.height
    judged = np.zeros(n_queries, dtype=bool)
    judged[first_codes[first_codes >= 0]] = True  # a code per run of equal query ids, not per judgment
    judged[qids.len() :] = True
    counts = np.zeros(n_queries, dtype=np.int64)
    counts[: run_counts.size] = run_counts
    return codes.get_column("qid"), counts, Judgments(q=jq, doc=jdoc, grade=jgrade, judged=judged), jrows


def _measures(
    run_doc: pl.Series,
    counts: np.ndarray,
    judgments: Judgments,
    jrows: np.ndarray | None,
    *,
    ks: list[int],
    measures: list[str],
    level: int,
    column: str,
    trec: TrecOptions | None = None,
    virtual: np.ndarray | None = None,
    refuse_repeats: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """:func:`rank_measures`; judgments repeated for a (query, document) are deduped first.

    The usual input, one grade per (query, document), is checked on the scoring threads; only
    when that check fails are the repeats dropped (if they agree) or the first conflicting qrels
    row named (``jrows`` maps judgments to qrels rows, ``None``: row i is judgment i), and the
    measures computed again. With ``refuse_repeats`` (the exact search for a document listed
    twice in the run, which raises), the run is checked for repeats on the scoring threads too,
    and that search runs when they may have found one.
    """
    options: dict[str, Any] = {"ks": ks, "measures": measures, "relevance_level": level, "trec": trec}
    options["virtual"] = virtual
    try:
        values = rank_measures(
            run_doc, counts, judgments, check_unique=True, check_repeats=refuse_repeats is not None, **options
        )
    except Exception:
        if refuse_repeats is not None:  # a repeated document is named first, as when it was checked first
            refuse_repeats()
        raise
    if values is not None:
        return values
    if refuse_repeats is not None:
        refuse_repeats()  # raises on a repeated document; else two keys met by chance, or repeated judgments
    q, doc, grade = dedupe_judgments(
        judgments.q, judgments.doc, judgments.grade, function="evaluate_run", column=column, row_of=jrows
    )
    unique = Judgments(q=q, doc=doc, grade=grade, judged=judgments.judged)
    return cast("dict[str, np.ndarray]", rank_measures(run_doc, counts, unique, **options))


def _per_query(query_ids: pl.Series, values: dict[str, np.ndarray], names: list[str]) -> pl.DataFrame:
    """One row per query: ``query_id``, the counts, then the measures (NaN as null), by query id."""
    columns = [query_ids.rename("query_id")]
    columns += [pl.Series(name, values[name], dtype=pl.Int64) for name in COUNT_MEASURES]
    columns += [pl.Series(name, values[name], dtype=pl.Float64, nan_to_null=True) for name in names]
    out = pl.DataFrame(columns)
    return out if out.get_column("query_id").is_sorted() else out.sort("query_id")


def _joined_runs(first: Future[pl.DataFrame], second: pl.DataFrame) -> pl.DataFrame:
    """Run lengths (``rle`` unnested) of two consecutive slices, as those of the whole."""
    head = first.result()
    if head.height and second.height and head.item(-1, "value") == second.item(0, "value"):
        lengths = head.get_column("len").to_numpy().copy()
        lengths[-1] += second.item(0, "len")
        head = head.with_columns(pl.Series("len", lengths, dtype=head.schema["len"]))
        second = second.slice(1)
    return pl.concat([head, second])


def _refuse_repeats_exactly(tables: _LongTables, column: str, function: str) -> None:
    """:func:`_refuse_repeated_pairs` of the run as given (the rare path, after a possible repeat)."""
    _refuse_repeated_pairs(tables.run_qid, tables.run_doc, tables.run_qid.rle().struct.unnest(), column, function)


def _refuse_repeated_pairs(qid: pl.Series, doc: pl.Series, runs: pl.DataFrame, column: str, function: str) -> None:
    """A document listed twice for one query is a SchemaError naming the row (as read_trec_run and trec_eval).

    ``runs`` is ``qid.rle()`` unnested. A run grouped by query (the usual case) is checked a query
    at a time (:func:`maybe_repeated`), others by one hash per row; the exact search runs only when
    two hashes agree.
    """
    pairs = pl.DataFrame({"q": qid, "d": doc})
    firsts = runs.get_column("value")
    if firsts.n_unique() == firsts.len():
        if not maybe_repeated(runs.get_column("len").to_numpy(), doc):
            return
    elif pairs.hash_rows().n_unique() == pairs.height:
        return
    row = first_true_row(~pairs.select(pl.struct("q", "d").is_first_distinct()).to_series())
    if row is None:  # two pairs with one hash, no repeat
        return
    raise SchemaError(
        "a document listed twice for one query (read_trec_run and trec_eval refuse such runs)",
        function=function,
        column=column,
        row=row,
        expected="each (query, document) once",
        found=f"{pairs.item(row, 'd')!r} again for query {pairs.item(row, 'q')!r}",
    )


def _checked_scores(scores: pl.Series, column: str, function: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    score = _check_scores(scores, column, function)
    return score, _score_steps(score)


def _group_run(
    qid: pl.Series,
    doc: pl.Series,
    score: pl.Series,
    runs: pl.DataFrame,
    steps: tuple[np.ndarray, np.ndarray],
) -> tuple[pl.Series, pl.Series, np.ndarray]:
    """Rows grouped by query in trec_eval order: the query ids, the doc ids, the rows of each query.

    A run already grouped by query and ranked by score (then doc id, descending) is used as
    it is: only run lengths are computed, no sort. ``runs`` is ``qid.rle()`` unnested and
    ``steps`` is :func:`_score_steps` of ``score``, both computed by the caller on threads.
    """
    if qid.len() == 0:
        return qid, doc, np.zeros(0, dtype=np.int64)
    firsts, lengths = runs.get_column("value"), runs.get_column("len").to_numpy().astype(np.int64)
    # grouped: each query id starts one run (ids in sorted order, as runs usually are, need no hash count)
    grouped = firsts.is_sorted() or firsts.n_unique() == firsts.len()
    if not grouped or not _in_trec_order(lengths, score, doc, steps):
        ordered = pl.DataFrame({"q": qid, "s": score, "d": doc}).sort(
            ["q", "s", "d"], descending=[False, True, True], maintain_order=True
        )
        doc = ordered.get_column("d")
        runs = ordered.get_column("q").rle().struct.unnest()
        firsts, lengths = runs.get_column("value"), runs.get_column("len").to_numpy().astype(np.int64)
    return firsts, doc, lengths


@public
def run_summary(per_query: Any, /) -> pl.DataFrame:
    """trec_eval's ``all`` line: one row of means over the evaluated queries.

    ``num_q`` counts queries with judgments; ``num_ret``, ``num_rel`` and
    ``num_rel_ret`` are summed over them; every ranking-measure column (``ndcg_at_10``,
    ``bm25_mrr``, ...: the registry's retrieval metrics, any prefix) is the arithmetic mean
    over them. A query whose measures are all null (no judgments) is left out, as trec_eval
    leaves out queries that have no judgments; a query with a value in any measure is
    counted in ``num_q`` and in every mean, as trec_eval counts every evaluated query, and a
    null among its values counts as NaN (trec_eval's ``-nan``): that column's mean is NaN.
    ``average_precision`` and ``bpref`` are also summarised as
    trec_eval's geometric means, ``gm_map`` and ``gm_bpref`` (with their prefix), right
    after them: exp(mean(log(max(value, 0.00001)))). Other columns (ids, metadata, other
    families' scores) are not summarised.

    Parameters
    ----------
    per_query : frame
        One row per query, as :func:`evaluate_run` returns it (polars, pyarrow or pandas):
        Float64 measure columns and the optional count columns.

    Returns
    -------
    polars.DataFrame
        One row: ``num_q``, the count columns present, then the mean of each ranking-measure
        column, in the input's order.

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"query_id": ["a", "b", "c"], "num_ret": [1, 1, 2], "mrr": [1.0, 0.0, None]})
    >>> run_summary(pq).row(0, named=True)  # query c has no judgments
    {'num_q': 2, 'num_ret': 2, 'mrr': 0.5}
    >>> pq = pl.DataFrame({"query_id": ["a", "b"], "mrr": [1.0, 0.0], "ndcg": [1.0, None]})
    >>> run_summary(pq).row(0, named=True)  # b counts in num_q and mrr; its null makes ndcg's mean NaN
    {'num_q': 2, 'mrr': 0.5, 'ndcg': nan}
    >>> ap = pl.DataFrame({"query_id": ["a", "b"], "average_precision": [0.5, 0.125]})
    >>> run_summary(ap).row(0, named=True)
    {'num_q': 2, 'average_precision': 0.3125, 'gm_map': 0.25}
    """
    df = to_polars(per_query, function="run_summary")
    measures = [
        c
        for c in registry.score_columns(df.schema)
        if (m := registry.metric_for_column(c)) is not None and m.family == "retrieval"
    ]
    evaluated = df.filter(pl.any_horizontal(pl.col(measures).is_not_null())) if measures else df
    exprs = [pl.len().alias("num_q")]
    exprs += [pl.col(c).sum() for c in COUNT_MEASURES if c in df.columns]
    for column in measures:
        exprs.append(pl.col(column).cast(pl.Float64).fill_null(float("nan")).mean().alias(column))
        parsed = registry.parse_column(column)
        geometric = parsed.metric.geometric_mean if parsed is not None and parsed.metric is not None else None
        if geometric is not None:
            floored = pl.col(column).cast(pl.Float64).fill_null(float("nan")).clip(lower_bound=MIN_GEO_MEAN).log()
            exprs.append(floored.mean().exp().alias(parsed.prefix + geometric))
    return evaluated.select(exprs)


# ----------------------------------------------------------------------------- one sample


@public
def retrieval_metrics(
    retrieved: Sequence[str] | Sequence[int],
    relevant: Sequence[str] | Sequence[int] | Mapping[Any, int],
    k: int | Iterable[int] = 5,
    *,
    scores: Sequence[float] | None = None,
    relevance_level: int = 1,
) -> dict[str, float]:
    """Ranking metrics of one query, as a plain dict (the seeds' single-sample call).

    Parameters
    ----------
    retrieved : list of str or list of int
        Retrieved ids in rank order. A string is refused (it is not a list of ids).
    relevant : list of ids, or dict id -> grade
        Relevant ids, or graded judgments. A grade is an int, or a float that is a whole
        number (``2.0``); ``1.5`` is refused, never truncated. The ids of ``retrieved`` and
        ``relevant`` are of one kind: an int id never equals a str id.
    k : int or list of int
        Cutoffs for the ``*_at_k`` metrics.
    scores : list of float, optional
        One score per retrieved id: the ranking is then by score descending, ties by id
        descending (trec_eval).
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0.

    Returns
    -------
    dict
        Metric name -> value (see :func:`score_retrieval`).

    Examples
    --------
    >>> m = retrieval_metrics(["a", "b", "c"], ["b", "z"], k=2)
    >>> m["precision_at_2"], m["recall_at_2"], m["mrr"]
    (0.5, 0.5, 0.5)
    """
    function = "retrieval_metrics"
    ks = _check_ks(k, function)
    level = _check_level(relevance_level, function)
    ids, ids_dtype = _id_list(retrieved, "retrieved", function)
    graded = isinstance(relevant, Mapping)
    judged, judged_dtype = _id_list(list(relevant) if graded else relevant, "relevant", function)
    check_same_id_kind(function, ("retrieved", ids_dtype), ("relevant", judged_dtype), column="relevant")
    dtype = ids_dtype if ids_dtype != pl.Null else judged_dtype if judged_dtype != pl.Null else pl.String
    data: dict[str, pl.Series] = {"retrieved_ids": pl.Series([ids], dtype=pl.List(dtype))}
    if graded:
        grades = [_whole_grade(value, key, function) for key, value in relevant.items()]  # type: ignore[union-attr]
        rows = [{"id": key, "grade": grade} for key, grade in zip(judged, grades)]
        data["relevance"] = pl.Series([rows], dtype=pl.List(pl.Struct({"id": dtype, "grade": pl.Int64})))
    else:
        data["relevant_ids"] = pl.Series([judged], dtype=pl.List(dtype))
    if scores is not None:
        data["retrieved_scores"] = pl.Series([_score_list(scores, len(ids), function)], dtype=pl.List(pl.Float64))
    options = {**registry.option_defaults(RetrievalOptions), "k": ks, "relevance_level": level, "contexts": "contexts"}
    requests = _chosen_requests(None, ks, function)
    scored = _family_score(pl.DataFrame(data), requests, _family_check(options, function), function)
    return {name: scored[name][0] for name in scored.columns}


def _id_list(value: Any, name: str, function: str) -> tuple[list[Any], pl.DataType]:
    """The ids of a plain list and their dtype (String, Int64, or Null when empty)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise validate.fail(function, name, "a list of ids (str or int), not a single string", value)
    ids = list(value)
    is_str = [isinstance(v, str) for v in ids]
    is_int = [isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in ids]
    if all(is_str):
        return ids, (pl.String if ids else pl.Null)
    if all(is_int):
        return [int(v) for v in ids], pl.Int64
    kind = is_str if any(is_str) else is_int
    at = next((i for i, ok in enumerate(kind) if not ok), 0)
    raise validate.fail(function, name, f"a list of ids of one kind (all str or all int); position {at} is", ids[at])


def _whole_grade(value: Any, key: Any, function: str) -> int:
    """A grade of the ``relevant`` dict: an int, or a float that is a whole number."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < 2.0**63:
            return int(number)
    raise SchemaError(
        "grade is not a whole number",
        function=function,
        column="relevant",
        expected="an integer grade (a float only when a whole number, never truncated)",
        found=f"{value!r} for id {key!r}",
    )


def _score_list(scores: Any, n: int, function: str) -> list[float]:
    """The retrieved ids' scores: one real number each."""
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
        raise validate.fail(function, "scores", "a list of numbers, one per retrieved id", scores)
    values = list(scores)
    if len(values) != n or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        raise validate.fail(function, "scores", f"a list of {n} numbers, one per retrieved id", scores)
    return [float(v) for v in values]
