"""The ``ragchecker`` family: RAGChecker's 11 claim-level diagnostics (Ru et al., NeurIPS 2024) as columnar kernels.

RAGChecker splits the answer (``response``) and the reference (``gt_answer``) into claims and
checks each claim for entailment: answer claims against the reference (``answer2response``,
one verdict per answer claim), reference claims against the answer (``response2answer``, one
per reference claim), and every claim of either side against every retrieved passage
(``retrieved2response``, ``retrieved2answer``: matrices indexed [claim][passage]). Verdicts are
``Entailment``, ``Neutral`` or ``Contradiction``; only ``Entailment`` counts. This family reads
those columns, named as RAGChecker names its fields (rename them by keyword:
``answer2response="a2r"``), and computes the 11 metrics over the whole column at once: every
verdict is one array entry, every per-row quantity a segment count.

The values equal RAGChecker 0.1.9's ``ragchecker.computation`` row by row, its empty rules
included (a row without answer claims, reference claims or passages scores 0 where RAGChecker
scores 0); a null input list gives a null score. Formulas and directions: docs/claims.md.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"answer2response": [["Entailment", "Neutral"]], "response2answer": [["Entailment"]]})
>>> rf.evaluate(df, ["ragchecker_precision", "ragchecker_recall", "ragchecker_f1"]).row(0)[2:5]
(0.5, 1.0, 0.6666666666666666)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.claims import LabelList, LabelMatrix, label_list, label_matrix
from ragframe.metrics.registry import Family, Metric, Requests, check_options, option, register_family, register_metric
from ragframe.metrics.text_engine import Signals

__all__ = ["RAGCHECKER_METRICS", "VERDICTS", "RagcheckerOptions"]

#: RAGChecker's entailment verdicts; only the first counts as support.
VERDICTS: tuple[str, ...] = ("Entailment", "Neutral", "Contradiction")
#: The four verdict columns, as RAGChecker names its fields.
VERDICT_COLUMNS: tuple[str, ...] = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer")
_MATRICES = ("retrieved2response", "retrieved2answer")


@dataclass(frozen=True)
class RagcheckerOptions:
    """The ragchecker family's options: the columns it reads."""

    answer2response: str = option(
        "answer2response",
        "Column of the reference's verdict on each answer claim (list of ``Entailment``, ``Neutral``, "
        "``Contradiction``).",
        check=validate.column_name,
    )
    response2answer: str = option(
        "response2answer",
        "Column of the answer's verdict on each reference claim (list of verdicts).",
        check=validate.column_name,
    )
    retrieved2response: str = option(
        "retrieved2response",
        "Column of each passage's verdict on each answer claim (list of lists, [claim][passage]).",
        check=validate.column_name,
    )
    retrieved2answer: str = option(
        "retrieved2answer",
        "Column of each passage's verdict on each reference claim (list of lists, [claim][passage]).",
        check=validate.column_name,
    )
    response_claims: str = option(
        "response_claims",
        "Column of the answer's claims (list of str, or of [subject, relation, object]); read with ``explain=True``.",
        check=validate.column_name,
    )
    gt_answer_claims: str = option(
        "gt_answer_claims",
        "Column of the reference's claims (as ``response_claims``); read with ``explain=True``.",
        check=validate.column_name,
    )


# ----------------------------------------------------------------------------- the kernels


def _share(count: np.ndarray, total: np.ndarray, when: np.ndarray) -> np.ndarray:
    """count / total where ``when`` (RAGChecker's condition), else 0."""
    out = np.zeros(count.size, np.float64)
    np.divide(count, total, out=out, where=when & (total > 0))
    return out


