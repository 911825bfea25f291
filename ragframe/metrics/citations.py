"""The ``citations`` family: does each answer sentence's cited passage support it? ALCE and TREC RAG scores.

An answer with citations becomes (sentence, cited passage) pairs, read from either format:

- ``[1]``-style markers in ``answer`` (``[1]``, ``[1][3]``, ``[1, 3]``; 1-based positions in
  ``contexts``). The answer is cut into sentences (``.``, ``!``, ``?`` followed by space, line
  breaks; a marker written after the full stop, ``... capital. [1]``, belongs to the sentence
  before it) and each sentence's markers, without repeats, are its citations;
- the TREC RAG answer format: ``answer_sentences`` (list of str) and ``sentence_citations``
  (list of list of int, **0-based** positions in ``contexts``, as TREC RAG's ``citations``
  index its ``references``). Used when both columns are present.

Each pair is labelled ``full`` (weight 1), ``partial`` (0.5) or ``none`` (0) support. A lexical
pre-assignment decides the obvious pairs: the share ``s`` of the sentence's content words
(stop words left out) found in the passage; ``s >= hi`` is ``full``, ``s <= lo`` is ``none``
(``citation_band=(lo, hi)``, default (0.2, 0.8)). The pairs in between (and sentences without
a content word) go to the judge when ``judge=`` is given, all of a row's in one call (strict
``Pair <i>: full | partial | none`` lines, re-asks, the judge cache); without a judge they
are ``partial``. A citation outside the passage list is a ``none`` pair (never judged).

Per row, with *pairs* the (sentence, citation) pairs and *sentences* all the answer's sentences:

- ``weighted_support_precision`` (TREC RAG support evaluation, Thakur et al. 2025): the mean
  weight over the pairs;
- ``weighted_support_recall``: the mean over sentences of the best weight among its
  citations (0 for an uncited sentence);
- ``citation_recall`` (ALCE, Gao et al. 2023): the share of sentences whose citations entail
  them, the joint entailment read as "some cited passage fully supports it" (ALCE: 0 for a
  sentence citing a passage that does not exist);
- ``citation_precision`` (ALCE): relevant citations / citations. Under that reading a
  citation is relevant exactly when it fully supports its sentence (ALCE's rule: a citation
  that does not support the sentence alone while the others still do is irrelevant).

A row without sentences, or without citations for the precisions, scores 0 (as ALCE). A null
``answer`` or ``contexts`` gives null scores; a row whose judge call failed gets null scores
and its status in ``citation_judge_status`` (written with ``judge=``).

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"answer": ["Paris is the capital of France [1]. It has many museums [2]."],
...                    "contexts": [["Paris is the capital of France.", "Lyon is a city."]]})
>>> out = rf.evaluate(df, ["citation_recall", "citation_precision", "weighted_support_recall"])
>>> out.select("citation_recall", "citation_precision", "weighted_support_recall").row(0)
(0.5, 0.5, 0.5)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.judges.client import judge_from
from ragframe.judges.runner import judge_prompts
from ragframe.judges.templates import load_template, render
from ragframe.kernels.claims import segment_count
from ragframe.kernels.text import unicode_sentences_expr, unicode_tokenize_expr
from ragframe.metrics.registry import (
    Family,
    Metric,
    Requests,
    RunState,
    check_options,
    option,
    register_family,
    register_metric,
)
from ragframe.metrics.text_engine import Signals, contexts_column, stop_words, string_column

__all__ = ["CITATION_METRICS", "CitationOptions", "citation_pairs", "read_pair_labels"]

#: Support labels of a (sentence, passage) pair and their weights.
LABELS: tuple[str, ...] = ("none", "partial", "full")
_MARKER = r"\[\d+(?:\s*,\s*\d+)*\]"
_AFTER_STOP = rf"([.!?])((?:\s*{_MARKER})+)"
_PAIR = re.compile(r"^\s*[*#>-]*\s*pair\s*(\d+)\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*.]*\s*$", re.IGNORECASE)


def _band(value: Any, name: str) -> tuple[float, float]:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise validate.fail(name, "a pair (lo, hi) with 0 <= lo <= hi <= 1", value)
    lo = validate.number(value[0], name, minimum=0.0, maximum=1.0)
    hi = validate.number(value[1], name, minimum=0.0, maximum=1.0)
    if lo > hi:
        raise validate.fail(name, "a pair (lo, hi) with 0 <= lo <= hi <= 1", value)
    return (lo, hi)


@dataclass(frozen=True)
class CitationOptions:
    """The citations family's options."""

    answer_sentences: str = option(
        "answer_sentences",
        "Column of the answer's sentences (list of str, TREC RAG's format; read with ``sentence_citations``).",
        check=validate.column_name,
    )
    sentence_citations: str = option(
        "sentence_citations",
        "Column of each sentence's cited passages (list of list of int, 0-based positions in ``contexts``).",
        check=validate.column_name,
    )
    citation_band: tuple[float, float] = option(
        (0.2, 0.8),
        "Lexical support at or above ``hi``: full; at or below ``lo``: none; in between: the judge (or partial).",
        check=_band,
        invalid=((0.9, 0.1), (-0.1, 0.5)),
    )


