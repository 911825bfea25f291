"""Property tests: no adversarial reply is a score unless it answers every claim (passage, score) exactly once.

Replies are built from a known answer (claims with verdicts, passages with verdicts, a score)
and then, maybe, broken by one mutation: a verdict dropped, a verdict duplicated, a verdict
before any claim, the template's instruction line parroted, a claim's verdict renumbered to
another claim, numbered and unnumbered lines mixed, a two-way verdict (``yes/no``), a
verdict of the wrong kind. Benign changes (reordered numbering, bullets and emphasis,
prose between the lines, a wrong ``Score:`` line next to the verdicts) must keep the
score. The oracle is the construction: an intact reply must score exactly what its
verdicts say (shares and F1 by hand, average precision by scikit-learn), a broken one must
be a ``parse_error``. Every judge metric's registered kernel is checked, a user
``rf.judge_metric`` template too, and a sample of the cases runs through the full metric
functions.
"""

from __future__ import annotations

import re
from dataclasses import replace

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

import ragframe as rf
from ragframe.judges.scoring import score_reply
from ragframe.metrics.registry import get_metric

BENIGN_PROSE = [
    "Let me check each one.",
    "",
    "Reason: the passages cover part of it.",
    "Score: 7/3",  # the model's arithmetic is not used when verdicts are present
    "The passages mention several facts.",
]
CLAIM_TEXTS = st.sampled_from(["Paris is big", "It has 9 moons", "Lyon is a city", "x", "the sky: blue", "2 + 2 = 4"])
BROKEN = ["drop_verdict", "extra_verdict", "orphan_verdict", "drop_claim", "parrot", "mixed", "renumber", "two_way"]


def _label(name: str, number: int | None, numbered: bool) -> str:
    return f"{name} {number}:" if numbered and number is not None else f"{name}:"


def _verdict_word(value: bool, draw_suffix: str) -> str:
    return ("yes" if value else "no") + draw_suffix


@st.composite
def decorations(draw):
    bullet = draw(st.sampled_from(["", "- ", "* ", "1. "]))
    emphasis = draw(st.sampled_from(["", "**"]))
    suffix = draw(st.sampled_from(["", " (supported)", ".", " - stated in [1]"]))
    return bullet, emphasis, suffix


def _render(items, numbered, decoration, unnumbered_index=None):
    """Items are (label, number, payload); payload is a claim's text or a verdict (bool or a raw string)."""
    bullet, emphasis, suffix = decoration
    lines = []
    for index, (label, number, payload) in enumerate(items):
        if label == "raw":
            lines.append(payload)
            continue
        use_number = numbered and index != unnumbered_index
        head = f"{bullet}{emphasis}{_label(label, number, use_number)}{emphasis}"
        if isinstance(payload, bool):
            lines.append(f"{head} {_verdict_word(payload, suffix)}")
        else:
            lines.append(f"{head} {payload}")
    return "\n".join(lines)


def _with_prose(draw, lines_text):
    lines = lines_text.split("\n")
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(BENIGN_PROSE)))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- claims listed by the judge