class _Verdicts:
    """The verdict columns of one batch, flattened once and shared by the metrics that read them."""

    def __init__(self, view: pl.DataFrame, columns: Mapping[str, str]) -> None:
        self.n = view.height
        self.columns = columns
        self._view = view
        self._parsed: dict[str, LabelList | LabelMatrix] = {}

    def get(self, role: str) -> Any:
        if role not in self._parsed:
            series, column = self._view.get_column(self.columns[role]), self.columns[role]
            read = label_matrix if role in _MATRICES else label_list
            self._parsed[role] = read(series, column, VERDICTS, what="verdict")
        return self._parsed[role]

    def claims(self, role: str) -> np.ndarray:
        parsed = self.get(role)
        return parsed.claims if isinstance(parsed, LabelMatrix) else parsed.lengths

    def same_claims(self, first: str, second: str) -> None:
        """The two columns hold one verdict per claim of the same side: equal claim counts in every row."""
        a, b = self.get(first), self.get(second)
        both = ~(a.null | b.null)
        bad = np.flatnonzero(both & (self.claims(first) != self.claims(second)))
        if bad.size:
            row = int(bad[0])
            raise SchemaError(
                f"{first} and {second} disagree on the number of claims",
                column=self.columns[second],
                row=row,
                expected=f"{int(self.claims(first)[row])} claims (as {first})",
                found=f"{int(self.claims(second)[row])}",
            )

    def same_passages(self) -> None:
        """Both matrices judge the same passages where both have claims."""
        a, b = self.get("retrieved2response"), self.get("retrieved2answer")
        bad = np.flatnonzero((a.claims > 0) & (b.claims > 0) & (a.passages != b.passages))
        if bad.size:
            row = int(bad[0])
            raise SchemaError(
                "retrieved2response and retrieved2answer disagree on the number of passages",
                column=self.columns["retrieved2answer"],
                row=row,
                expected=f"{int(a.passages[row])} passages (as retrieved2response)",
                found=f"{int(b.passages[row])}",
            )

    def null(self, roles: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n, bool)
        for role in roles:
            out |= self.get(role).null
        return out


def _entailed(parsed: LabelList | LabelMatrix) -> np.ndarray:
    return parsed.codes == 0


def _precision(v: _Verdicts) -> np.ndarray:
    a2r = v.get("answer2response")
    return _share(a2r.count(_entailed(a2r)), a2r.lengths, a2r.lengths > 0)


def _recall(v: _Verdicts) -> np.ndarray:
    r2a = v.get("response2answer")
    return _share(r2a.count(_entailed(r2a)), r2a.lengths, r2a.lengths > 0)


def _f1(v: _Verdicts) -> np.ndarray:
    p, r = _precision(v), _recall(v)
    out = np.zeros(v.n, np.float64)
    both = (p > 0) & (r > 0)
    np.divide(2 * p * r, p + r, out=out, where=both)
    return out


def _claim_recall(v: _Verdicts) -> np.ndarray:
    m = v.get("retrieved2answer")
    recalled = m.claim_any(_entailed(m))
    count = np.bincount(m.claim_row, weights=recalled.astype(np.float64), minlength=v.n)[: v.n]
    return _share(count, m.claims, m.passages > 0)


def _context_precision(v: _Verdicts) -> np.ndarray:
    m = v.get("retrieved2answer")
    useful = m.passage_any(_entailed(m))
    passage_row = np.repeat(np.arange(v.n, dtype=np.int64), m.passages)
    count = np.bincount(passage_row, weights=useful.astype(np.float64), minlength=v.n)[: v.n]
    return _share(count, m.passages, m.claims > 0)


def _utilization_masks(v: _Verdicts) -> tuple[LabelMatrix, np.ndarray, np.ndarray]:
    """Per reference claim (of retrieved2answer): some passage entails it; and the answer entails it too."""
    v.same_claims("response2answer", "retrieved2answer")
    m, r2a = v.get("retrieved2answer"), v.get("response2answer")
    recalled = m.claim_any(_entailed(m))
    # claims are numbered in row order in both columns; a row null in one of them is null in the result
    used = np.zeros(recalled.size, bool)
    aligned = ~r2a.null[m.claim_row]
    entailed = _entailed(r2a)
    keep = ~m.null[r2a.row]
    used[aligned] = recalled[aligned] & entailed[keep]
    return m, recalled, used


