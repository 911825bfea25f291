"""The citations family: ALCE citation recall/precision and TREC RAG weighted support, on hand-worked cases."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_server import FakeJudgeServer

import ragframe as rf
from ragframe.metrics.citations import CITATION_METRICS, read_pair_labels
from ragframe.metrics.text_engine import stop_words

CONTEXTS = ["Paris is the capital of France.", "The Louvre is in Paris."]
ANSWER = (
    "Paris is the capital of France [1]. It has the Louvre [1][2]. "
    "Paris has the Louvre and the Eiffel tower [2]. Lyon is big."
)


def _scores(frame, **options):
    return rf.evaluate(frame, list(CITATION_METRICS), **options).select(CITATION_METRICS)


def test_hand_worked_marker_answer():
    """Pairs: s1-p1 full (all of paris, capital, france); s2-p1 none (louvre missing), s2-p2 full; s3-p2 half of
    paris, louvre, eiffel, tower: inside the band, partial without a judge; s4 cites nothing."""
    got = _scores(pl.DataFrame({"answer": [ANSWER], "contexts": [CONTEXTS]})).row(0, named=True)
    assert got["weighted_support_precision"] == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert got["weighted_support_recall"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert got["citation_recall"] == 2 / 4  # s1, s2 have a fully supporting citation
    # ALCE precision: s1's citation relevant; s2's [1] irrelevant ([2] alone entails), [2] relevant; s3's not entailing
    assert got["citation_precision"] == 2 / 4


def test_trec_format_zero_based_and_a_citation_outside_the_list():
    frame = pl.DataFrame(
        {
            "answer_sentences": [["Paris is the capital of France.", "The Louvre is in Paris."]],
            "sentence_citations": [[[0], [1, 5]]],
            "contexts": [CONTEXTS],
        }
    )
    got = _scores(frame).row(0, named=True)
    # s1-p0 full; s2-p1 full, s2-p5 (no such passage) none: ALCE scores a sentence citing a missing passage 0,
    # so s2 counts for neither ALCE score; TREC's weights keep s2-p1's full support
    assert got == {"citation_recall": 0.5, "citation_precision": 1 / 3, "weighted_support_precision": 2 / 3,
                   "weighted_support_recall": 1.0}  # fmt: skip
    marker = _scores(pl.DataFrame({"answer": ["Paris is the capital of France [1]. The Louvre is in Paris [2][6]."],
                                   "contexts": [CONTEXTS]}))  # fmt: skip
    assert marker.row(0, named=True) == got  # the same answer written with 1-based markers


def test_nulls_empties_and_uncited_answers():
    frame = pl.DataFrame(
        {"answer": [None, "", "No citation here.", "Paris is the capital of France [1]."],
         "contexts": [CONTEXTS, CONTEXTS, CONTEXTS, None]},
    )  # fmt: skip
    scores = _scores(frame)
    assert scores.row(0) == (None,) * 4 and scores.row(3) == (None,) * 4
    assert scores.row(1) == (0.0,) * 4 and scores.row(2) == (0.0,) * 4  # no sentence / no citation: 0, as ALCE


def test_the_band_decides_what_is_uncertain():
    frame = pl.DataFrame({"answer": ["Paris has the Louvre and the Eiffel tower [2]."], "contexts": [CONTEXTS]})
    assert _scores(frame, citation_band=(0.2, 0.5))["citation_recall"][0] == 1.0  # 0.5 >= hi: full
    assert _scores(frame, citation_band=(0.5, 0.9))["weighted_support_precision"][0] == 0.0  # 0.5 <= lo: none
    with pytest.raises(rf.InvalidParameterError, match="citation_band"):
        rf.evaluate(frame, ["citation_recall"], citation_band=(0.9, 0.1))


def _alce(sentences: list[list[int]], full: list[list[bool]], n_passages: int) -> tuple[float, float]:
    """ALCE's compute_autoais loop (Gao et al. 2023), with the entailment of a set of passages = one of them is full."""
    entail = entail_prec = total = 0
    for cited, supports in zip(sentences, full):
        label = dict(zip(cited, supports))
        joint = 0 if not cited or any(c >= n_passages for c in cited) else int(any(supports))
        entail += joint
        if joint and len(cited) > 1:
            for c in cited:
                if label[c]:
                    entail_prec += 1
                elif not any(label[o] for o in cited if o != c):  # the others without it do not entail: relevant
                    entail_prec += 1
        else:
            entail_prec += joint
        total += len(cited)
    return (entail / len(sentences) if sentences else 0.0), (entail_prec / total if total else 0.0)