# ----------------------------------------------------------------------------- the pairs


def _column(role: str, options: Mapping[str, Any]) -> str:
    named = options.get(role)
    return named if isinstance(named, str) and named else role


def _trec_format(options: Mapping[str, Any], available: Sequence[str]) -> bool:
    return _column("answer_sentences", options) in available and _column("sentence_citations", options) in available


def _sentences_from_markers(view: pl.DataFrame, column: str) -> pl.DataFrame:
    """One row per sentence: ``row``, ``text`` (markers removed), ``cited`` (0-based, no repeats)."""
    answers = string_column(view, column)
    moved = answers.str.replace_all(_AFTER_STOP, "$2$1")
    frame = (
        pl.DataFrame({"s": moved})
        .with_row_index("row")
        .select(pl.col("row").cast(pl.Int64), unicode_sentences_expr(pl.col("s")).alias("s"))
    )
    long = frame.explode("s").filter(pl.col("s").is_not_null())
    return long.select(
        "row",
        pl.col("s").str.replace_all(rf"\s*{_MARKER}", "").str.strip_chars().alias("text"),
        pl.col("s").str.extract_all(_MARKER).list.join(" ").str.extract_all(r"\d+")
        .list.eval(pl.element().cast(pl.Int64) - 1).list.unique(maintain_order=True).alias("cited"),
    )  # fmt: skip


def _int_lists(dtype: pl.DataType) -> bool:
    """``list[list[int]]`` (a null inner or outer dtype too)."""
    if dtype == pl.Null:
        return True
    if not isinstance(dtype, pl.List):
        return False
    inner = dtype.inner
    return inner == pl.Null or (isinstance(inner, pl.List) and (inner.inner == pl.Null or inner.inner.is_integer()))


def _sentences_from_trec(view: pl.DataFrame, sentences: str, citations: str) -> pl.DataFrame:
    texts, cites = view.get_column(sentences), view.get_column(citations)
    if texts.dtype not in (pl.Null, pl.List(pl.String)):
        raise SchemaError("wrong dtype", column=sentences, expected="list[str]", found=str(texts.dtype))
    if not _int_lists(cites.dtype):
        raise SchemaError("wrong dtype", column=citations, expected="list[list[int]]", found=str(cites.dtype))
    texts = texts.cast(pl.List(pl.String))
    cites = cites.cast(pl.List(pl.List(pl.Int64)))
    both = texts.is_not_null() & cites.is_not_null()
    bad = (both & (texts.list.len() != cites.list.len())).arg_true()
    if bad.len():
        row = int(bad[0])
        raise SchemaError(
            "one citation list per sentence", column=citations, row=row,
            expected=f"{texts.list.len()[row]} lists (as {sentences})", found=str(cites.list.len()[row]),
        )  # fmt: skip
    frame = pl.DataFrame({"text": texts, "cited": cites}).with_row_index("row").filter(pl.Series(both.to_numpy()))
    long = (
        frame.with_columns(pl.col("row").cast(pl.Int64)).explode("text", "cited").filter(pl.col("text").is_not_null())
    )
    nulls = long.filter(pl.col("cited").is_null() | pl.col("cited").list.eval(pl.element().is_null()).list.any())
    if nulls.height:
        raise SchemaError("null citation list or index", column=citations,
                          row=int(nulls["row"][0]), expected="a list of ints per sentence", found="null")  # fmt: skip
    return long.with_columns(pl.col("cited").list.unique(maintain_order=True))


