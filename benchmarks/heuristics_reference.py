"""A plain, per-row pure-Python reading of ``spec/heuristics.md`` (the seven heuristic metrics).

This is the baseline of ``benchmarks/heuristics.py`` and an independent check of ragframe:
no polars, no numpy, one sample at a time, written to be read next to the spec. Only the
standard library is used (``re``, ``unicodedata``, ``math``, ``collections``).

The primitives take texts, as the spec states them. The metric functions tokenise each text
of a sample once and reuse the tokens and n-gram sets within that sample (nothing is cached
across samples), which is how one would write this by hand in Python.

Checking it against the oracle of the seed implementation::

    python benchmarks/heuristics_reference.py                  # default-option cases
    python benchmarks/heuristics_reference.py --all-options    # also the cases with options
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

METRICS = (
    "faithfulness",
    "answer_relevance",
    "context_precision",
    "context_recall",
    "context_relevance",
    "answer_correctness",
    "hallucination_rate",
)
THRESHOLDS = {
    "faithfulness": 0.7,
    "answer_relevance": 0.7,
    "context_precision": 0.7,
    "context_recall": 0.7,
    "context_relevance": 0.6,
    "answer_correctness": 0.6,
    "hallucination_rate": 0.7,
}
NGRAM_SIZES = (1, 2)
NGRAM_WEIGHTS = (0.7, 0.3)
CHUNK_RELEVANCE_THRESHOLD = 0.2
CLAIM_SUPPORT_THRESHOLD = 0.15
COMPOSITE_THRESHOLD = 0.6

ORACLE = Path("/work/shared/data/heuristics_oracle/cases.jsonl")
TOLERANCE = 1e-9

# ----------------------------------------------------------------------------- character classes

#: JavaScript's whitespace set (``\s``): not Python's ``str.isspace`` (U+0085, U+001C..U+001F are out, U+FEFF is in).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))  # U+2000..U+200A
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _ranges(code_points: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted code points folded into inclusive (first, last) ranges."""
    out: list[tuple[int, int]] = []
    for cp in sorted(set(code_points)):
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _class_body(code_points: Iterable[int]) -> str:
    """The inside of a regex character class matching exactly these code points."""
    parts = []
    for first, last in _ranges(code_points):
        parts.append(f"\\U{first:08x}" if first == last else f"\\U{first:08x}-\\U{last:08x}")
    return "".join(parts)


_PUNCTUATION = [cp for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)).startswith("P")]
_SEPARATORS = _class_body([*map(ord, JS_WHITESPACE), *_PUNCTUATION])
#: A token is a maximal run of characters that are neither JS whitespace nor Unicode punctuation.
TOKEN_RE = re.compile(f"[^{_SEPARATORS}]+")
#: A sentence ends after . ! or ? when whitespace and then an ASCII capital follow.
SENTENCE_BREAK_RE = re.compile(f"(?<=[.!?])[{_class_body(map(ord, JS_WHITESPACE))}]+(?=[A-Z])")

# ----------------------------------------------------------------------------- primitives


def tokenize(text: str | None) -> list[str]:
    """Lower-case, then split on runs of JS whitespace or Unicode punctuation (P*); no empty tokens.

    >>> tokenize("Don't pay $100 for state-of-the-art!")
    ['don', 't', 'pay', '$100', 'for', 'state', 'of', 'the', 'art']
    """
    return TOKEN_RE.findall((text or "").lower())


def split_sentences(text: str | None) -> list[str]:
    """Sentences: break after . ! ? + whitespace + A-Z; trim each piece; drop empty pieces.

    The spec's second rule (a break at . ! ? followed only by whitespace to the end) only
    separates trailing whitespace, which trimming removes anyway.

    >>> split_sentences("Dr. Smith went home. He slept.")
    ['Dr.', 'Smith went home.', 'He slept.']
    >>> split_sentences("Really?! yes.")
    ['Really?! yes.']
    """
    pieces = (piece.strip(JS_WHITESPACE) for piece in SENTENCE_BREAK_RE.split(text or ""))
    return [piece for piece in pieces if piece]