WORDS = ["paris", "capital", "france", "louvre", "museum", "river", "seine", "tower"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_alce_definitions_on_random_answers(data):
    passages = [" ".join(data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))) + "." for _ in range(3)]
    sentences, cited = [], []
    for _ in range(data.draw(st.integers(1, 5))):
        words = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        refs = data.draw(st.lists(st.integers(0, 3), max_size=3, unique=True))
        sentences.append(" ".join(words).capitalize() + "".join(f"[{r + 1}]" for r in refs) + ".")
        cited.append(refs)
    answer = " ".join(sentences)
    out = _scores(pl.DataFrame({"answer": [answer], "contexts": [passages]}), citation_band=(0.0, 1.0))
    stop = set(stop_words().to_list())
    full = []
    for sentence, refs in zip(sentences, cited):
        words = set(re.sub(r"\[\d+\]", "", sentence).lower().strip(".").split()) - stop
        full.append([r < 3 and words <= set(passages[r].strip(".").split()) for r in refs])
    recall, precision = _alce(cited, full, 3)
    assert out["citation_recall"][0] == pytest.approx(recall)
    assert out["citation_precision"][0] == pytest.approx(precision)


def test_read_pair_labels_is_strict():
    assert read_pair_labels("Pair 2: partial\nPair 1: FULL", 2) == ([2, 1], None)
    assert read_pair_labels("Pair 1: full\nPair 1: none", 1)[1].startswith("pair 1 answered twice")
    assert read_pair_labels("Pair 1: full", 2)[1].startswith("no line for pair 2")


def test_a_judge_labels_the_uncertain_pairs_of_a_row_in_one_call():
    frame = pl.DataFrame({"answer": [ANSWER, "Paris is the capital of France [1]."], "contexts": [CONTEXTS] * 2})
    calls = []

    def judge(prompt):
        calls.append(prompt)
        return "Pair 1: full"

    out = rf.evaluate(frame, list(CITATION_METRICS), judge=judge, cache=False)
    assert len(calls) == 1 and "Eiffel" in calls[0]  # the one uncertain pair; row 2 is decided lexically
    assert out["weighted_support_precision"][0] == pytest.approx(3 / 4)  # s3-p2 now full
    assert out["citation_judge_status"].to_list() == ["ok", "ok"]
    bad = rf.evaluate(frame, ["citation_recall"], judge=lambda p: "Pair 1: maybe", cache=False, parse_retries=0)
    assert bad["citation_recall"].to_list() == [None, 1.0]
    assert bad["citation_judge_status"][0] == "parse_error" and "unknown label" in bad["citation_judge_error"][0]


def test_the_fake_server_with_cache_and_statuses(tmp_path):
    pytest.importorskip("httpx")
    frame = pl.DataFrame({"answer": [ANSWER, ANSWER.replace("Eiffel", "Orsay")], "contexts": [CONTEXTS] * 2})
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=0)
        out = rf.evaluate(frame, list(CITATION_METRICS), judge=judge, cache=tmp_path / "c.sqlite3")
        assert len(server.log) == 2 and out["citation_judge_status"].to_list() == ["ok", "ok"]
        for prompt in sorted(r.prompt for r in server.log):
            label = ("none", "partial", "full")[(1 + len(prompt)) % 3]
            weight = {"none": 0.0, "partial": 0.5, "full": 1.0}[label]
            expected = (1 + 0 + 1 + weight) / 4
            assert expected in out["weighted_support_precision"].to_list()
        again = rf.evaluate(frame, list(CITATION_METRICS), judge=judge, cache=tmp_path / "c.sqlite3")
        assert len(server.log) == 2 and again.equals(out)
        server.rules["Orsay"] = "500"
        failed = rf.evaluate(frame, ["citation_recall"], judge=judge, cache=False)
        assert (
            failed["citation_judge_status"].to_list() == ["ok", "http_error"] and failed["citation_recall"][1] is None
        )


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        ({"answer_sentences": [["a"]], "sentence_citations": [[[0], [1]]]}, r"one citation list per sentence.*row 0"),
        ({"answer_sentences": [["a"]], "sentence_citations": [[None]]}, r"null citation list or index.*row 0"),
        ({"answer_sentences": [["a"]], "sentence_citations": [["0"]]}, r"wrong dtype \[column 'sentence_citations'\]"),
    ],
)
def test_wrong_shaped_citations_are_typed_errors(columns, match):
    frame = pl.DataFrame({**columns, "contexts": [CONTEXTS]})
    with pytest.raises(rf.SchemaError, match=match):
        rf.evaluate(frame, ["citation_recall"])