def _context_utilization(v: _Verdicts) -> np.ndarray:
    m, recalled, used = _utilization_masks(v)
    n_recalled = np.bincount(m.claim_row, weights=recalled.astype(np.float64), minlength=v.n)[: v.n]
    n_used = np.bincount(m.claim_row, weights=used.astype(np.float64), minlength=v.n)[: v.n]
    return _share(n_used, n_recalled, (m.claims > 0) & (m.passages > 0))


def _response_claims(v: _Verdicts) -> tuple[np.ndarray, np.ndarray]:
    """Per answer claim: the reference entails it, some passage entails it (a row null in either: False)."""
    v.same_claims("answer2response", "retrieved2response")
    a2r, m = v.get("answer2response"), v.get("retrieved2response")
    faithful = np.zeros(a2r.codes.size, bool)
    keep_a = ~m.null[a2r.row]
    keep_m = ~a2r.null[m.claim_row]
    faithful[keep_a] = m.claim_any(_entailed(m))[keep_m]
    return _entailed(a2r), faithful


def _noise_masks(v: _Verdicts) -> tuple[LabelList, np.ndarray, np.ndarray, np.ndarray]:
    """Per answer claim: wrong and entailed by a relevant passage; wrong and entailed only by irrelevant ones."""
    v.same_claims("answer2response", "retrieved2response")
    v.same_passages()
    a2r, resp, ans = v.get("answer2response"), v.get("retrieved2response"), v.get("retrieved2answer")
    relevant = ans.passage_any(_entailed(ans))  # per (row, passage) of retrieved2answer
    offsets = ans.passage_offsets()
    has = (ans.claims > 0)[resp.row]  # cells of rows where the reference side says which passages are relevant
    index = np.where(has, offsets[resp.row] + resp.passage, 0)
    cell_relevant = np.zeros(resp.codes.size, bool)
    cell_relevant[has] = relevant[index[has]]
    entailed = _entailed(resp)
    relevant_faithful = resp.claim_any(entailed & cell_relevant)
    irrelevant_faithful = resp.claim_any(entailed & ~cell_relevant) & ~relevant_faithful
    keep_a, keep_m = ~resp.null[a2r.row], ~a2r.null[resp.claim_row]
    incorrect = ~_entailed(a2r)
    rel, irr = np.zeros(a2r.codes.size, bool), np.zeros(a2r.codes.size, bool)
    rel[keep_a] = relevant_faithful[keep_m]
    irr[keep_a] = irrelevant_faithful[keep_m]
    when = (a2r.lengths > 0) & (resp.passages > 0) & (ans.claims > 0)
    return a2r, rel & incorrect & when[a2r.row], irr & incorrect & when[a2r.row], when


def _noise_sensitivity(v: _Verdicts) -> tuple[np.ndarray, np.ndarray]:
    a2r, relevant, irrelevant, when = _noise_masks(v)
    return _share(a2r.count(relevant), a2r.lengths, when), _share(a2r.count(irrelevant), a2r.lengths, when)


def _unfaithfulness(v: _Verdicts) -> tuple[np.ndarray, np.ndarray]:
    a2r, m = v.get("answer2response"), v.get("retrieved2response")
    correct, faithful = _response_claims(v)
    when = (a2r.lengths > 0) & (m.passages > 0)
    unfaithful = ~faithful
    return (
        _share(a2r.count(unfaithful & ~correct), a2r.lengths, when),
        _share(a2r.count(unfaithful & correct), a2r.lengths, when),
    )


def _faithfulness(v: _Verdicts) -> np.ndarray:
    m = v.get("retrieved2response")
    faithful = m.claim_any(_entailed(m))
    count = np.bincount(m.claim_row, weights=faithful.astype(np.float64), minlength=v.n)[: v.n]
    return _share(count, m.claims, m.passages > 0)


