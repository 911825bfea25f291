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
