"""parse_reply on langrag's rules (BaseEvaluator._parse_score_from_response and its tests), by hand.

langrag: lines stripped; a line starting with "Score:" (any case) holds a float or x/y, clamped
to [0, 1], later lines overwrite earlier ones; "Reason:" starts the reason and later lines
continue it; no score raised ValueError. ragframe: the same, but a missing score, 1/0, nan or
inf is a parse_error row, never an exception.
"""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_server import expected_score, reply_text

from ragframe.exceptions import InvalidParameterError
from ragframe.judges import ParsedReply, parse_replies, parse_reply, read_score
from ragframe.judges.parse import CORRECTNESS_LABELS, read_claim_verdicts, read_passage_verdicts


# --- langrag's own test cases --------------------------------------------------------------
def test_standard_format():
    parsed = parse_reply("Reason: The answer is well-grounded in the context.\nScore: 0.85")
    assert parsed == ParsedReply(0.85, "The answer is well-grounded in the context.", "ok", None)


def test_fraction_format():
    assert parse_reply("Reason: Good answer.\nScore: 8/10").score == pytest.approx(0.8)


def test_no_reason_is_none():
    assert parse_reply("Score: 0.9") == ParsedReply(0.9, None, "ok", None)


@pytest.mark.parametrize(("text", "score"), [("Score: 1.5", 1.0), ("Score: -0.5", 0.0), ("Score: 12/10", 1.0)])
def test_clamped(text, score):
    assert parse_reply(text).score == score


def test_missing_score_is_parse_error_not_exception():
    parsed = parse_reply("This response has no score.")
    assert (parsed.score, parsed.status) == (None, "parse_error")
    assert parsed.error == "no 'Score:' line in the reply: 'This response has no score.'"


# --- the rules, case by case ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("score: 0.5", 0.5),  # any case
        ("SCORE:0.25", 0.25),  # no space
        ("  Score: 0.7  ", 0.7),  # stripped
        ("Score: 4 / 5", 0.8),  # spaces around the slash
        ("Score: 0.8/1.0", 0.8),
        ("Score: 3/4", 0.75),
        ("Score: 1e-1", 0.1),
        ("Score: .5", 0.5),
        ("Score: 1", 1.0),
        ("Score: 0", 0.0),
        ("**Score:** 0.7", 0.7),  # markdown emphasis (tolerated beyond langrag)
        ("- Score: 0.6", 0.6),  # a list bullet
        ("Score: 0.4.", 0.4),  # one trailing period
    ],
)
def test_readable_scores(text, score):
    parsed = parse_reply(text)
    assert parsed.status == "ok" and parsed.error is None
    assert parsed.score == pytest.approx(score)


@pytest.mark.parametrize(
    "value",
    ["1/0", "0/0", "nan", "inf", "-inf", "high", "0.8 (high)", "8/10/2", "", "eight", "0.8 out of 1", "1/x"],
)
def test_unreadable_scores_are_parse_errors(value):
    parsed = parse_reply(f"Reason: r\nScore: {value}")
    assert (parsed.score, parsed.status) == (None, "parse_error")
    assert parsed.error.startswith("no readable score: 'Score:' followed by")
    assert parsed.reason == "r"  # the reason is kept even when the score is not


def test_last_readable_score_wins():
    assert parse_reply("Score: 0.2\nScore: 0.9").score == 0.9
    assert parse_reply("Score: 1/0\nScore: 0.3").score == 0.3
    assert parse_reply("Score: 0.3\nScore: 1/0").score == 0.3  # an unreadable line does not erase
    assert parse_reply("Score: 0.3\nScore: high\nScore: 7/10").score == pytest.approx(0.7)


def test_reason_collection():
    # langrag: the reason continues on later non-Score lines, also after the Score line
    assert parse_reply("Reason: first\nsecond line\nScore: 0.5\ntrailing").reason == "first second line trailing"
    # lines before "Reason:" are not the reason
    assert parse_reply("Preamble.\nReason: because\nScore: 1").reason == "because"
    # every Reason: line joins; blank lines do not enter
    assert parse_reply("Reason: a\n\nReason: b\nScore: 1").reason == "a b"
    # an empty reason is None
    assert parse_reply("Reason:\nScore: 1").reason is None
    assert parse_reply("REASON: upper\nScore: 1").reason == "upper"


@pytest.mark.parametrize("text", [None, "", "   \n  ", 3])
def test_no_text(text):
    assert parse_reply(text).status == "parse_error"