@dataclass(frozen=True)
class RagcheckerKernel:
    """One metric's computation: ``compute(verdicts) -> per-row values`` (index ``part`` of a shared pair)."""

    compute: Any
    part: int | None = None

    def __call__(self, verdicts: _Verdicts) -> np.ndarray:
        values = self.compute(verdicts)
        return values if self.part is None else values[self.part]


#: name -> (RAGChecker group, the verdict columns it reads, lower is better, kernel, description)
_METRICS: dict[str, tuple[str, tuple[str, ...], bool, RagcheckerKernel, str]] = {
    "precision": ("overall", ("answer2response",), False, RagcheckerKernel(_precision),
                  "Share of the answer's claims the reference entails (RAGChecker overall precision)."),
    "recall": ("overall", ("response2answer",), False, RagcheckerKernel(_recall),
               "Share of the reference's claims the answer entails (RAGChecker overall recall)."),
    "f1": ("overall", ("answer2response", "response2answer"), False, RagcheckerKernel(_f1),
           "Harmonic mean of ragchecker_precision and ragchecker_recall (RAGChecker overall F1)."),
    "claim_recall": ("retriever", ("retrieved2answer",), False, RagcheckerKernel(_claim_recall),
                     "Share of the reference's claims some retrieved passage entails (retriever claim recall)."),
    "context_precision": ("retriever", ("retrieved2answer",), False, RagcheckerKernel(_context_precision),
                          "Share of the retrieved passages that entail some reference claim (retriever)."),
    "context_utilization": ("generator", ("retrieved2answer", "response2answer"), False,
                            RagcheckerKernel(_context_utilization),
                            "Of the reference claims the passages hold, the share the answer states (generator)."),
    "noise_sensitivity_in_relevant": ("generator", ("retrieved2response", "answer2response", "retrieved2answer"),
                                      True, RagcheckerKernel(_noise_sensitivity, 0),
                                      "Share of answer claims that are wrong yet entailed by a relevant passage."),
    "noise_sensitivity_in_irrelevant": ("generator", ("retrieved2response", "answer2response", "retrieved2answer"),
                                        True, RagcheckerKernel(_noise_sensitivity, 1),
                                        "Share of answer claims that are wrong and entailed only by irrelevant "
                                        "passages."),
    "hallucination": ("generator", ("retrieved2response", "answer2response"), True,
                      RagcheckerKernel(_unfaithfulness, 0),
                      "Share of answer claims that are wrong and in no passage (generator hallucination)."),
    "self_knowledge": ("generator", ("retrieved2response", "answer2response"), True,
                       RagcheckerKernel(_unfaithfulness, 1),
                       "Share of answer claims that are right but in no passage (from the model's own knowledge)."),
    "faithfulness": ("generator", ("retrieved2response",), False, RagcheckerKernel(_faithfulness),
                     "Share of the answer's claims some retrieved passage entails (generator faithfulness)."),
}  # fmt: skip

#: The 11 metrics, in RAGChecker's order (overall, retriever, generator).
RAGCHECKER_METRICS: tuple[str, ...] = tuple(f"ragchecker_{name}" for name in _METRICS)


# ----------------------------------------------------------------------------- explain=True


@dataclass(frozen=True)
class _Flag:
    """Elements (answer claims, reference claims or passages) a metric's signal names, one per marked element."""

    side: str
    row: np.ndarray
    lengths: np.ndarray
    mask: np.ndarray
    id: str
    severity: str
    text: str