@st.composite
def claim_replies(
    draw, claim="Claim", verdict="Verdict", parrot="Verdict: yes (supported) or Verdict: no (not supported)"
):
    """(reply, expected verdicts or None when the reply is broken)."""
    verdicts = draw(st.lists(st.booleans(), min_size=1, max_size=6))
    texts = [draw(CLAIM_TEXTS) for _ in verdicts]
    numbered = draw(st.booleans())
    order = draw(st.permutations(range(len(verdicts)))) if numbered else list(range(len(verdicts)))
    pairs = [[(claim, i + 1, texts[i]), (verdict, i + 1, verdicts[i])] for i in order]
    mutation = draw(st.sampled_from(["none", "none", *BROKEN]))
    target = draw(st.integers(0, len(pairs) - 1))
    unnumbered_index = None
    if mutation == "drop_verdict":
        pairs[target].pop(1)
    elif mutation == "extra_verdict":
        pairs[target].append((verdict, pairs[target][0][1], draw(st.booleans())))
    elif mutation == "orphan_verdict":
        pairs.insert(0, [(verdict, 1, draw(st.booleans()))])
    elif mutation == "drop_claim":
        pairs[target].pop(0)
    elif mutation == "parrot":
        pairs.insert(
            draw(st.integers(0, len(pairs))), [("raw", None, draw(st.sampled_from([parrot, f"{claim}: <the claim>"])))]
        )
    elif mutation == "mixed":  # one label line of a numbered reply without its number
        numbered, unnumbered_index = True, 2 * target + draw(st.integers(0, 1))
    elif mutation == "renumber":
        if len(pairs) < 2:
            pairs[target].append((verdict, pairs[target][0][1], True))  # a second verdict instead
        else:
            other = (target + 1) % len(pairs)
            numbered = True
            label, _, value = pairs[target][1]
            pairs[target][1] = (label, pairs[other][0][1], value)
    elif mutation == "two_way":
        label, number, _ = pairs[target][1]
        pairs[target][1] = (
            label,
            number,
            draw(st.sampled_from(["yes/no", "yes or no", "Yes (supported) or Verdict: no"])),
        )
    items = [item for pair in pairs for item in pair]
    reply = _with_prose(draw, _render(items, numbered, draw(decorations()), unnumbered_index))
    return reply, (verdicts if mutation == "none" else None)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["judge_faithfulness", "judge_context_recall"])
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=claim_replies())
def test_claim_replies_score_only_when_every_claim_has_one_verdict(metric, case):
    reply, verdicts = case
    got = score_reply(get_metric(metric).kernel, reply, 2)
    if verdicts is None:
        assert (got.score, got.status) == (None, "parse_error"), reply
        assert got.error
    else:
        assert got.status == "ok", (reply, got.error)
        assert got.score == pytest.approx(sum(verdicts) / len(verdicts))


# ----------------------------------------------------------------------------- answer correctness


@st.composite
def correctness_replies(draw):
    answer = draw(st.lists(st.booleans(), min_size=0, max_size=4))
    reference = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    numbered = draw(st.booleans())
    pairs = [[("Answer claim", i + 1, draw(CLAIM_TEXTS)), ("Verdict", i + 1, v)] for i, v in enumerate(answer)]
    pairs += [[("Reference claim", i + 1, draw(CLAIM_TEXTS)), ("Covered", i + 1, v)] for i, v in enumerate(reference)]
    mutation = draw(
        st.sampled_from(["none", "none", "drop_verdict", "extra_verdict", "wrong_kind", "parrot", "no_reference"])
    )
    target = draw(st.integers(0, len(pairs) - 1))
    if mutation == "drop_verdict":
        pairs[target].pop(1)
    elif mutation == "extra_verdict":
        label, number, _ = pairs[target][1]
        pairs[target].append((label, number, draw(st.booleans())))
    elif mutation == "wrong_kind":
        label, number, value = pairs[target][1]
        pairs[target][1] = ("Covered" if label == "Verdict" else "Verdict", number, value)
    elif mutation == "parrot":
        line = draw(
            st.sampled_from(
                [
                    "Verdict: yes (the reference states or implies it) or Verdict: no (it does not, or contradicts it)",
                    "Covered: yes (the answer states or implies it) or Covered: no (the answer misses it)",
                    "Reference claim: <the claim>",
                ]
            )
        )
        pairs.insert(draw(st.integers(0, len(pairs))), [("raw", None, line)])
    elif mutation == "no_reference":
        if not answer:
            mutation = "drop_verdict"
            pairs[target].pop(1)
        else:
            pairs = pairs[: len(answer)]
    items = [item for pair in pairs for item in pair]
    reply = _with_prose(draw, _render(items, numbered, draw(decorations())))
    return reply, ((answer, reference) if mutation == "none" else None)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(case=correctness_replies())
def test_answer_correctness_scores_only_when_every_claim_has_one_verdict(case):
    reply, expected = case
    got = score_reply(get_metric("judge_answer_correctness").kernel, reply)
    if expected is None:
        assert (got.score, got.status) == (None, "parse_error"), reply
    else:
        assert got.status == "ok", (reply, got.error)
        answer, reference = expected
        precision = sum(answer) / len(answer) if answer else 0.0
        recall = sum(reference) / len(reference)
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        assert got.score == pytest.approx(f1)