def citation_pairs(view: pl.DataFrame, options: Mapping[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray]:
    """The sentences, the (sentence, cited passage) pairs with their lexical label, and the rows' null mask.

    Parameters
    ----------
    view : polars.DataFrame
        The input columns (``answer`` or the TREC pair, and ``contexts``).
    options : mapping
        The family's options (column names, ``citation_band``).

    Returns
    -------
    tuple
        ``sentences`` (``row``, ``sentence``, ``text``), ``pairs`` (``row``, ``sentence``,
        ``passage`` 0-based, ``sentence_text``, ``passage_text``, ``exists``, ``lexical``
        in [0, 1] or null, ``label``: 0 none, 1 partial, 2 full, -1 uncertain) and a bool
        mask of the rows with a null input.

    Examples
    --------
    >>> import polars as pl
    >>> view = pl.DataFrame({"answer": ["Paris is the capital [1][3]."], "contexts": [["Paris is the capital."]]})
    >>> _, pairs, _ = citation_pairs(view, {"citation_band": (0.2, 0.8)})
    >>> pairs.select("passage", "exists", "label").rows()
    [(0, True, 2), (2, False, 0)]
    """
    contexts = contexts_column(view, _column("contexts", options))
    if _trec_format(options, view.columns):
        sentences = _sentences_from_trec(
            view, _column("answer_sentences", options), _column("sentence_citations", options)
        )
        null = (view.get_column(_column("answer_sentences", options)).is_null()
                | view.get_column(_column("sentence_citations", options)).is_null()).to_numpy()  # fmt: skip
    else:
        sentences = _sentences_from_markers(view, _column("answer", options))
        null = view.get_column(_column("answer", options)).is_null().to_numpy()
    null = null | contexts.is_null().to_numpy()
    if sentences.height:  # a row with a null input has no sentences
        sentences = sentences.filter(pl.Series(~null[sentences["row"].to_numpy()]))
    sentences = sentences.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("sentence"))
    passages = (
        pl.DataFrame({"passage_text": contexts}).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
        .explode("passage_text").filter(pl.col("passage_text").is_not_null())
        .with_columns((pl.int_range(pl.len()).over("row")).cast(pl.Int64).alias("passage"))
    )  # fmt: skip
    pairs = (
        sentences.select("row", "sentence", pl.col("text").alias("sentence_text"), pl.col("cited").alias("passage"))
        .explode("passage").filter(pl.col("passage").is_not_null())
        .join(passages, on=["row", "passage"], how="left", maintain_order="left")
        .with_columns(pl.col("passage_text").is_not_null().alias("exists"))
    )  # fmt: skip
    stop = pl.lit(stop_words().implode())
    words = unicode_tokenize_expr(pl.col("sentence_text")).list.set_difference(stop)
    held = unicode_tokenize_expr(pl.col("passage_text").fill_null(""))
    lexical = words.list.set_intersection(held).list.len() / words.list.len()
    lo, hi = options["citation_band"]
    pairs = pairs.with_columns(
        pl.when(words.list.len() > 0).then(lexical).otherwise(None).alias("lexical")
    ).with_columns(
        pl.when(~pl.col("exists")).then(0)
        .when(pl.col("lexical").is_null()).then(-1)
        .when(pl.col("lexical") >= hi).then(2)
        .when(pl.col("lexical") <= lo).then(0)
        .otherwise(-1).cast(pl.Int8).alias("label")
    )  # fmt: skip
    return sentences.select("row", "sentence", "text"), pairs, null


# ----------------------------------------------------------------------------- the judge


def read_pair_labels(text: str, n: int) -> tuple[list[int] | None, str | None]:
    """Exactly one ``Pair <i>: full | partial | none`` line per pair 1..n: labels as 2, 1, 0, or why not.

    Parameters
    ----------
    text : str
        The judge's reply.
    n : int
        The pairs the prompt listed.

    Returns
    -------
    tuple
        ``(labels, None)`` or ``(None, error)``.

    Examples
    --------
    >>> read_pair_labels("Pair 1: full\\nPair 2: None", 2)
    ([2, 0], None)
    >>> read_pair_labels("Pair 1: yes", 1)[1]
    "pair 1: unknown label 'yes' (each of the 1 pairs answered once as Pair <i>: full, partial or none)"
    """
    asked = f"each of the {n} pairs answered once as Pair <i>: full, partial or none"
    found: dict[int, int] = {}
    for line in text.splitlines():
        match = _PAIR.match(line)
        if match is None:
            continue
        number, label = int(match[1]), match[2].strip().lower()
        if not 1 <= number <= n:
            return None, f"a line for pair {number}, which is not listed ({asked})"
        if label not in LABELS:
            return None, f"pair {number}: unknown label {match[2]!r} ({asked})"
        if number in found:
            return None, f"pair {number} answered twice ({asked})"
        found[number] = LABELS.index(label)
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        return None, f"no line for pair {missing[0]} ({asked})"
    return [found[i] for i in range(1, n + 1)], None


