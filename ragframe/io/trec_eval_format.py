"""trec_eval's measure names, parameters and output layout, for ``ragframe trec``.

trec_eval names a measure by a root and, after the first ``.``, a comma-separated
parameter list: ``-m P.5,10`` prints ``P_5`` and ``P_10``, ``-m iprec_at_recall..25,.5``
prints ``iprec_at_recall_0.25`` and ``iprec_at_recall_0.50``, ``-m utility.2,-1,0,0``
prints ``utility_2,-1,0,0``, ``-m ndcg.1=3,2=9`` prints ``ndcg_1=3,2=9``. This module
parses those names as trec_eval 10.0 does, lists the measures to compute
(:class:`~ragframe.kernels.trec_measures.TrecMeasure`) and prints the results in
trec_eval's layout: ``printf("%-22s\\t%s\\t%6.4f\\n", measure, qid, value)``, counts as
integers, measures in trec_eval's own order (its measure table, not the command-line
order), per-query lines (``-q``) before the ``all`` lines.

Every measure of trec_eval 10.0's ``all_trec`` set is computed, plus ``dcg`` and
``ideal_dcg``, the judge-group measures of ``-R qrels_jg`` (``map_avgjg``, ``P_avgjg``,
``Rprec_mult_avgjg``) and the preference measures of ``-R prefs`` and ``-R qrels_prefs``
(``prefs_*``, :mod:`ragframe.kernels.trec_prefs`). ``yaap`` is known by name and refused
with :class:`MeasureNotImplementedError`; an unknown name or a malformed parameter list is
an :class:`~ragframe.exceptions.UnsupportedMeasureError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import polars as pl

from ragframe.exceptions import RagframeError, UnsupportedMeasureError
from ragframe.kernels.trec_measures import (
    R_MULTIPLES,
    RECALL_POINTS,
    UTILITY_COEFFICIENTS,
    TrecMeasure,
    geometric_logs,
)

__all__ = [
    "MEASURES",
    "SUPPORTED_MEASURES",
    "NICKNAMES",
    "DEFAULT_CUTOFFS",
    "UnsupportedMeasureError",
    "MeasureNotImplementedError",
    "OutputMeasure",
    "parse_measures",
    "output_measures",
    "is_measure_name",
    "summarize",
    "format_trec_eval",
]

_STANDARD_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


class _Kind(NamedTuple):
    """How trec_eval parses a measure's parameters and prints and averages its values.

    ``params``: ``none``, ``long_cut`` (sorted int cutoffs, one value each, ``name_k``),
    ``double_cut`` (sorted float cutoffs, ``name_%3.2f``), ``numbers`` (a float list,
    printed as typed), ``pairs`` (``name=value`` list, printed as typed).
    ``value``: ``float`` (mean), ``count`` (sum, printed as an integer), ``gm`` (geometric
    mean, summary only), ``string`` (per query only), ``runid``, ``num_q``.
    """

    params: str
    value: str
    default: tuple = ()


#: trec_eval 10.0's measure table, in its order (the order of the printed lines).
MEASURES: dict[str, _Kind] = {
    "runid": _Kind("none", "runid"),
    "num_q": _Kind("none", "num_q"),
    "num_ret": _Kind("none", "count"),
    "num_rel": _Kind("none", "count"),
    "num_rel_ret": _Kind("none", "count"),
    "map": _Kind("none", "float"),
    "gm_map": _Kind("none", "gm"),
    "Rprec": _Kind("none", "float"),
    "bpref": _Kind("none", "float"),
    "recip_rank": _Kind("none", "float"),
    "iprec_at_recall": _Kind("double_cut", "float", RECALL_POINTS),
    "P": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "relstring": _Kind("numbers", "string", (10.0,)),
    "recall": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "infAP": _Kind("none", "float"),
    "gm_bpref": _Kind("none", "gm"),
    "Rprec_mult": _Kind("double_cut", "float", R_MULTIPLES),
    "utility": _Kind("numbers", "float", UTILITY_COEFFICIENTS),
    "11pt_avg": _Kind("numbers", "float", RECALL_POINTS),
    "binG": _Kind("none", "float"),
    "G": _Kind("pairs", "float"),
    "dcg": _Kind("pairs", "float"),
    "ideal_dcg": _Kind("pairs", "float"),
    "ndcg": _Kind("pairs", "float"),
    "ndcg_rel": _Kind("pairs", "float"),
    "Rndcg": _Kind("pairs", "float"),
    "ndcg_cut": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "map_cut": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "relative_P": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "success": _Kind("long_cut", "float", (1, 5, 10)),
    "set_P": _Kind("none", "float"),
    "set_relative_P": _Kind("none", "float"),
    "set_recall": _Kind("none", "float"),
    "set_map": _Kind("none", "float"),
    "set_F": _Kind("numbers", "float", (1.0,)),
    "num_nonrel_judged_ret": _Kind("none", "count"),
    # the preference measures (-R prefs, -R qrels_prefs)
    "prefs_num_prefs_poss": _Kind("none", "count"),
    "prefs_num_prefs_ful": _Kind("none", "count"),
    "prefs_num_prefs_ful_ret": _Kind("none", "count"),
    "prefs_simp": _Kind("none", "float"),
    "prefs_pair": _Kind("none", "float"),
    "prefs_avgjg": _Kind("none", "float"),
    "prefs_avgjg_Rnonrel": _Kind("none", "float"),
    "prefs_simp_ret": _Kind("none", "float"),
    "prefs_pair_ret": _Kind("none", "float"),
    "prefs_avgjg_ret": _Kind("none", "float"),
    "prefs_avgjg_Rnonrel_ret": _Kind("none", "float"),
    "prefs_simp_imp": _Kind("none", "float"),
    "prefs_pair_imp": _Kind("none", "float"),
    "prefs_avgjg_imp": _Kind("none", "float"),
    # the judge-group measures (-R qrels_jg): the measure of each judgment group, averaged over the query's groups
    "map_avgjg": _Kind("none", "float"),
    "P_avgjg": _Kind("long_cut", "float", _STANDARD_CUTOFFS),
    "Rprec_mult_avgjg": _Kind("double_cut", "float", R_MULTIPLES),
    "rbp": _Kind("pairs", "float"),
    "rbp_resid": _Kind("pairs", "float"),
    "unj": _Kind("long_cut", "float", (5, 10, 20)),
}
#: Every measure ragframe computes, in trec_eval's order.
SUPPORTED_MEASURES: tuple[str, ...] = tuple(MEASURES)
#: trec_eval's default cutoffs of each cutoff measure.
DEFAULT_CUTOFFS: dict[str, tuple] = {
    name: kind.default for name, kind in MEASURES.items() if kind.params in ("long_cut", "double_cut")
}
#: trec_eval 10.0's nicknames (sets of measures).
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": tuple(
        "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P".split()
    ),
    "set": tuple(
        "runid num_q num_ret num_rel num_rel_ret utility set_P set_recall set_relative_P set_map set_F".split()
    ),
    "all_trec": tuple(
        (
            "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall P relstring "
            "recall unj rbp rbp_resid infAP gm_bpref utility 11pt_avg ndcg relative_P Rprec_mult success map_cut "
            "ndcg_cut ndcg_rel Rndcg binG G set_P set_recall set_relative_P set_map set_F num_nonrel_judged_ret"
        ).split()
    ),
    "qrels_jg": tuple("runid num_q map_avgjg P_avgjg Rprec_mult_avgjg".split()),
    "all_prefs": ("runid", "num_q", *(name for name in MEASURES if name.startswith("prefs_"))),
    "prefs": tuple(
        "runid num_q prefs_num_prefs_poss prefs_num_prefs_ful prefs_num_prefs_ful_ret prefs_simp prefs_pair "
        "prefs_avgjg".split()
    ),
}
#: The measures of each rel_info format (-R): trec_eval refuses the others with that format.
JUDGE_GROUP_MEASURES = frozenset(("map_avgjg", "P_avgjg", "Rprec_mult_avgjg"))
PREFERENCE_MEASURES = frozenset(name for name in MEASURES if name.startswith("prefs_"))
#: -R format -> the measures computed from it (None: every other measure).
FORMAT_MEASURES: dict[str, frozenset[str] | None] = {
    "qrels": None,
    "qrels_jg": JUDGE_GROUP_MEASURES,
    "prefs": PREFERENCE_MEASURES,
    "qrels_prefs": PREFERENCE_MEASURES,
}
# trec_eval 10.0's measures and nicknames of the preference and judge-group formats, and yaap
_NOT_IMPLEMENTED = frozenset(("yaap",))
_UNDERSCORE_CUT = re.compile(r"(P|recall|ndcg_cut|map_cut|relative_P|success|unj|P_avgjg)_(\d+)")
_LONG = re.compile(r"\s*([+-]?\d+)(?:\.\d*)?\s*")  # trec_eval reads cutoffs as longs: "23.4" is 23
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


class MeasureNotImplementedError(RagframeError):
    """A trec_eval measure (or nickname) that ragframe knows but does not compute (``ragframe trec`` exit 3)."""


class OutputMeasure(NamedTuple):
    """One printed measure: its trec_eval name and how it is printed (see :data:`MEASURES`)."""

    name: str
    root: str
    kind: str


def is_measure_name(text: str) -> bool:
    """True when ``text`` is a trec_eval measure or nickname (with or without parameters).

    Examples
    --------
    >>> is_measure_name("ndcg_cut.10"), is_measure_name("P_5"), is_measure_name("prefs_simp"), is_measure_name("x.txt")
    (True, True, True, False)
    """
    root = text.strip().partition(".")[0]
    return root in MEASURES or root in NICKNAMES or root in _NOT_IMPLEMENTED or bool(_UNDERSCORE_CUT.fullmatch(text))


def _known_text() -> str:
    return f"measures: {', '.join(MEASURES)}; nicknames: {', '.join(NICKNAMES)}"


def _long_cutoffs(root: str, text: str) -> set[int]:
    out = set()
    for param in text.split(","):
        match = _LONG.fullmatch(param)
        if match is None or int(match.group(1)) < 1:
            raise UnsupportedMeasureError(
                f"measure {root!r}: cutoff {param!r} is not an integer >= 1 (write e.g. {root}.5,10)"
            )
        out.add(int(match.group(1)))
    return out


def _numbers(root: str, text: str) -> tuple[float, ...]:
    out = []
    for param in text.split(","):
        if _NUMBER.fullmatch(param) is None:
            raise UnsupportedMeasureError(f"measure {root!r}: parameter {param!r} is not a number")
        out.append(float(param))
    return tuple(out)


def _pairs(root: str, text: str) -> tuple[tuple[str, float], ...]:
    out = []
    for param in text.split(","):
        name, eq, value = param.partition("=")
        if not eq or not name or _NUMBER.fullmatch(value) is None:
            raise UnsupportedMeasureError(
                f"measure {root!r}: parameter {param!r} is not 'name=number' (write e.g. {root}.1=3,2=9)"
            )
        out.append((name, float(value)))
    levels = [name for name, _ in out if re.fullmatch(r"[+-]?\d+", name)]
    if any(int(level) < 0 for level in levels):
        raise UnsupportedMeasureError(f"measure {root!r}: a gain map needs relevance levels >= 0, found {text!r}")
    for name, value in out:
        if name == "p" and not 0.0 < value < 1.0:
            raise UnsupportedMeasureError(f"measure {root!r}: persistence p={value} is not between 0 and 1")
    return tuple(out)


def _parse_one(spec: str) -> list[tuple[str, str | None, set[int] | None]]:
    """``(root, parameter text or None, underscore cutoffs or None)`` of one ``-m`` value."""
    text = spec.strip()
    underscore = _UNDERSCORE_CUT.fullmatch(text)
    if underscore:  # ragframe's spelling of one cutoff: P_5 is P.5
        return [(underscore.group(1), None, {int(underscore.group(2))})]
    root, dot, params = text.partition(".")
    if dot and not params:
        raise UnsupportedMeasureError(f"measure {spec!r}: nothing after the '.' (write e.g. {root}.5 or {root})")
    if root in NICKNAMES:
        if dot:
            raise UnsupportedMeasureError(f"nickname {root!r} takes no parameters, found {spec!r}")
        return [(name, None, None) for name in NICKNAMES[root]]
    if root in _NOT_IMPLEMENTED:
        raise MeasureNotImplementedError(
            f"measure {spec!r} is a trec_eval measure that ragframe does not implement; {_known_text()}"
        )
    if root not in MEASURES:
        raise UnsupportedMeasureError(f"measure {spec!r} is not a trec_eval measure; {_known_text()}")
    if dot and MEASURES[root].params == "none":
        raise UnsupportedMeasureError(f"measure {root!r} takes no parameters, found {spec!r}")
    return [(root, params if dot else None, None)]


def parse_measures(specs: Iterable[str] | None) -> list[TrecMeasure]:
    """trec_eval ``-m`` values -> the measures to compute, with parameters and printed names.

    Parameters
    ----------
    specs : list of str or None
        trec_eval spellings: ``"map"``, ``"P.5,10"``, ``"iprec_at_recall..10,.20"``,
        ``"utility.2,-1,0,0"``, ``"ndcg.1=3,2=9"``, ``"rbp.p=0.8"``, ``"relstring.20"``,
        nicknames ``"official"``, ``"set"``, ``"all_trec"``, and ragframe's ``"P_5"``
        (``P.5``). ``None`` or empty selects ``official`` (trec_eval's default). Cutoff
        lists named for one measure are merged (trec_eval would keep the first); other
        parameter lists must agree; a nickname adds a measure with its default
        parameters only when none are named for it.

    Returns
    -------
    list of TrecMeasure
        In trec_eval's output order (its measure table).

    Raises
    ------
    UnsupportedMeasureError
        An unknown name or malformed parameters.
    MeasureNotImplementedError
        A trec_eval measure ragframe does not compute (preference and judge-group measures).

    Examples
    --------
    >>> [m.names for m in parse_measures(["ndcg_cut.10", "map", "P.10,5"])]
    [('map',), ('P_5', 'P_10'), ('ndcg_cut_10',)]
    >>> [m.names for m in parse_measures(["iprec_at_recall..25,.5", "utility.2,-1,0,0"])]
    [('iprec_at_recall_0.25', 'iprec_at_recall_0.50'), ('utility_2,-1,0,0',)]
    """
    cutoffs: dict[str, set] = {}
    texts: dict[str, str] = {}
    chosen: set[str] = set()
    for spec in list(specs or []) or ["official"]:
        for root, text, under in _parse_one(spec):
            chosen.add(root)
            kind = MEASURES[root].params
            if under is not None:
                cutoffs.setdefault(root, set()).update(under)
            elif text is not None and kind == "long_cut":
                cutoffs.setdefault(root, set()).update(_long_cutoffs(root, text))
            elif text is not None and kind == "double_cut":
                cutoffs.setdefault(root, set()).update(_numbers(root, text))
            elif text is not None:
                if root in texts and texts[root] != text:
                    raise UnsupportedMeasureError(
                        f"measure {root!r} is given two parameter lists, {texts[root]!r} and {text!r}"
                    )
                texts[root] = text
    out = []
    for root, kind in MEASURES.items():
        if root not in chosen or root in ("runid", "num_q"):
            continue
        out.append(_measure(root, kind, cutoffs.get(root), texts.get(root)))
    return out


def _measure(root: str, kind: _Kind, cutoffs: set | None, text: str | None) -> TrecMeasure:
    if kind.params == "long_cut":
        ks = tuple(sorted(cutoffs)) if cutoffs else kind.default
        return TrecMeasure(root, ks, tuple(f"{root}_{k}" for k in ks))
    if kind.params == "double_cut":
        values = tuple(sorted(cutoffs)) if cutoffs else kind.default
        names = tuple(f"{root}_{v:3.2f}" for v in values)
        if len(set(names)) != len(names):
            raise UnsupportedMeasureError(f"measure {root!r}: two cutoffs print as the same name: {names}")
        return TrecMeasure(root, values, names)
    name = root if text is None else f"{root}_{text}"
    if kind.params == "numbers":
        values = kind.default if text is None else _numbers(root, text)
        if root == "utility" and len(values) != 4:
            raise UnsupportedMeasureError(f"measure 'utility' takes 4 coefficients, found {text!r}")
        if root == "11pt_avg" and any(not 0.0 <= v <= 1.0 for v in values):
            raise UnsupportedMeasureError(f"measure '11pt_avg': recall points lie in [0, 1], found {text!r}")
        return TrecMeasure(root, values, (name,), placeholder_kept=text is not None)
    if kind.params == "pairs":
        return TrecMeasure(root, () if text is None else _pairs(root, text), (name,), placeholder_kept=text is not None)
    return TrecMeasure(root, (), (root,))


def output_measures(measures: list[TrecMeasure], *, runid: bool = True, num_q: bool = True) -> list[OutputMeasure]:
    """The printed lines of a selection, in order (``runid`` and ``num_q`` when selected).

    Examples
    --------
    >>> [m.name for m in output_measures(parse_measures(["P.5,10", "gm_map"]), runid=False, num_q=False)]
    ['gm_map', 'P_5', 'P_10']
    """
    out = []
    if runid:
        out.append(OutputMeasure("runid", "runid", "runid"))
    if num_q:
        out.append(OutputMeasure("num_q", "num_q", "num_q"))
    for measure in measures:
        out += [OutputMeasure(name, measure.root, MEASURES[measure.root].value) for name in measure.names]
    return out


def selects(specs: Iterable[str] | None, root: str) -> bool:
    """Whether the ``-m`` values select ``runid`` or ``num_q`` (they have no values to compute)."""
    for spec in list(specs or []) or ["official"]:
        text = spec.strip().partition(".")[0]
        if text == root or root in NICKNAMES.get(text, ()):
            return True
    return False


def _sequential_sum(values: np.ndarray) -> float:
    """The sum in query order, added one by one (as trec_eval's accumulation does)."""
    return float(np.add.accumulate(values)[-1]) if values.size else 0.0


def summarize(per_query: pl.DataFrame, printed: list[OutputMeasure]) -> dict[str, float | int]:
    """trec_eval's ``all`` values: means, sums for counts, geometric means for ``gm_*``.

    ``per_query`` holds the evaluated queries in trec_eval's order (by query id).

    Examples
    --------
    >>> pq = pl.DataFrame({"query_id": ["a", "b"], "map": [0.5, 0.0], "gm_map": [0.5, 0.0], "num_rel": [2, 3]})
    >>> printed = output_measures(parse_measures(["map", "gm_map", "num_rel"]), runid=False, num_q=False)
    >>> summarize(pq, printed)
    {'num_rel': 5, 'map': 0.25, 'gm_map': 0.0022360679774997894}
    """
    n = per_query.height
    out: dict[str, float | int] = {}
    for m in printed:
        if m.kind in ("runid", "num_q", "string"):
            continue
        values = per_query.get_column(m.name).to_numpy()
        if m.kind == "count":
            out[m.name] = int(values.sum())
        elif m.kind == "gm":
            logs = geometric_logs(values)
            out[m.name] = math.exp(_sequential_sum(logs) / n) if n else 0.0
        else:
            out[m.name] = _sequential_sum(values.astype(np.float64)) / n if n else 0.0
    return out


def _float_text(values: np.ndarray) -> np.ndarray:
    # C's "%6.4f" (correctly rounded, as trec_eval's printf), vectorised by numpy; NaN as glibc prints 0/0
    # with "%6.4f": "-nan" right-aligned in 6 characters
    text = np.char.mod("%6.4f", values)
    return np.where(np.isnan(values), "  -nan", text)


def _cells(series: pl.Series, kind: str) -> pl.Series:
    if kind == "float":
        return pl.Series(series.name, _float_text(series.cast(pl.Float64).to_numpy()), dtype=pl.String)
    if kind == "string":  # relstring: quoted
        return pl.select(pl.concat_str([pl.lit("'"), pl.lit(series), pl.lit("'")])).to_series().alias(series.name)
    return series.cast(pl.Int64).cast(pl.String)


def format_trec_eval(
    per_query: pl.DataFrame,
    printed: list[OutputMeasure],
    *,
    runid: str = "",
    query_lines: bool = False,
    summary: bool = True,
) -> str:
    """trec_eval's output text for evaluated queries.

    Parameters
    ----------
    per_query : polars.DataFrame
        ``query_id`` and one column per printed name (see :func:`ragframe.run.trec_run.trec_eval_run`),
        the evaluated queries in trec_eval's order.
    printed : list of OutputMeasure
        From :func:`output_measures`.
    runid : str
        Printed for ``runid``.
    query_lines : bool
        trec_eval ``-q``: every query's lines first (``runid``, ``num_q`` and ``gm_*`` are
        summary-only; ``relstring`` is per-query only).
    summary : bool
        Print the ``all`` lines (trec_eval ``-n``: not).

    Returns
    -------
    str
        Lines ``measure<pad to 22>\\tqid\\tvalue``, newline-terminated.

    Examples
    --------
    >>> pq = pl.DataFrame({"query_id": ["q1"], "recip_rank": [0.5], "num_rel": [1]})
    >>> printed = output_measures(parse_measures(["num_q", "recip_rank", "num_rel"]), runid=False)
    >>> for line in format_trec_eval(pq, printed, query_lines=True).splitlines():
    ...     print(line.split("\\t"))
    ['num_rel               ', 'q1', '1']
    ['recip_rank            ', 'q1', '0.5000']
    ['num_q                 ', 'all', '1']
    ['num_rel               ', 'all', '1']
    ['recip_rank            ', 'all', '0.5000']
    """
    text = ""
    per_row = [m for m in printed if m.kind in ("count", "float", "string")]
    if query_lines and per_row and per_query.height:
        qid = pl.col("query_id").cast(pl.String)
        cells = per_query.select(
            qid, *(_cells(per_query.get_column(m.name), m.kind).alias(f"v{i}") for i, m in enumerate(per_row))
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
    if not summary:
        return text
    values = summarize(per_query, printed)
    out = []
    for m in printed:  # the 'all' block: one line per measure
        if m.kind == "runid":
            value = runid
        elif m.kind == "num_q":
            value = str(per_query.height)
        elif m.kind == "string":
            continue
        elif m.kind == "count":
            value = str(values[m.name])
        else:
            value = str(_float_text(np.array([values[m.name]]))[0])
        out.append(f"{m.name:<22}\tall\t{value}\n")
    return text + "".join(out)


def read_prefs(path: str) -> pl.DataFrame:
    """Read a trec_eval preference file (``-R prefs``): ``qid jg jsg docno rel_level`` lines.

    Comment lines (``#`` first) and blank lines are skipped, as in the other TREC files;
    ``rel_level`` is a number (a preference is a higher level within a judgment sub-group).

    Returns
    -------
    polars.DataFrame
        ``query_id, jg, jsg, doc_id`` (String) and ``rel_level`` (Float64), in file order.
    """
    from ragframe.io.trec import _parse, _to_number

    names = ["query_id", "jg", "jsg", "doc_id", "rel_level"]
    df = _parse(path, names)
    return _to_number(df, "rel_level", pl.Float64, path).select(names)


def qrels_as_prefs(qrels: pl.DataFrame) -> pl.DataFrame:
    """A qrels table read as preferences (``-R qrels_prefs``): the iteration field is the judgment group, one sub-group.

    Examples
    --------
    >>> q = pl.DataFrame({"query_id": ["1"], "iteration": ["0"], "doc_id": ["d"], "relevance": [2]})
    >>> qrels_as_prefs(q).row(0)
    ('1', '0', '0', 'd', 2.0)
    """
    return qrels.select(
        "query_id",
        pl.col("iteration").alias("jg"),
        pl.lit("0").alias("jsg"),
        "doc_id",
        pl.col("relevance").cast(pl.Float64).alias("rel_level"),
    )