# ----------------------------------------------------------------------------- one verdict per passage


@st.composite
def passage_replies(draw, parrot):
    verdicts = draw(st.lists(st.booleans(), min_size=1, max_size=6))
    n = len(verdicts)
    numbered = draw(st.booleans())
    order = draw(st.permutations(range(n))) if numbered else list(range(n))
    items = [("Verdict", i + 1, verdicts[i]) for i in order]
    mutation = draw(
        st.sampled_from(["none", "none", "drop", "duplicate", "beyond", "parrot", "mixed", "claim_line", "two_way"])
    )
    target = draw(st.integers(0, n - 1))
    unnumbered_index = None
    if mutation == "drop" and n > 1:
        items.pop(target)
    elif mutation in ("drop", "duplicate"):  # (one passage: dropping its verdict leaves no label line at all)
        items.insert(target, ("Verdict", items[target][1], draw(st.booleans())))
    elif mutation == "beyond":
        items.append(("Verdict", n + 1, draw(st.booleans())))
    elif mutation == "parrot":
        items.insert(draw(st.integers(0, n)), ("raw", None, parrot))
    elif mutation == "mixed" and n > 1:
        numbered, unnumbered_index = True, target
    elif mutation == "mixed":  # one passage: nothing to mix with; a second verdict instead
        items.append(("Verdict", 1, draw(st.booleans())))
    elif mutation == "claim_line":
        items.insert(draw(st.integers(0, n)), ("Claim", None, "passage 1 says so"))
    elif mutation == "two_way":
        items[target] = ("Verdict", items[target][1], "yes/no")
    reply = _with_prose(draw, _render(items, numbered, draw(decorations()), unnumbered_index))
    return reply, n, (verdicts if mutation == "none" else None)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("metric", "parrot"),
    [
        (
            "judge_context_relevance",
            "Verdict <passage number>: yes (relevant) or Verdict <passage number>: no (not relevant)",
        ),
        (
            "judge_context_precision",
            "Verdict <passage number>: yes (useful) or Verdict <passage number>: no (not useful)",
        ),
    ],
)
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_passage_replies_score_only_when_every_passage_has_one_verdict(metric, parrot, data):
    assert parrot in get_metric(metric).kernel.template  # the instruction line really is the template's
    reply, n, verdicts = data.draw(passage_replies(parrot))
    got = score_reply(get_metric(metric).kernel, reply, n)
    if verdicts is None:
        assert (got.score, got.status) == (None, "parse_error"), reply
        return
    assert got.status == "ok", (reply, got.error)
    if metric == "judge_context_relevance":
        assert got.score == pytest.approx(sum(verdicts) / n)
    elif any(verdicts):
        assert got.score == pytest.approx(average_precision_score(verdicts, list(range(n, 0, -1))))
    else:
        assert got.score == 0.0


DECOMPOSED = ("judge_faithfulness", "judge_context_recall", "judge_answer_correctness")
PASSAGES = ("judge_context_relevance", "judge_context_precision")


def test_the_boundary_of_the_property_a_reply_without_any_label_line():
    """Documented (docs/judges.md): a packaged decomposed template's reply without verdicts is never a score.

    Only the template's own ``Score: 0`` (faithfulness: no claim; passages: a row without any)
    is read; a template of one's own (``score_fallback``) reads the ``Score:`` line.
    """
    for metric in DECOMPOSED + PASSAGES:
        kernel = get_metric(metric).kernel
        for reply in ("Reason: fine.\nScore: 2/4", "Reason: fine.", "Score: 0"):
            got = score_reply(kernel, reply, 3)
            zero = reply == "Score: 0" and metric == "judge_faithfulness"
            assert (got.score, got.status) == ((0.0, "ok") if zero else (None, "parse_error")), (metric, reply)
        own = replace(kernel, score_fallback=True)
        assert score_reply(own, "Reason: fine.\nScore: 2/4", 3).score == 0.5
        assert score_reply(own, "Reason: fine.", 3).status == "parse_error"
    for metric in PASSAGES:
        kernel = get_metric(metric).kernel
        assert score_reply(kernel, "Score: 0", 0).score == 0.0  # "If there are no passages, write 'Score: 0'"
        assert score_reply(kernel, "Score: 1", 0).status == "parse_error"


