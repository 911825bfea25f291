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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError
from ragframe.kernels.ranking import (
    CUT_MEASURES,
    FULL_MEASURES,
    rank_measures,
)
from ragframe.kernels.trec_measures import (
    R_MULTIPLES,
    RECALL_POINTS,
    UTILITY_COEFFICIENTS,
    TrecMeasure,
    TrecOptions,
)
from ragframe.metrics import registry
from ragframe.metrics.registry import Family, Metric, Requests, register_family, register_metric
from ragframe.metrics.retrieval_inputs import (
    check_err_grades,
    judged_id_dtype,
    judgment_column,
    order_by_scores,
    wide_judgments,
)
from ragframe.schema import (
    check_id_list_column,
    check_same_id_kind,
)

__all__ = [
    "RETRIEVAL_METRICS",
    "TrecKernel",
    "RetrievalOptions",
    "check_ks",
    "check_level",
    "check_persistence",
    "chosen_requests",
    "classic_requests",
    "family_check",
    "family_score",
    "trec_options",
]

Frame = TypeVar("Frame")

#: The ranking measures of :func:`ragframe.kernels.ranking.compute_measures` (the default set).
_CLASSIC: tuple[str, ...] = CUT_MEASURES + FULL_MEASURES


# ----------------------------------------------------------------------------- parameters


def check_ks(k: int | Iterable[int]) -> list[int]:
    """One cutoff or a non-empty list of them, each an int >= 1 (sorted, repeats dropped)."""
    return validate.k_list(k, "k")


def chosen_requests(metrics: Any, ks: Sequence[int]) -> list[tuple[Metric, int | None]]:
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
        raise validate.fail("metrics", f"a name or a non-empty list of names from {allowed}", metrics)
    pairs: list[tuple[Metric, int | None]] = []
    for name in names:
        if not isinstance(name, str):
            raise validate.fail("metrics", "metric names (str)", name)
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
                f"unknown ranking metric {name!r}; choose from {allowed}, an output name of a "
                "cutoff metric ('ndcg_at_10') or 'retrieval' (the default set)"
            )
    position = {m.name: i for i, m in enumerate(family)}
    unique = {(m.name, k): m for m, k in pairs}

    def key(item: tuple[str, int | None]) -> tuple[int, int, int]:
        return (1, 0, position[item[0]]) if item[1] is None else (0, item[1], position[item[0]])

    return [(unique[item], item[1]) for item in sorted(unique, key=key)]


def check_level(relevance_level: int) -> int:
    """trec_eval's ``-l``: an int >= 0 (a judged document is relevant when its grade >= the level).

    trec_eval takes any level, but below 0 its measures disagree with its own counts: a
    retrieved document missing from the qrels has the internal grade -1, so at ``-l -1`` P,
    recall, MAP and MRR count it as relevant while R and num_rel_ret do not (recall can
    exceed 1). ragframe refuses those levels; at 0 and above it follows trec_eval exactly.
    """
    level = validate.integer(relevance_level, "relevance_level")
    if level < 0:
        raise validate.fail(
            "relevance_level",
            "an int >= 0 (below 0 trec_eval counts unjudged documents as relevant in some measures and not in "
            "others; at 0 every judged document with grade >= 0 is relevant)",
            relevance_level,
        )
    return level


# ----------------------------------------------------------------------------- ordering


# ----------------------------------------------------------------------------- wide frames


# ----------------------------------------------------------------------------- the retrieval family


def family_check(options: dict[str, Any]) -> dict[str, Any]:
    names = [spec.name for spec in registry.declared_options(RetrievalOptions)]
    checked = registry.check_options(RetrievalOptions, {name: options[name] for name in names})
    return {**checked, "contexts": options["contexts"]}


def _column_option(value: Any, name: str) -> str | None:
    return None if value is None else validate.column_name(value, name)


@dataclass(frozen=True)
class RetrievalOptions:
    """The retrieval family's options: each one's default, check and documentation, declared once."""

    k: tuple[int, ...] = registry.option(
        (1, 5, 10),
        "Cutoffs of the ``*_at_k`` metrics: an int or a list of ints >= 1.",
        check=lambda value, name: check_ks(value),
        invalid=(0, (5, 0), ()),
    )
    relevance_level: int = registry.option(
        1,
        "Minimum grade of a relevant document (trec_eval ``-l``), an int >= 0.",
        check=lambda value, name: check_level(value),
        invalid=(-1,),
    )
    match: str = registry.option(
        "id",
        "``'id'`` compares ids; ``'contains'`` matches retrieved chunk texts against gold document texts "
        "(:mod:`ragframe.kernels.matching`).",
        check=lambda value, name: validate.choice(value, name, ["id", "contains"]),
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
        check=lambda value, name: check_persistence(value),
        invalid=(0.0, 1.0),
    )
    err_max_grade: int = registry.option(
        4,
        "``err_at_k``'s highest grade (gdeval's 4); a higher grade is an error.",
        check=validate.positive_int,
        invalid=(0,),
    )


def check_persistence(value: Any) -> float:
    return validate.number(value, "rbp_persistence", minimum=0.0, maximum=1.0, inclusive=False)


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
    )
    if _needs_grades(requests) and not graded:  # named first: a check for missing columns reports it
        columns["relevance"] = options["relevance"] or "relevance"
    columns["relevance" if graded else "relevant_ids"] = judgments
    return columns


def family_score(view: pl.DataFrame, requests: Sequence[Any], options: dict[str, Any]) -> pl.DataFrame:
    columns = _family_columns(requests, options, view.columns)
    binary_only = options["match"] == "contains" or options["relevance"] is None
    if _needs_grades(requests) and (binary_only or columns["relevance"] not in view.columns):
        graded = [metric.name for metric, _ in requests if "relevance" in metric.inputs]
        raise InvalidParameterError(
            f"{graded} count judged non-relevant documents and need graded judgments "
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
    )


register_family(
    Family(
        name="retrieval",
        score=family_score,
        options=RetrievalOptions,
        check=family_check,
        columns=_family_columns,
        function="score_retrieval",
        reads=("contexts",),  # match="contains" finds the relevant ids in the contexts column
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


def trec_options(requests: Requests, options: Mapping[str, Any]) -> TrecOptions | None:
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


def classic_requests(requests: Requests) -> tuple[list[int], list[str]]:
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


# ----------------------------------------------------------------------------- long (TREC) tables


# ----------------------------------------------------------------------------- one sample


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
) -> pl.DataFrame:
    n = view.height
    if contains:
        from ragframe.kernels.matching import contains_to_ids

        retrieved, relevant = contains_to_ids(view, retrieved_col, judgment_col)
    else:
        retrieved = check_id_list_column(view, retrieved_col)
        check_same_id_kind(
            (repr(retrieved_col), view.schema[retrieved_col].inner),  # type: ignore[union-attr]
            (repr(judgment_col), judged_id_dtype(view.schema[judgment_col], graded)),
            column=judgment_col,
        )
        relevant = None
    lengths = retrieved.list.len().fill_null(0).to_numpy().astype(np.int64)
    run_q = np.repeat(np.arange(n, dtype=np.int64), lengths)
    run_doc = retrieved.explode(empty_as_null=False, keep_nulls=False).rename("doc")

    if score_col is not None:
        run_q, run_doc = order_by_scores(view, score_col, retrieved, run_q, run_doc, lengths)

    judgments = wide_judgments(view, judgment_col, graded, relevant)
    trec = trec_options(requests, options)
    check_err_grades(trec, judgments.grade, lambda at: int(judgments.q[at]), judgment_col)
    ks, metrics = classic_requests(requests)
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