def _claim_flags(name: str, v: _Verdicts) -> list[_Flag]:
    """What ``explain=True`` shows for one metric: the claims (or passages) that lowered a higher-is-better score
    or raised a lower-is-better one."""
    out: list[_Flag] = []
    if name in ("precision", "f1"):
        a2r = v.get("answer2response")
        out.append(_Flag("answer", a2r.row, a2r.lengths, ~_entailed(a2r), "incorrect_claim", "warning",
                         ": the reference does not entail it"))  # fmt: skip
    if name in ("recall", "f1"):
        r2a = v.get("response2answer")
        out.append(_Flag("reference", r2a.row, r2a.lengths, ~_entailed(r2a), "missed_claim", "warning",
                         ": the answer does not entail it"))  # fmt: skip
    if name == "claim_recall":
        m = v.get("retrieved2answer")
        unrecalled = ~m.claim_any(_entailed(m)) & (m.passages > 0)[m.claim_row]
        out.append(_Flag("reference", m.claim_row, m.claims, unrecalled, "unretrieved_claim", "warning",
                         ": no passage entails it"))  # fmt: skip
    if name == "context_precision":
        m = v.get("retrieved2answer")
        rows = np.repeat(np.arange(v.n, dtype=np.int64), m.passages)
        out.append(_Flag("passage", rows, m.passages, ~m.passage_any(_entailed(m)), "irrelevant_passage", "warning",
                         ": entails no reference claim"))  # fmt: skip
    if name == "context_utilization":
        m, recalled, used = _utilization_masks(v)
        out.append(_Flag("reference", m.claim_row, m.claims, recalled & ~used, "unused_claim", "warning",
                         ": a passage holds it, the answer does not"))  # fmt: skip
    if name.startswith("noise_sensitivity"):
        a2r, relevant, irrelevant, _ = _noise_masks(v)
        if name.endswith("_relevant") and not name.endswith("irrelevant"):
            out.append(_Flag("answer", a2r.row, a2r.lengths, relevant, "misled_by_relevant", "warning",
                             ": wrong, and entailed by a relevant passage"))  # fmt: skip
        else:
            out.append(_Flag("answer", a2r.row, a2r.lengths, irrelevant, "misled_by_irrelevant", "warning",
                             ": wrong, and entailed only by irrelevant passages"))  # fmt: skip
    if name in ("hallucination", "self_knowledge"):
        a2r, m = v.get("answer2response"), v.get("retrieved2response")
        correct, faithful = _response_claims(v)
        judged = (m.passages > 0)[a2r.row]
        if name == "hallucination":
            out.append(_Flag("answer", a2r.row, a2r.lengths, ~faithful & ~correct & judged, "hallucinated_claim",
                             "critical", ": wrong, and in no passage"))  # fmt: skip
        else:
            out.append(_Flag("answer", a2r.row, a2r.lengths, ~faithful & correct & judged, "self_knowledge_claim",
                             "info", ": right, but in no passage"))  # fmt: skip
    if name == "faithfulness":
        m = v.get("retrieved2response")
        unfaithful = ~m.claim_any(_entailed(m)) & (m.passages > 0)[m.claim_row]
        out.append(_Flag("answer", m.claim_row, m.claims, unfaithful, "unfaithful_claim", "warning",
                         ": no passage entails it"))  # fmt: skip
    return out


def _claim_texts(view: pl.DataFrame, column: str | None) -> tuple[pl.Series, np.ndarray] | None:
    """A claims column flattened (one text per claim, a triple joined by spaces) and its claims per row."""
    if column is None or column not in view.columns:
        return None
    series = view.get_column(column)
    dtype = series.dtype
    inner = dtype.inner if isinstance(dtype, pl.List) else None
    if inner not in (pl.String, pl.List(pl.String)):
        raise SchemaError("wrong dtype", column=column,
                          expected="list[str] or list[list[str]]", found=str(dtype))  # fmt: skip
    lengths = series.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = series.filter(pl.Series(lengths > 0)).explode() if lengths.sum() else pl.Series([], dtype=inner)
    if inner == pl.List(pl.String):
        flat = flat.list.join(" ")
    return flat.cast(pl.String), lengths


