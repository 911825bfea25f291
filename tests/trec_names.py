"""trec_eval measure names <-> ragframe column names, for the conformance tests."""

from __future__ import annotations

import re

import polars as pl

_CUT = {"P": "precision_at_{}", "recall": "recall_at_{}", "success": "hit_rate_at_{}", "ndcg_cut": "ndcg_at_{}"}
_FULL = {"ndcg": "ndcg", "recip_rank": "mrr", "map": "average_precision", "Rprec": "r_precision"}
COUNTS = {"num_q", "num_ret", "num_rel", "num_rel_ret"}


def ragframe_name(measure: str) -> tuple[str, int | None] | None:
    """Our column (and cutoff) for a trec_eval measure, or None when ragframe has no such measure."""
    if measure in _FULL:
        return _FULL[measure], None
    if measure in COUNTS:
        return measure, None
    match = re.fullmatch(r"(P|recall|success|ndcg_cut)_(\d+)", measure)
    if match:
        k = int(match.group(2))
        return _CUT[match.group(1)].format(k), k
    return None


def read_expected(path) -> pl.DataFrame:
    """trec_eval output (``measure <TAB> qid <TAB> value``) as a frame of the measures ragframe has."""
    rows = []
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if len(parts) != 3:
            continue
        measure, qid, value = parts
        mapped = ragframe_name(measure)
        if mapped is not None:
            rows.append({"measure": measure, "column": mapped[0], "k": mapped[1], "qid": qid, "value": value})
    return pl.DataFrame(
        rows, schema={"measure": pl.String, "column": pl.String, "k": pl.Int64, "qid": pl.String, "value": pl.String}
    )