def test_columnar_on_many_rows_equals_row_by_row():
    rng = np.random.default_rng(3)
    answers = [" ".join(f"Paris {w} [{rng.integers(1, 4)}]." for w in rng.choice(WORDS, 3)) for _ in range(50)]
    frame = pl.DataFrame({"answer": answers, "contexts": [["paris capital", "louvre paris", "seine"]] * 50})
    whole = _scores(frame)
    assert all(_scores(frame.slice(i, 1)).row(0) == whole.row(i) for i in range(0, 50, 7))


def test_explain_names_the_unsupported_citations_and_sentences():
    out = rf.evaluate(pl.DataFrame({"answer": [ANSWER, None], "contexts": [CONTEXTS] * 2}),
                      ["citation_precision", "citation_recall"], explain=True)  # fmt: skip
    precision = out["citation_precision_signals"][0].to_list()
    assert [(s["id"], s["message"]) for s in precision] == [
        ("unsupported_citation", "sentence 2: passage 1 does not support it"),
        ("partially_supported_citation", "sentence 3: passage 2 supports part of it"),
    ]
    assert precision[0]["evidence"] == "It has the Louvre."
    recall = out["citation_recall_signals"][0].to_list()
    assert [s["message"] for s in recall] == [
        "sentence 3: no cited passage fully supports it",
        "sentence 4: no cited passage fully supports it",
    ]
    assert out["citation_recall_signals"][1].to_list() == []


def test_ragframe_eval_scores_the_claim_level_metrics(tmp_path, capsys):
    """The command line: nuggets with assignments, citations and RAGChecker verdicts, renamed by --column."""
    from ragframe.cli.main import main

    log = tmp_path / "log.parquet"
    pl.DataFrame(
        {
            "id": [1, 2],
            "response": [ANSWER, "Lyon is big."],
            "contexts": [CONTEXTS] * 2,
            "nuggets": pl.Series([[{"text": "Paris", "importance": "vital", "assignment": "support"}], []],
                                 dtype=pl.List(pl.Struct({"text": pl.String, "importance": pl.String,
                                                          "assignment": pl.String}))),
            "answer2response": [["Entailment", "Neutral"], []],
        }
    ).write_parquet(log)  # fmt: skip
    out = tmp_path / "out"
    metrics = ["nugget_all", "citation_recall", "weighted_support_precision", "ragchecker_precision"]
    assert main(["eval", str(log), "-o", str(out), "--metrics", *metrics, "--column", "answer=response"]) == 0
    scores = pl.read_parquet(out / "scores").sort("id")
    assert scores["nugget_all"].to_list() == [1.0, 0.0]
    assert scores["citation_recall"].to_list() == [0.5, 0.0]
    assert scores["ragchecker_precision"].to_list() == [0.5, 0.0]
    assert "citation_recall" in capsys.readouterr().out


def test_lexical_labels_against_ragcheckers_llm_verdicts():
    """The agreement docs/claims.md reports: RAGChecker's 171 claim x passage verdicts on its two example rows."""
    import json

    from conftest import shared_path

    from ragframe.metrics.citations import citation_pairs

    folder = shared_path("ragchecker_human_labels")
    inputs = json.loads((folder / "checking_inputs.json").read_text(encoding="utf-8"))["results"]
    outputs = json.loads((folder / "checking_outputs.json").read_text(encoding="utf-8"))["results"]
    rows, entailed = [], []
    for item, checked in zip(inputs, outputs):
        passages = [c["text"] for c in item["retrieved_context"]]
        for claims, matrix in ((checked["response_claims"], checked["retrieved2response"]),
                               (checked["gt_answer_claims"], checked["retrieved2answer"])):  # fmt: skip
            rows.append({"answer_sentences": [" ".join(c) for c in claims], "contexts": passages,
                         "sentence_citations": [list(range(len(passages)))] * len(claims)})  # fmt: skip
            entailed += [v == "Entailment" for claim in matrix for v in claim]
    _, pairs, _ = citation_pairs(pl.DataFrame(rows), {"citation_band": (0.2, 0.8)})
    label, truth = pairs["label"].to_numpy(), np.array(entailed)
    assert (label.size, truth.sum()) == (171, 35)
    full, none = label == 2, label == 0
    assert (full.sum(), (full & truth).sum(), none.sum(), (none & truth).sum()) == (21, 19, 87, 0)