def ngrams(tokens: Sequence[str], n: int) -> list[str]:
    """Contiguous n-grams joined by one space; none when there are fewer than n tokens.

    >>> ngrams(["a", "b", "c"], 2)
    ['a b', 'b c']
    """
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|; both empty gives 1.0, exactly one empty gives 0.0."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def ngram_overlap(a: str | None, b: str | None, n: int = 1) -> float:
    """Jaccard index of the n-gram sets of two texts.

    >>> ngram_overlap("the cat sat", "the cat ran")
    0.5
    """
    return jaccard(set(ngrams(tokenize(a), n)), set(ngrams(tokenize(b), n)))


def _weights(sizes: Sequence[int], weights: Sequence[float]) -> list[float]:
    """One weight per n-gram size: a missing weight counts as 1, extra weights are ignored."""
    return [float(weights[i]) if i < len(weights) else 1.0 for i in range(len(sizes))]


def _weighted(overlaps: Sequence[float], weights: Sequence[float]) -> float:
    total = 0.0
    for w in weights:
        total += w
    if total == 0:
        return 0.0
    acc = 0.0
    for w, value in zip(weights, overlaps):
        acc += w * value
    return acc / total


def weighted_ngram_overlap(
    a: str | None, b: str | None, sizes: Sequence[int] = NGRAM_SIZES, weights: Sequence[float] = NGRAM_WEIGHTS
) -> float:
    """sum_i w_i * ngram_overlap(a, b, sizes[i]) / sum_i w_i (total weight 0 gives 0).

    >>> weighted_ngram_overlap("Yes.", "No.")
    0.3
    """
    return _weighted([ngram_overlap(a, b, n) for n in sizes], _weights(sizes, weights))


def tfidf_tokens(a: Sequence[str], b: Sequence[str]) -> float:
    """TF-IDF cosine of two token lists over the two-text corpus [a, b]."""
    if not a or not b:
        return 0.0
    count_a, count_b = Counter(a), Counter(b)
    vocabulary = list(dict.fromkeys([*count_a, *count_b]))
    dot = norm_a = norm_b = 0.0
    for term in vocabulary:
        df = (term in count_a) + (term in count_b)
        idf = math.log((2 + 1) / (df + 1)) + 1
        wa = count_a[term] / len(a) * idf
        wb = count_b[term] / len(b) * idf
        dot += wa * wb
        norm_a += wa * wa
        norm_b += wb * wb
    if norm_a == 0 or norm_b == 0:
        return 0.0
    return dot / (math.sqrt(norm_a) * math.sqrt(norm_b))


def tfidf_similarity(q: str | None, d: str | None) -> float:
    """Cosine of TF-IDF vectors (tf = count / length, idf = ln(3 / (df + 1)) + 1) built on [q, d] only.

    >>> round(tfidf_similarity("the cat", "the cat"), 12)
    1.0
    """
    return tfidf_tokens(tokenize(q), tokenize(d))


