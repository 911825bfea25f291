"""trec_eval measure names and output layout, for ``ragframe trec``.

trec_eval names a measure by a root (``P``, ``ndcg_cut``, ``map``) and, for the
cutoff measures, a comma-separated parameter list (``-m P.5,10`` prints ``P_5``
and ``P_10``). This module maps those names to the columns of
:func:`ragframe.metrics.retrieval.evaluate_run` and prints the results in
trec_eval's layout: ``printf("%-22s\\t%s\\t%6.4f\\n", measure, qid, value)``,
counts as integers, measures in trec_eval's own order (its measure table, not
the command-line order), per-query lines (``-q``) before the ``all`` lines.

Supported trec_eval measures (the ones ragframe computes identically):

============ ============================ ==================================
trec_eval    ragframe column              default cutoffs
============ ============================ ==================================
runid        (tag of the run's last line) -
num_q        ``num_q`` (run_summary)      -
num_ret      ``num_ret``                  -
num_rel      ``num_rel``                  -
num_rel_ret  ``num_rel_ret``              -
map          ``average_precision``        -
Rprec        ``r_precision``              -
recip_rank   ``mrr``                      -
P            ``precision_at_{k}``         5,10,15,20,30,100,200,500,1000
recall       ``recall_at_{k}``            5,10,15,20,30,100,200,500,1000
ndcg         ``ndcg``                     -
ndcg_cut     ``ndcg_at_{k}``              5,10,15,20,30,100,200,500,1000
success      ``hit_rate_at_{k}``          1,5,10
============ ============================ ==================================

Nicknames ``official`` (trec_eval's default) and ``all_trec`` select the
supported subset of trec_eval's sets. Every other trec_eval measure (``bpref``,
``gm_map``, ``iprec_at_recall``, ``map_cut``, ``ndcg`` with a gain map, ...)
is rejected with :class:`UnsupportedMeasureError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import polars as pl

from ragframe.exceptions import UnsupportedMeasureError

__all__ = [
    "SUPPORTED_MEASURES",
    "NICKNAMES",
    "DEFAULT_CUTOFFS",
    "UnsupportedMeasureError",
    "OutputMeasure",
    "parse_measures",
    "output_measures",
    "evaluate_run_options",
    "ragframe_column",
    "format_trec_eval",
]

_STANDARD_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

#: Cutoff measures: trec_eval root -> ragframe column template.
_CUT_COLUMNS: dict[str, str] = {
    "P": "precision_at_{}",
    "recall": "recall_at_{}",
    "ndcg_cut": "ndcg_at_{}",
    "success": "hit_rate_at_{}",
}
#: trec_eval's default cutoffs of each cutoff measure.
DEFAULT_CUTOFFS: dict[str, tuple[int, ...]] = {
    "P": _STANDARD_CUTOFFS,
    "recall": _STANDARD_CUTOFFS,
    "ndcg_cut": _STANDARD_CUTOFFS,
    "success": (1, 5, 10),
}
#: Measures without parameters: trec_eval name -> ragframe column.
_SCALAR_COLUMNS: dict[str, str] = {
    "num_q": "num_q",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "map": "average_precision",
    "Rprec": "r_precision",
    "recip_rank": "mrr",
    "ndcg": "ndcg",
}
_COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret")

#: Supported trec_eval measure roots, in trec_eval's output order (its measure table).
SUPPORTED_MEASURES: tuple[str, ...] = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "recip_rank",
    "P",
    "recall",
    "ndcg",
    "ndcg_cut",
    "success",
)
#: trec_eval nicknames, restricted to the supported measures.
NICKNAMES: dict[str, tuple[str, ...]] = {
    # trec_eval: runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "P"),
    "all_trec": SUPPORTED_MEASURES,
}
# trec_eval 10.0's other measure and nickname names: known, so the error can say "not implemented"
_UNSUPPORTED_TREC = frozenset(
    "gm_map bpref iprec_at_recall relstring infAP gm_bpref Rprec_mult utility 11pt_avg binG G dcg ideal_dcg "
    "ndcg_rel Rndcg map_cut relative_P set_P set_relative_P set_recall set_map set_F num_nonrel_judged_ret "
    "prefs_num_prefs_poss prefs_num_prefs_ful prefs_num_prefs_ful_ret prefs_simp prefs_pair prefs_avgjg "
    "prefs_avgjg_Rnonrel prefs_simp_ret prefs_pair_ret prefs_avgjg_ret prefs_avgjg_Rnonrel_ret prefs_simp_imp "
    "prefs_pair_imp prefs_avgjg_imp map_avgjg P_avgjg Rprec_mult_avgjg yaap rbp rbp_resid unj ndcg_p "
    "set all_prefs prefs qrels_jg".split()
)
_UNDERSCORE_CUT = re.compile(r"(P|recall|ndcg_cut|success)_(\d+)")
_CUTOFF = re.compile(r"(\d+)(?:\.\d*)?")  # trec_eval reads cutoffs with atol: "23.4" is 23


class OutputMeasure(NamedTuple):
    """One printed measure: trec_eval name, ragframe column, and kind.

    ``kind`` is ``"runid"``, ``"num_q"`` (summary only), ``"count"`` (integer)
    or ``"float"`` (printed with 4 decimals).
    """

    name: str
    column: str
    kind: str


def _supported_text() -> str:
    listed = [f"{m}[.k,...]" if m in _CUT_COLUMNS else m for m in SUPPORTED_MEASURES]
    return f"supported: {', '.join(listed)}; nicknames: {', '.join(NICKNAMES)}"


def _cutoffs(root: str, params: str) -> set[int]:
    out = set()
    for param in params.split(","):
        match = _CUTOFF.fullmatch(param.strip())
        if match is None or int(match.group(1)) < 1:
            raise UnsupportedMeasureError(
                f"measure {root!r}: cutoff {param!r} is not an integer >= 1 (write e.g. {root}.5,10)"
            )
        out.add(int(match.group(1)))
    return out


def _parse_one(spec: str) -> dict[str, set[int] | None]:
    text = spec.strip()
    if text in NICKNAMES:
        return dict.fromkeys(NICKNAMES[text])
    underscore = _UNDERSCORE_CUT.fullmatch(text)
    if underscore:
        return {underscore.group(1): _cutoffs(underscore.group(1), underscore.group(2))}
    root, dot, params = text.partition(".")
    if root in _CUT_COLUMNS:
        return {root: _cutoffs(root, params) if dot else None}
    if root in SUPPORTED_MEASURES:
        if dot:
            detail = " (ndcg with a custom gain map is not supported)" if root == "ndcg" else ""
            raise UnsupportedMeasureError(f"measure {root!r} takes no parameters, found {spec!r}{detail}")
        return {root: None}
    if root in NICKNAMES and dot:
        raise UnsupportedMeasureError(f"nickname {root!r} takes no parameters, found {spec!r}")
    what = "is not implemented by ragframe" if root in _UNSUPPORTED_TREC else "is not a trec_eval measure"
    raise UnsupportedMeasureError(f"measure {spec!r} {what}; {_supported_text()}")


def parse_measures(specs: Iterable[str] | None) -> dict[str, tuple[int, ...] | None]:
    """trec_eval ``-m`` values -> selected measure roots and their cutoffs.

    Parameters
    ----------
    specs : list of str or None
        trec_eval spellings: ``"map"``, ``"P"``, ``"P.5,10"``, ``"P_5"``,
        ``"ndcg_cut.10"``, ``"all_trec"``, ``"official"``. ``None`` or empty
        selects ``official`` (trec_eval's default set, as far as supported).
        Cutoffs named for a measure replace its default cutoffs; cutoffs named
        in several values are merged; a nickname adds the measure with its
        default cutoffs only when no cutoffs are named for it.

    Returns
    -------
    dict
        Measure root -> sorted cutoffs (``None`` for measures without cutoffs),
        in trec_eval's output order.

    Raises
    ------
    UnsupportedMeasureError
        For a measure ragframe does not implement, an unknown name, or bad
        parameters; the message lists the supported measures.

    Examples
    --------
    >>> parse_measures(["ndcg_cut.10", "map", "P.10,5"])
    {'map': None, 'P': (5, 10), 'ndcg_cut': (10,)}
    >>> parse_measures(["P_5", "success"])
    {'P': (5,), 'success': (1, 5, 10)}
    """
    chosen: dict[str, set[int] | None] = {}
    for spec in list(specs or []) or ["official"]:
        for root, cutoffs in _parse_one(spec).items():
            if cutoffs is None:
                chosen.setdefault(root, None)
            else:
                chosen[root] = (chosen.get(root) or set()) | cutoffs
    out: dict[str, tuple[int, ...] | None] = {}
    for root in SUPPORTED_MEASURES:
        if root in chosen:
            cutoffs = chosen[root]
            if root in _CUT_COLUMNS:
                out[root] = tuple(sorted(cutoffs)) if cutoffs else DEFAULT_CUTOFFS[root]
            else:
                out[root] = None
    return out


def ragframe_column(measure: str) -> tuple[str, int | None] | None:
    """The ragframe column (and cutoff) of one printed trec_eval measure name, or None.

    Examples
    --------
    >>> ragframe_column("ndcg_cut_10"), ragframe_column("recip_rank"), ragframe_column("bpref")
    (('ndcg_at_10', 10), ('mrr', None), None)
    """
    if measure in _SCALAR_COLUMNS:
        return _SCALAR_COLUMNS[measure], None
    match = _UNDERSCORE_CUT.fullmatch(measure)
    if match:
        k = int(match.group(2))
        return _CUT_COLUMNS[match.group(1)].format(k), k
    return None


def output_measures(measures: dict[str, tuple[int, ...] | None]) -> list[OutputMeasure]:
    """The printed lines of a selection from :func:`parse_measures`, in order.

    Examples
    --------
    >>> [m.name for m in output_measures(parse_measures(["P.5,10", "num_q"]))]
    ['num_q', 'P_5', 'P_10']
    """
    out = []
    for root, cutoffs in measures.items():
        if root == "runid":
            out.append(OutputMeasure("runid", "", "runid"))
        elif root in _CUT_COLUMNS:
            out += [OutputMeasure(f"{root}_{k}", _CUT_COLUMNS[root].format(k), "float") for k in cutoffs or ()]
        else:
            kind = "num_q" if root == "num_q" else "count" if root in _COUNTS else "float"
            out.append(OutputMeasure(root, _SCALAR_COLUMNS[root], kind))
    return out


def evaluate_run_options(measures: dict[str, tuple[int, ...] | None]) -> dict[str, list]:
    """``k`` and ``metrics`` for :func:`~ragframe.metrics.retrieval.evaluate_run` covering a selection.

    Examples
    --------
    >>> evaluate_run_options(parse_measures(["P.10", "ndcg_cut.5", "map"]))
    {'k': [5, 10], 'metrics': ['average_precision', 'precision_at_k', 'ndcg_at_k']}
    """
    ks: set[int] = set()
    metrics: list[str] = []
    for root, cutoffs in measures.items():
        if root in _CUT_COLUMNS:
            ks.update(cutoffs or ())
            metrics.append(_CUT_COLUMNS[root].replace("{}", "k"))
        elif root in _SCALAR_COLUMNS and root not in _COUNTS:
            metrics.append(_SCALAR_COLUMNS[root])
    # evaluate_run needs one measure and one cutoff even when only counts are printed
    return {"k": sorted(ks) or [1], "metrics": metrics or ["mrr"]}


def _values(series: pl.Series, kind: str) -> pl.Series:
    if kind == "float":
        # C-style "%6.4f" (correctly rounded, as trec_eval's printf), vectorised by numpy
        text = np.char.mod("%6.4f", series.cast(pl.Float64).to_numpy())
        return pl.Series(series.name, text, dtype=pl.String)
    return series.cast(pl.Int64).cast(pl.String)


def format_trec_eval(
    per_query: pl.DataFrame,
    summary: pl.DataFrame,
    measures: dict[str, tuple[int, ...] | None],
    *,
    runid: str = "",
    query_lines: bool = False,
) -> str:
    """trec_eval's output text for evaluated queries and their summary.

    Parameters
    ----------
    per_query : polars.DataFrame
        :func:`~ragframe.metrics.retrieval.evaluate_run` output restricted to the
        queries trec_eval evaluates (those with judgments), sorted by ``query_id``.
    summary : polars.DataFrame
        :func:`~ragframe.metrics.retrieval.run_summary` of ``per_query`` (the ``all`` line).
    measures : dict
        A selection from :func:`parse_measures`.
    runid : str
        Printed for ``runid`` (trec_eval prints the tag of the run's last line).
    query_lines : bool
        trec_eval ``-q``: print every query's lines before the ``all`` lines
        (``runid`` and ``num_q`` are summary-only, as in trec_eval).

    Returns
    -------
    str
        Lines ``measure<pad to 22>\\tqid\\tvalue``, newline-terminated.

    Examples
    --------
    >>> from ragframe.metrics.retrieval import evaluate_run, run_summary
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]})
    >>> measures = parse_measures(["num_q", "recip_rank", "P.1"])
    >>> per_query = evaluate_run(run, qrels, **evaluate_run_options(measures))
    >>> text = format_trec_eval(per_query, run_summary(per_query), measures, query_lines=True)
    >>> for line in text.splitlines():
    ...     print(line.split("\\t"))
    ['recip_rank            ', 'q1', '0.5000']
    ['P_1                   ', 'q1', '0.0000']
    ['num_q                 ', 'all', '1']
    ['recip_rank            ', 'all', '0.5000']
    ['P_1                   ', 'all', '0.0000']
    """
    printed = output_measures(measures)
    text = ""
    per_row = [m for m in printed if m.kind in ("count", "float")]
    if query_lines and per_row and per_query.height:
        qid = pl.col("query_id").cast(pl.String)
        cells = per_query.select(
            qid, *(_values(per_query.get_column(m.column), m.kind).alias(f"v{i}") for i, m in enumerate(per_row))
        )
        lines = cells.select(
            pl.concat_str(
                [
                    pl.concat_str([pl.lit(f"{m.name:<22}\t"), qid, pl.lit("\t"), pl.col(f"v{i}")])
                    for i, m in enumerate(per_row)
                ],
                separator="\n",
            )
        ).to_series()
        text = "\n".join(lines.to_list()) + "\n"
    out = []
    for m in printed:  # the 'all' block: one line per measure
        if m.kind == "runid":
            value = runid
        else:
            value = _values(summary.get_column(m.column), "count" if m.kind == "num_q" else m.kind).item()
        out.append(f"{m.name:<22}\tall\t{value}\n")
    return text + "".join(out)