def _signals(flags: list[_Flag], texts: dict[str, Any], null: np.ndarray, n: int, name: str) -> pl.Series:
    signals = Signals()
    for number, flag in enumerate(flags):
        starts = np.cumsum(flag.lengths) - flag.lengths
        position = np.arange(flag.row.size, dtype=np.int64) - starts[flag.row]
        keep = flag.mask & ~null[flag.row]
        rows, positions = flag.row[keep], position[keep]
        noun = "passage" if flag.side == "passage" else f"{flag.side} claim"
        messages = pl.select(
            pl.concat_str(pl.lit(f"{noun} "), pl.Series(positions + 1).cast(pl.String), pl.lit(flag.text))
        ).to_series()
        evidence = None
        known = texts.get(flag.side)
        if known is not None:
            flat, lengths = known
            where = (np.cumsum(lengths) - lengths)[rows] + positions
            inside = positions < lengths[rows]
            evidence = (
                pl.Series([None] * rows.size, dtype=pl.String).scatter(
                    np.flatnonzero(inside), flat.gather(where[inside])
                )
                if rows.size
                else None
            )
        order = positions + number * (1 << 40)  # a row's signals: flag by flag, each in claim order (no ties)
        signals.add(rows, order, [flag.id] * rows.size, flag.severity, messages, evidence)
    return signals.column(f"{name}_signals", n)


# ----------------------------------------------------------------------------- the family


def _column(role: str, options: Mapping[str, Any]) -> str:
    named = options.get(role)
    return named if isinstance(named, str) and named else role


_CLAIM_COLUMNS = {"answer": "response_claims", "reference": "gt_answer_claims"}


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]) -> dict[str, str]:
    out = {role: _column(role, options) for metric, _ in requests for role in metric.inputs}
    if requests and options.get("explain") is True:  # the claims' texts, as evidence, when the frame has them
        out.update(
            {role: _column(role, options) for role in _CLAIM_COLUMNS.values() if _column(role, options) in available}
        )
    return out


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any]) -> pl.DataFrame:
    columns = _columns(requests, options, view.columns)
    verdicts = _Verdicts(view, columns)
    explain = options.get("explain") is True
    texts: dict[str, Any] = {}
    if explain:
        sides = {
            "answer": ("answer2response", "retrieved2response"),
            "reference": ("response2answer", "retrieved2answer"),
        }
        for side, role in _CLAIM_COLUMNS.items():
            texts[side] = _claim_texts(view, columns.get(role))
            for verdicts_role in (r for r in sides[side] if r in columns and texts[side] is not None):
                claims = verdicts.claims(verdicts_role)
                both = ~(verdicts.get(verdicts_role).null | view.get_column(columns[role]).is_null().to_numpy())
                bad = np.flatnonzero(both & (claims != texts[side][1]))
                if bad.size:
                    raise SchemaError(
                        f"{role} and {verdicts_role} disagree on the number of claims",
                        column=columns[role],
                        row=int(bad[0]),
                        expected=f"{int(claims[bad[0]])} claims",
                        found=str(int(texts[side][1][bad[0]])),
                    )
    out = []
    for metric, _ in requests:
        values = metric.kernel(verdicts)
        null = verdicts.null(metric.inputs)
        out.append(pl.Series(metric.name, np.where(null, np.nan, values), dtype=pl.Float64, nan_to_null=True))
        if explain:
            name = metric.name.removeprefix("ragchecker_")
            out.append(_signals(_claim_flags(name, verdicts), texts, null, view.height, metric.name))
    return pl.DataFrame(out, height=view.height)


def _check(options: dict[str, Any]) -> dict[str, Any]:
    return check_options(RagcheckerOptions, options)


register_family(
    Family(
        name="ragchecker", score=_score, options=RagcheckerOptions, check=_check, columns=_columns, reads=("explain",)
    )
)

for _name, (_group, _inputs, _lower, _kernel, _description) in _METRICS.items():
    register_metric(
        Metric(
            name=f"ragchecker_{_name}",
            family="ragchecker",
            inputs=_inputs,
            description=_description,
            kernel=_kernel,
            higher_is_better=not _lower,
        )
    )