def token_f1_tokens(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """F1 of the multiset overlap of two token lists (0 when either is empty or nothing is common)."""
    if not reference or not hypothesis:
        return 0.0
    common = sum((Counter(reference) & Counter(hypothesis)).values())
    if common == 0:
        return 0.0
    precision = common / len(hypothesis)
    recall = common / len(reference)
    return 2 * precision * recall / (precision + recall)


def token_f1(reference: str | None, hypothesis: str | None) -> float:
    """Token F1 of a hypothesis against a reference.

    >>> round(token_f1("a b b c", "b b d"), 12)
    0.571428571429
    """
    return token_f1_tokens(tokenize(reference), tokenize(hypothesis))


# ----------------------------------------------------------------------------- the seven metrics


def _mean(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


class Sample:
    """One RAG sample, its texts tokenised once; n-gram sets made on demand and kept for this sample."""

    def __init__(
        self,
        question: str | None,
        answer: str | None,
        contexts: Sequence[str | None] | None,
        ground_truth: str | None,
    ) -> None:
        self.question = question or ""
        self.answer = answer or ""
        self.contexts = [c or "" for c in (contexts or [])]
        self.ground_truth = ground_truth
        self._tokens: dict[str, list[str]] = {}
        self._sets: dict[tuple[str, int], set[str]] = {}

    def tokens(self, text: str) -> list[str]:
        if text not in self._tokens:
            self._tokens[text] = tokenize(text)
        return self._tokens[text]

    def grams(self, text: str, n: int) -> set[str]:
        key = (text, n)
        if key not in self._sets:
            self._sets[key] = set(ngrams(self.tokens(text), n))
        return self._sets[key]

    def overlap(self, a: str, b: str, n: int = 1) -> float:
        return jaccard(self.grams(a, n), self.grams(b, n))

    def weighted_overlap(self, a: str, b: str, sizes: Sequence[int], weights: Sequence[float]) -> float:
        return _weighted([self.overlap(a, b, n) for n in sizes], _weights(sizes, weights))

    def max_support(self, sentence: str, score: Any) -> float:
        """Best value of ``score(sentence, context)`` over the contexts."""
        return max(score(sentence, context) for context in self.contexts)


def faithfulness(s: Sample, ngram_sizes: Sequence[int] = NGRAM_SIZES, ngram_weights: Sequence[float] = NGRAM_WEIGHTS):
    sentences = split_sentences(s.answer)
    if not sentences or not s.contexts:
        return 0.0
    return _mean(
        [s.max_support(x, lambda a, b: s.weighted_overlap(a, b, ngram_sizes, ngram_weights)) for x in sentences]
    )


def answer_relevance(s: Sample) -> float:
    q, a = s.tokens(s.question), s.tokens(s.answer)
    return (tfidf_tokens(q, a) + s.overlap(s.question, s.answer, 1)) / 2


def context_precision(s: Sample) -> float:
    if not s.contexts:
        return 0.0
    q = s.tokens(s.question)
    return _mean([tfidf_tokens(q, s.tokens(c)) for c in s.contexts])


def context_recall(s: Sample) -> float | None:
    if not s.ground_truth:
        return None
    sentences = split_sentences(s.ground_truth)
    if not sentences or not s.contexts:
        return 0.0
    supported = [s.max_support(x, s.overlap) >= 0.3 for x in sentences]
    return sum(supported) / len(sentences)


def context_relevance(
    s: Sample,
    ngram_sizes: Sequence[int] = NGRAM_SIZES,
    ngram_weights: Sequence[float] = NGRAM_WEIGHTS,
    chunk_relevance_threshold: float = CHUNK_RELEVANCE_THRESHOLD,
) -> float:
    if not s.contexts:
        return 0.0
    relevant = [
        s.weighted_overlap(s.question, c, ngram_sizes, ngram_weights) >= chunk_relevance_threshold for c in s.contexts
    ]
    return sum(relevant) / len(s.contexts)


def answer_correctness(s: Sample) -> float | None:
    if not s.ground_truth:
        return None
    f1 = token_f1_tokens(s.tokens(s.ground_truth), s.tokens(s.answer))
    return 0.7 * f1 + 0.3 * s.overlap(s.ground_truth, s.answer, 1)


def hallucination_rate(s: Sample, claim_support_threshold: float = CLAIM_SUPPORT_THRESHOLD) -> float:
    if not s.contexts:
        return 0.0
    sentences = split_sentences(s.answer)
    if not sentences:
        return 1.0
    unsupported = [s.max_support(x, s.overlap) < claim_support_threshold for x in sentences]
    return 1 - sum(unsupported) / len(sentences)


def evaluate_sample(
    question: str | None,
    answer: str | None,
    contexts: Sequence[str | None] | None,
    ground_truth: str | None,
    metrics: Sequence[str] | None = None,
    *,
    ngram_sizes: Sequence[int] = NGRAM_SIZES,
    ngram_weights: Sequence[float] = NGRAM_WEIGHTS,
    chunk_relevance_threshold: float = CHUNK_RELEVANCE_THRESHOLD,
    claim_support_threshold: float = CLAIM_SUPPORT_THRESHOLD,
    thresholds: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
    composite_threshold: float = COMPOSITE_THRESHOLD,
) -> dict[str, Any]:
    """Scores of the requested metrics (all seven by default), ``composite_score`` and ``passed``."""
    s = Sample(question, answer, contexts, ground_truth)
    chosen = [m for m in METRICS if metrics is None or m in metrics]
    scorers = {
        "faithfulness": lambda: faithfulness(s, ngram_sizes, ngram_weights),
        "answer_relevance": lambda: answer_relevance(s),
        "context_precision": lambda: context_precision(s),
        "context_recall": lambda: context_recall(s),
        "context_relevance": lambda: context_relevance(s, ngram_sizes, ngram_weights, chunk_relevance_threshold),
        "answer_correctness": lambda: answer_correctness(s),
        "hallucination_rate": lambda: hallucination_rate(s, claim_support_threshold),
    }
    limits = {**THRESHOLDS, **(thresholds or {})}
    out: dict[str, Any] = {}
    numerator = denominator = 0.0
    failed = False
    for name in chosen:
        score = scorers[name]()
        out[name] = score
        if score is not None:
            w = float((weights or {}).get(name, 1.0))
            numerator += w * score
            denominator += w
            failed = failed or score < limits[name]
    composite = None if denominator == 0 else numerator / denominator
    out["composite_score"] = composite
    out["passed"] = not failed and composite is not None and composite >= composite_threshold
    return out


# ----------------------------------------------------------------------------- oracle check


def check_oracle(path: Path, all_options: bool = False) -> int:
    """Compare with the seed's outputs; print the agreement and the first differences. Exit code 0 if all agree."""
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    tally = {"default": [0, 0, 0], "with options": [0, 0, 0]}  # cases, scores, scores matched
    differences: list[str] = []
    for case in cases:
        group = "default" if not case["options"] else "with options"
        if group != "default" and not all_options:
            continue
        got = evaluate_sample(
            case["question"], case["answer"], case["contexts"], case["ground_truth"], case["metrics"], **case["options"]
        )
        tally[group][0] += 1
        for name in [*(m for m in METRICS if m in got), "composite_score"]:
            want, have = case["expected"][name], got[name]
            same = (want is None and have is None) or (
                want is not None and have is not None and abs(float(want) - have) <= TOLERANCE
            )
            tally[group][1] += 1
            tally[group][2] += same
            if not same:
                differences.append(f"{case['id']} {name}: expected {want!r}, got {have!r}")
        want_passed = case["expected"]["passed"]
        if got["passed"] != want_passed:
            differences.append(f"{case['id']} passed: expected {want_passed!r}, got {got['passed']!r}")
    for group, (n_cases, n_scores, n_same) in tally.items():
        if n_cases:
            print(f"{group:>12}: {n_cases} cases, {n_same}/{n_scores} scores within {TOLERANCE:g}")
    for line in differences[:20]:
        print("  DIFF", line)
    if len(differences) > 20:
        print(f"  ... {len(differences) - 20} more differences")
    return 1 if differences else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--oracle", type=Path, default=ORACLE, help=f"cases.jsonl (default {ORACLE})")
    parser.add_argument("--all-options", action="store_true", help="also check the cases that set options")
    args = parser.parse_args(argv)
    return check_oracle(args.oracle, args.all_options)


if __name__ == "__main__":
    sys.exit(main())