# ----------------------------------------------------------------------------- one score


@st.composite
def score_replies(draw, parrot):
    tenths = draw(st.integers(0, 10))
    forms = [f"{tenths / 10:g}", f"{tenths}/10"]
    lines = [f"Score: {draw(st.sampled_from(forms))}" for _ in range(draw(st.integers(1, 3)))]  # agreeing repeats
    mutation = draw(st.sampled_from(["none", "none", "parrot", "conflict", "no_score", "words"]))
    if mutation == "parrot":
        lines.insert(draw(st.integers(0, len(lines))), parrot)
    elif mutation == "conflict":
        lines.append(f"Score: {(tenths + draw(st.integers(1, 10))) % 11 / 10:g}")
    elif mutation == "no_score":
        lines = ["I think it is fine."]
    elif mutation == "words":
        lines[-1] += " (high)"
    lines.insert(draw(st.integers(0, len(lines))), "Reason: " + draw(st.sampled_from(["clear.", "off topic."])))
    return "\n".join(lines), (tenths / 10 if mutation == "none" else None)


@pytest.fixture(scope="module")
def user_template():
    rf.judge_metric("prop_politeness", "Is this polite? {answer}\nScore: <0 to 1>\nReason: <one sentence>", ["answer"])
    yield "prop_politeness"
    rf.unregister_metric("prop_politeness")


@pytest.mark.parametrize(
    ("metric", "parrot"),
    [("judge_answer_relevance", "Score: <a number between 0 and 1>"), ("prop_politeness", "Score: <0 to 1>")],
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_score_replies_score_only_with_one_agreed_score(user_template, metric, parrot, data):
    assert parrot in get_metric(metric).kernel.template
    reply, expected = data.draw(score_replies(parrot))
    got = score_reply(get_metric(metric).kernel, reply)
    if expected is None:
        assert (got.score, got.status) == (None, "parse_error"), reply
    else:
        assert (got.status, got.score) == ("ok", pytest.approx(expected)), (reply, got.error)


# ----------------------------------------------------------------------------- any text, and the full pipeline

LABEL_LINE = re.compile(r"^\s*(claim|verdict)(?: \d+)?:", re.IGNORECASE)
FRAGMENTS = [
    "Claim",
    "Verdict",
    " 1",
    " 2",
    ":",
    " yes",
    " no",
    " or",
    "/",
    "<the claim>",
    "Score: 1",
    "\n",
    " a",
    "**",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_any_text_never_raises_and_an_ok_claim_reply_pairs_every_claim(text):
    got = score_reply(get_metric("judge_faithfulness").kernel, text)
    assert got.status in ("ok", "parse_error")
    assert (got.score is None) == (got.status == "parse_error") == (got.error is not None)
    kinds = [m[1].lower() for m in map(LABEL_LINE.match, text.splitlines()) if m]
    if got.status == "ok" and kinds:  # decomposed: one verdict line per claim line
        assert kinds.count("claim") == kinds.count("verdict") >= 1, text


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(case=claim_replies(), passages=passage_replies("Verdict <passage number>: yes (relevant) or no"))
def test_the_metric_functions_read_replies_as_the_kernels_do(case, passages):
    """The full path (prompt, runner, re-ask off, aggregation) gives what score_reply gives."""
    reply, verdicts = case
    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["c1", "c2"]]})
    out = rf.judge_faithfulness(df, judge=lambda prompt: reply, cache=False, parse_retries=0)
    row = out.select("judge_faithfulness", "judge_faithfulness_status").row(0)
    assert row == ((None, "parse_error") if verdicts is None else (pytest.approx(sum(verdicts) / len(verdicts)), "ok"))
    reply, n, verdicts = passages
    df = pl.DataFrame({"question": ["q"], "contexts": [[f"p{i}" for i in range(n)]]})
    out = rf.judge_context_relevance(df, judge=lambda prompt: reply, cache=False, parse_retries=0)
    row = out.select("judge_context_relevance", "judge_context_relevance_status").row(0)
    assert row == ((None, "parse_error") if verdicts is None else (pytest.approx(sum(verdicts) / n), "ok"))