# --- JSON mode -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "score", "reason"),
    [
        ('{"score": 0.4, "reason": "partly"}', 0.4, "partly"),
        ('```json\n{"score": 0.4, "reason": "partly"}\n```', 0.4, "partly"),
        ('```\n{"score": 1}\n```', 1.0, None),
        ('Here is my verdict: {"score": "8/10", "reason": "good"} Thanks.', 0.8, "good"),
        ('{"Score": 2, "Reason": "over"}', 1.0, "over"),  # keys in any case; clamped
        ('{"score": -1}', 0.0, None),
        ('{"score": 0.5, "reason": ["a", "b"]}', 0.5, '["a", "b"]'),
    ],
)
def test_json_mode(text, score, reason):
    assert parse_reply(text, json_mode=True) == ParsedReply(score, reason, "ok", None)


@pytest.mark.parametrize(
    "text",
    ['{"reason": "no score"}', '{"score": "high"}', '{"score": true}', "[0.5]", "{not json}", "Score: 0.5", ""],
)
def test_json_mode_errors(text):
    parsed = parse_reply(text, json_mode=True)
    assert (parsed.score, parsed.status) == (None, "parse_error") and parsed.error


def test_json_mode_flag_checked():
    with pytest.raises(InvalidParameterError, match="json_mode must be True or False"):
        parse_reply("Score: 1", json_mode="yes")


# --- many replies, the fake server, totality ----------------------------------------------
def test_parse_replies_frame():
    out = parse_replies(pl.Series(["Reason: ok\nScore: 3/4", None, "nothing"]))
    assert out.schema == pl.Schema({"score": pl.Float64, "reason": pl.String, "status": pl.String, "error": pl.String})
    assert out.rows() == [
        (0.75, "ok", "ok", None),
        (None, None, "parse_error", "no reply"),
        (None, None, "parse_error", "no 'Score:' line in the reply: 'nothing'"),
    ]


@pytest.mark.parametrize("prompt", ["a", "is the answer faithful?", "x" * 37])
def test_fake_server_replies_parse_to_the_expected_score(prompt):
    assert parse_reply(reply_text(prompt)).score == pytest.approx(expected_score(prompt))
    as_json = parse_reply(reply_text(prompt, json_mode=True), json_mode=True)
    assert as_json.score == pytest.approx(expected_score(prompt))


def test_read_score():
    assert [read_score(v) for v in ("8/10", " 0.5 ", "1/0", "x")] == [0.8, 0.5, None, None]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('Score:Reason 0123456789./-eE{}"`*\nnainf')), max_size=60), st.booleans())
def test_never_raises_and_scores_stay_in_range(text, json_mode):
    parsed = parse_reply(text, json_mode=json_mode)
    assert parsed.status in ("ok", "parse_error")
    assert (parsed.score is None) == (parsed.status == "parse_error") == (parsed.error is not None)
    assert parsed.score is None or 0.0 <= parsed.score <= 1.0


# --- strict reading of decomposed replies (the rules of the module doc, one case each) -----