def _judged(pairs: pl.DataFrame, n: int, options: Mapping[str, Any], state: RunState):
    """The uncertain pairs labelled by the judge (one call per row); per row its status and error."""
    uncertain = pairs.with_row_index("_i").filter(pl.col("label") < 0)
    statuses: list[str] = ["ok"] * n
    errors: list[str | None] = [None] * n
    labels = pairs["label"].to_numpy(writable=True)
    if not uncertain.height:
        return labels, statuses, errors
    template = load_template("citation_support")
    groups = uncertain.group_by("row", maintain_order=True).agg("_i", "sentence_text", "passage_text")
    rows = groups["row"].to_list()
    prompts: list[str | None] = []
    counts: list[int] = []
    for sentences, passages in zip(groups["sentence_text"].to_list(), groups["passage_text"].to_list()):
        listed = "\n\n".join(
            f"Pair {i}:\nSentence: {s}\nPassage: {p}" for i, (s, p) in enumerate(zip(sentences, passages), start=1)
        )
        prompts.append(render(template, {"pairs": listed}))
        counts.append(len(sentences))
    judge = judge_from(options["judge"])
    replies = judge_prompts(
        judge, prompts, metric="citation_support", cache=options["cache"], dry_run=options["dry_run"],
        parse_retries=options["parse_retries"], retry_parse_errors=options["retry_parse_errors"],
        check=lambda row, text: read_pair_labels(text, counts[row])[1], memo=state.memo("citations"),
    )  # fmt: skip
    done: set[int] = set()
    failed: dict[int, tuple[str, str | None]] = {}
    for k, status, text, error in replies.sort("row", "sample").select("row", "status", "text", "error").iter_rows():
        if k in done:
            continue
        if status in ("ok", "parse_error") and text is not None:
            read, why = read_pair_labels(text, counts[k])
            if read is not None:
                labels[groups["_i"][k].to_numpy()] = read
                done.add(k)
                continue
            status, error = "parse_error", error if error is not None else why
        failed.setdefault(k, (status, error if error is not None else "dry run: not judged"))
    for k, (status, error) in failed.items():
        if k not in done:
            statuses[rows[k]], errors[rows[k]] = status, error
    return labels, statuses, errors


# ----------------------------------------------------------------------------- the kernels


def _score(
    view: pl.DataFrame, requests: Requests, options: Mapping[str, Any], state: RunState | None = None
) -> pl.DataFrame:
    n = view.height
    sentences, pairs, null = citation_pairs(view, options)
    judged = options.get("judge") is not None
    if judged:
        labels, statuses, errors = _judged(pairs, n, options, RunState() if state is None else state)
    else:
        labels = np.where(pairs["label"].to_numpy() < 0, 1, pairs["label"].to_numpy()).astype(np.int8)
        statuses, errors = ["ok"] * n, [None] * n
    failed = np.array([s != "ok" for s in statuses], bool) | null
    row = pairs["row"].to_numpy()
    sentence = pairs["sentence"].to_numpy()
    weight = np.where(labels < 0, 0.0, labels / 2.0)
    full = labels == 2
    n_sentences = segment_count(sentences["row"].to_numpy(), np.ones(sentences.height, bool), n)
    n_pairs = segment_count(row, np.ones(row.size, bool), n)
    total = sentences.height
    sentence_row = sentences["row"].to_numpy()
    best = np.zeros(total)
    np.maximum.at(best, sentence, weight)
    has_full = segment_count(sentence, full, total) > 0
    missing = segment_count(sentence, ~pairs["exists"].to_numpy(), total) > 0  # ALCE: citing no passage: 0
    values = {
        "weighted_support_precision": _share(np.bincount(row, weights=weight, minlength=n)[:n], n_pairs),
        "weighted_support_recall": _share(np.bincount(sentence_row, weights=best, minlength=n)[:n], n_sentences),
        "citation_recall": _share(segment_count(sentence_row, has_full & ~missing, n), n_sentences),
        "citation_precision": _share(segment_count(row, full & ~missing[sentence], n), n_pairs),
    }
    explain = options.get("explain") is True
    out = []
    for i, (metric, _) in enumerate(requests):
        out.append(pl.Series(metric.name, np.where(failed, np.nan, values[metric.kernel]), nan_to_null=True))
        if explain:
            out.append(_signals(metric.kernel, sentences, pairs, labels, has_full & ~missing, failed, n))
        if judged and i == 0:
            skipped = ["skipped" if null[r] else statuses[r] for r in range(n)]
            why = ["null input: not scored" if null[r] else errors[r] for r in range(n)]
            out.append(pl.Series("citation_judge_status", skipped, dtype=pl.String))
            out.append(pl.Series("citation_judge_error", why, dtype=pl.String))
    return pl.DataFrame(out, height=n)