@pytest.mark.parametrize(
    ("text", "verdicts"),
    [
        ("Claim: a\nVerdict: yes\nClaim: b\nVerdict: no", (True, False)),
        ("- **Claim:** a\n- **Verdict:** Yes (supported)\n1. Claim: b\n2. Verdict: NO.", (True, False)),
        ("Claim 1: a\nVerdict [1]: yes\nClaim 2: b\nVerdict #2: no", (True, False)),
        ("Claim 1: a\nClaim 2: b\nVerdict 2: no\nVerdict 1: yes", (True, False)),  # by number
        ("Claim: a\nThe passage says so.\n\nVerdict: yes, no doubt", (True,)),  # prose between; 'no doubt' is text
        ("Claim: the time: noon\nVerdict: no", (False,)),  # a colon inside the claim
    ],
)
def test_claim_verdicts_read(text, verdicts):
    reading = read_claim_verdicts(text)
    assert (reading.verdicts, reading.error, reading.labelled) == ((verdicts,), None, True)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Claim: a\nClaim: b\nVerdict: yes", "claim 1 'a' has no 'Verdict:' line"),
        ("Claim: a\nVerdict: yes\nClaim: b", "claim 2 'b' has no 'Verdict:' line"),
        ("Verdict: yes\nClaim: a\nVerdict: yes", "a verdict before any claim: 'Verdict: yes'"),
        ("Claim: a\nVerdict: yes\nVerdict: no", "claim 1 'a' has more than one 'Verdict:' line"),
        ("Claim: a\nVerdict: yes/no", "a line with more than one verdict: 'Verdict: yes/no'"),
        ("Claim: a\nVerdict: yes or no", "a line with more than one verdict: 'Verdict: yes or no'"),
        ("Claim: a\nVerdict: partly", "unreadable verdict 'Verdict: partly': expected yes or no"),
        ("Claim: <the claim>\nVerdict: yes", "a claim that is the prompt's placeholder: 'Claim: <the claim>'"),
        ("Claim:\nVerdict: yes", "an empty claim: 'Claim:'"),
        (
            "Verdict <claim number>: yes",
            "unreadable line 'Verdict <claim number>: yes': expected 'Verdict:' or 'Verdict <number>:' with a number",
        ),
        ("Claim 1: a\nVerdict: yes", "numbered and unnumbered lines mixed ('Claim 1: a' and 'Verdict: yes')"),
        ("Claim 1: a\nVerdict 1: yes\nClaim 3: c\nVerdict 3: no", "claims numbered 1, 3: claim 2 is missing"),
        ("Claim 1: a\nClaim 1: b\nVerdict 1: yes", "claim 1 is listed twice"),
        ("Claim 1: a\nVerdict 1: yes\nVerdict 2: no", "a 'Verdict 2:' line, but there is no claim 2"),
        ("Claim 1: a\nVerdict 1: yes\nVerdict 1: no", "claim 1 'a' has 2 'Verdict 1:' lines"),
        (
            "Claim: a\nCovered: yes",
            "a 'Covered:' line ('Covered: yes'), but this prompt asks for 'Claim:' lines, "
            "each followed by one 'Verdict:' line",
        ),
    ],
)
def test_claim_verdicts_that_do_not_match_one_to_one(text, error):
    reading = read_claim_verdicts(text)
    assert (reading.verdicts, reading.error, reading.labelled) == ((), error, True)


def test_answer_correctness_labels():
    text = "Answer claim: a\nVerdict: yes\nReference claim: a\nCovered: yes\nReference claim: c\nCovered: no"
    assert read_claim_verdicts(text, CORRECTNESS_LABELS).verdicts == ((True,), (True, False))
    wrong = read_claim_verdicts("Reference claim: a\nVerdict: yes", CORRECTNESS_LABELS).error
    assert wrong == "a 'Verdict:' line after reference claim 1 'a', which takes 'Covered:'"


@pytest.mark.parametrize(
    ("text", "n", "verdicts", "error"),
    [
        ("Verdict 1: yes\nVerdict 2: no", 2, (True, False), None),
        ("Verdict 2: no\nVerdict 1: yes", 2, (True, False), None),
        ("Verdict for passage 1: yes\nVerdict for passage 2: no", 2, (True, False), None),
        ("Verdict: no\nVerdict: yes", 2, (False, True), None),
        ("Verdict 1: yes", 2, None, "no verdict for passage 2 (the row has 2 passages)"),
        ("Verdict 1: yes", 3, None, "no verdict for passages 2, 3 (the row has 3 passages)"),
        ("Verdict 1: yes\nVerdict 1: no\nVerdict 2: no", 2, None, "passage 1 has 2 verdicts (one expected)"),
        ("Verdict 1: yes\nVerdict 3: no", 2, None, "a verdict for passage 3, but the row has 2 passages"),
        (
            "Verdict: yes\nVerdict: no\nVerdict: no",
            2,
            None,
            "3 verdict lines for 2 passages (one per passage expected)",
        ),
        ("Verdict 1: yes", 0, None, "1 verdict lines for a row without passages"),
    ],
)
def test_passage_verdicts(text, n, verdicts, error):
    reading = read_passage_verdicts(text, n)
    assert (reading.verdicts, reading.error) == (((verdicts,) if verdicts else ()), error)


def test_a_reply_without_label_lines_is_not_decomposed():
    assert read_claim_verdicts("Reason: fine\nScore: 1").labelled is False
    assert read_passage_verdicts("Claims: none. My verdict: yes", 2).labelled is False  # labels start a line


def test_strict_scores():
    assert parse_reply("Score: 0.8\nScore: 8/10", strict=True).score == 0.8
    assert parse_reply("Score: 0.2\nScore: 0.9", strict=True).error == (
        "2 'Score:' lines give different scores (0.2, 0.9); one score expected"
    )
    assert parse_reply("Score: 0.2\nScore: 0.9").score == 0.9  # langrag's rule without strict