def _signals(
    name: str,
    sentences: pl.DataFrame,
    pairs: pl.DataFrame,
    labels: np.ndarray,
    supported: np.ndarray,
    failed: np.ndarray,
    n: int,
) -> pl.Series:
    """``explain=True``: the citations not fully supporting their sentence (the precisions), or the sentences no
    citation fully supports (the recalls); the sentence as evidence."""
    signals = Signals()
    starts = sentences.group_by("row", maintain_order=True).agg(pl.col("sentence").min())
    first = np.zeros(n, np.int64)
    first[starts["row"].to_numpy()] = starts["sentence"].to_numpy()
    if name.endswith("precision"):
        row, sentence = pairs["row"].to_numpy(), pairs["sentence"].to_numpy()
        kinds = (
            (0, "unsupported_citation", "warning", "does not support it"),
            (1, "partially_supported_citation", "info", "supports part of it"),
        )
        for code, signal, severity, text in kinds:
            keep = (labels == code) & ~failed[row]
            cited = pairs.filter(pl.Series(keep))
            messages = cited.select(
                pl.concat_str(pl.lit("sentence "), (pl.Series(sentence[keep] - first[row[keep]] + 1)).cast(pl.String),
                              pl.lit(": passage "), (pl.col("passage") + 1).cast(pl.String), pl.lit(f" {text}"))
            ).to_series()  # fmt: skip
            order = np.flatnonzero(keep)  # the pairs' order: by sentence, then citation (no ties)
            signals.add(row[keep], order, [signal] * int(keep.sum()), severity, messages,
                        cited["sentence_text"])  # fmt: skip
    else:
        row, sentence = sentences["row"].to_numpy(), sentences["sentence"].to_numpy()
        keep = ~supported & ~failed[row]
        messages = pl.select(
            pl.concat_str(pl.lit("sentence "), pl.Series(sentence[keep] - first[row[keep]] + 1).cast(pl.String),
                          pl.lit(": no cited passage fully supports it"))
        ).to_series()  # fmt: skip
        signals.add(row[keep], sentence[keep], ["unsupported_sentence"] * int(keep.sum()), "warning", messages,
                    sentences["text"].filter(pl.Series(keep)))  # fmt: skip
    return signals.column(f"{name}_signals", n)


def _share(count: np.ndarray, total: np.ndarray) -> np.ndarray:
    out = np.zeros(count.size)
    np.divide(count, total, out=out, where=total > 0)
    return out


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]) -> dict[str, str]:
    if not requests:
        return {}
    if _trec_format(options, available):
        roles = ("answer_sentences", "sentence_citations", "contexts")
    else:
        roles = ("answer", "contexts")
    return {role: _column(role, options) for role in roles}


def _check(options: dict[str, Any]) -> dict[str, Any]:
    return check_options(CitationOptions, options)


register_family(
    Family(
        name="citations",
        score=_score,
        options=CitationOptions,
        check=_check,
        columns=_columns,
        reads_judge=True,
        run_state=True,
        reads=("answer", "contexts", "explain", "judge", "cache", "dry_run", "parse_retries", "retry_parse_errors"),
    )
)

_METRICS = {
    "citation_recall": "Share of answer sentences fully supported by a passage they cite (ALCE citation recall).",
    "citation_precision": "Share of citations that fully support their sentence (ALCE citation precision).",
    "weighted_support_precision": "Mean support of the cited passages, full 1 and partial 0.5 (TREC RAG).",
    "weighted_support_recall": "Mean over sentences of their best cited support, full 1 and partial 0.5 (TREC RAG).",
}
for _name, _description in _METRICS.items():
    register_metric(
        Metric(name=_name, family="citations", inputs=("answer", "contexts"), description=_description, kernel=_name)
    )

#: The four citation metrics.
CITATION_METRICS: tuple[str, ...] = tuple(_METRICS)
