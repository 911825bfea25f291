"""rf.generate_testset with a scripted judge: counts or stated shortfalls, qrels equal to the chunks shown,
every failure path, duplicates, grounding, byte-identical reruns, budgets, dry runs, order invariance."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from testset_judge import ScriptedTestsetJudge, passages_of

import ragframe as rf
from ragframe.testsets.lexical import DUPLICATE_JACCARD, near_duplicates, shingle_jaccard
from ragframe.testsets.plan import anchor_order, read_corpus

TOPICS = {
    "eiffel": [
        "The Eiffel Tower was finished in 1889 for the World Fair in Paris. It is 330 metres tall.",
        "Gustave Eiffel designed the Eiffel Tower structure with his engineering company.",
        "The Eiffel Tower is repainted every seven years with sixty tonnes of paint.",
    ],
    "liberty": [
        "The Statue of Liberty was dedicated in 1886 in New York Harbor. It was a gift from France.",
        "Frederic Bartholdi designed the Statue of Liberty, and Gustave Eiffel built its iron frame.",
    ],
    "everest": [
        "Mount Everest is the highest mountain on Earth at 8849 metres above sea level.",
        "Tenzing Norgay and Edmund Hillary first climbed Mount Everest in 1953.",
    ],
    "nile": [
        "The Nile river flows north through eleven countries into the Mediterranean Sea.",
        "The Aswan High Dam on the Nile river was completed in 1970 in Egypt.",
    ],
    "moon": [
        "Apollo 11 landed on the Moon in July 1969 with Neil Armstrong and Buzz Aldrin.",
        "The Moon orbits Earth every 27 days at an average distance of 384400 kilometres.",
    ],
}


def corpus_of(topics: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(doc, f"{doc}-{i}", text) for doc, texts in topics.items() for i, text in enumerate(texts)]
    return pl.DataFrame(rows, schema=["doc_id", "chunk_id", "text"], orient="row")


CORPUS = corpus_of(TOPICS)


class Recording:
    """A judge that records each generation prompt and the question it answered."""

    def __init__(self, inner: ScriptedTestsetJudge) -> None:
        self.inner = inner
        self.prompts: dict[str, str] = {}

    def __call__(self, prompt: str) -> str:
        reply = self.inner(prompt)
        for line in reply.splitlines():
            if line.startswith("Question: "):
                self.prompts[line[len("Question: ") :]] = prompt
        return reply


def test_requested_count_types_and_contract() -> None:
    judge = ScriptedTestsetJudge()
    ts = rf.generate_testset(CORPUS, 8, judge=judge.judge(), cache=False)
    assert ts.height == 8 and ts["_status"].to_list() == ["ok"] * 8
    # default mix 0.4/0.25/0.15/0.2 of 8 = 3.2, 2, 1.2, 1.6: floors 3, 2, 1, 1; one left: the largest remainder (.6)
    assert ts["query_type"].value_counts(sort=True).sort("query_type").rows() == [
        ("comparison", 1), ("multi_chunk", 2), ("single_chunk", 3), ("unanswerable", 2),
    ]  # fmt: skip
    assert ts.schema["nuggets"] == pl.List(
        pl.Struct({"text": pl.String, "importance": pl.String, "assignment": pl.String})
    )
    assert ts.schema["relevant_ids"] == pl.List(pl.String)
    assert ts["id"].n_unique() == 8
    texts = dict(CORPUS.select("chunk_id", "text").iter_rows())
    for row in ts.iter_rows(named=True):
        assert row["reference_contexts"] == [texts[c] for c in row["relevant_ids"]]
        if row["query_type"] == "unanswerable":
            assert row["relevant_ids"] == [] and row["nuggets"] == []
        else:
            assert len(row["relevant_ids"]) == (1 if row["query_type"] == "single_chunk" else 2)
            assert all(n["importance"] == "vital" and n["assignment"] is None for n in row["nuggets"])
        docs = CORPUS.filter(pl.col("chunk_id").is_in(row["relevant_ids"]))["doc_id"].unique().to_list()
        if row["query_type"] == "comparison":
            assert len(docs) == 2  # two documents compared


def test_relevant_ids_are_exactly_the_chunks_the_prompt_showed() -> None:
    recording = Recording(ScriptedTestsetJudge())
    ts = rf.generate_testset(CORPUS, 10, judge=rf.judges.CallableJudge(recording, name="rec"), cache=False)
    texts = dict(CORPUS.select("chunk_id", "text").iter_rows())
    for row in ts.filter(pl.col("_status") == "ok").iter_rows(named=True):
        shown = passages_of(recording.prompts[row["question"]])
        if row["query_type"] == "unanswerable":
            assert row["relevant_ids"] == [] and len(shown) == 1
            continue
        assert shown == [texts[c] for c in row["relevant_ids"]]


def _failure_corpus() -> pl.DataFrame:
    cues = {
        "g": "GARBAGE The lighthouse at Alexandria was one of the seven wonders of the ancient world.",
        "r": "REFUSE The Great Wall of China is longer than twenty thousand kilometres in total.",
        "f": "FLAKY The Amazon rainforest produces a large share of the oxygen of South America.",
        "u": "UNGROUNDED The Sahara desert covers most of North Africa and grows every decade.",
        "q": "GENERIC The Danube river flows through ten countries before reaching the Black Sea.",
        "l": "RATE The Colosseum in Rome held about fifty thousand spectators for public games.",
        "t": "TIMEOUT The Taj Mahal in Agra was built by Shah Jahan as a tomb for his wife.",
        "d1": "DUPLICATE Honey bees honey bees make honey from nectar collected from many flowers.",
        "d2": "DUPLICATE Honey bees honey bees live in colonies with one queen and many workers.",
    }
    return pl.DataFrame({"doc_id": list(cues), "chunk_id": [f"{k}-0" for k in cues], "text": list(cues.values())})


def test_every_failure_path_is_a_stated_rejection() -> None:
    corpus = _failure_corpus()
    judge = ScriptedTestsetJudge()
    ts = rf.generate_testset(corpus, 9, judge=judge.judge(), query_types=["single_chunk"], max_rounds=1, cache=False)
    assert ts.height == 9  # never silently short: every requested row is there, ok or with its reason
    counts = dict(rf.generation_rejections(ts).rows())
    assert counts == {"parse_error": 2, "rate_limited": 1, "timeout": 1, "ungrounded": 1, "generic": 1, "duplicate": 1}
    ok = ts.filter(pl.col("_status") == "ok")
    assert ok.height == 2  # FLAKY (read on its re-ask) and the first DUPLICATE
    kept = sorted(r[0][0] for r in ok.select("relevant_ids").rows())  # the DUPLICATE whose slot comes first stays
    assert kept in (["d1-0", "f-0"], ["d2-0", "f-0"])
    missing = ts.filter(pl.col("_status") != "ok")
    assert set(missing["_status"]) == {"failed", "filtered"}
    assert missing["_error"].null_count() == 0 and missing["question"].null_count() == missing.height
    errors = " ".join(missing["_error"].to_list())
    for phrase in ("parse_error", "rate_limited", "timeout", "ungrounded", "generic", "duplicate"):
        assert phrase in errors


def test_shortfalls_are_refilled_from_the_next_anchors() -> None:
    corpus = pl.concat([_failure_corpus(), CORPUS])
    judge = ScriptedTestsetJudge()
    ts = rf.generate_testset(corpus, 12, judge=judge.judge(), query_types=["single_chunk"], max_rounds=4, cache=False)
    assert ts["_status"].to_list() == ["ok"] * 12  # 9 good chunks + FLAKY + one DUPLICATE + ... refill the slots
    assert rf.generation_rejections(ts)["candidates"].sum() >= 1
    questions = ts["question"].to_list()
    similarity = shingle_jaccard(questions)
    np.fill_diagonal(similarity, 0)
    assert similarity.max() < DUPLICATE_JACCARD  # no duplicates left


def test_exhausted_corpus_says_so() -> None:
    ts = rf.generate_testset(CORPUS.head(2), 4, judge=ScriptedTestsetJudge().judge(), query_types=["single_chunk"],
                             cache=False)  # fmt: skip
    assert ts["_status"].to_list() == ["ok", "ok", "exhausted", "exhausted"]
    assert "chunks were all tried" in ts["_error"][2]


def test_grounding_judge_decides_inside_the_band() -> None:
    topics = {**TOPICS, "deny": ["DENY The Panama Canal opened in 1914 and links the Atlantic and Pacific oceans."]}
    judge = ScriptedTestsetJudge()
    corpus = corpus_of(topics)
    ts = rf.generate_testset(corpus, corpus.height, judge=judge.judge(), query_types=["single_chunk"],
                             grounding_band=(0.0, 1.0), max_rounds=1, cache=False)  # fmt: skip
    assert judge.calls["grounding"] == corpus.height  # every answer in the band [0, 1]: each asked once
    assert dict(rf.generation_rejections(ts).rows()) == {"ungrounded_judge": 1}
    denied = ts.filter(pl.col("_status") != "ok")
    assert "faithfulness judge" in denied["_error"][0]
    # default band [0.2, 0.6]: these answers copy their chunk (heuristic faithfulness 1.0), no judge call
    judge2 = ScriptedTestsetJudge()
    rf.generate_testset(corpus, 5, judge=judge2.judge(), query_types=["single_chunk"], cache=False)
    assert judge2.calls["grounding"] == 0


def test_rerun_with_cache_is_byte_identical_and_sends_nothing(tmp_path) -> None:
    cache = tmp_path / "judge.sqlite3"
    judge = ScriptedTestsetJudge(rates={"FLAKY": 0.3, "GARBAGE": 0.1, "DUPLICATE": 0.2})
    out = []
    for _ in range(2):
        buffer = io.BytesIO()
        rf.generate_testset(CORPUS, 8, judge=judge.judge(), cache=cache, seed=3).write_parquet(buffer)
        out.append(buffer.getvalue())
    first_calls = sum(judge.calls.values())
    assert out[0] == out[1]
    fresh = ScriptedTestsetJudge(rates={"FLAKY": 0.3, "GARBAGE": 0.1, "DUPLICATE": 0.2})
    buffer = io.BytesIO()
    rf.generate_testset(CORPUS, 8, judge=fresh.judge(), cache=cache, seed=3).write_parquet(buffer)
    assert buffer.getvalue() == out[0]
    assert sum(fresh.calls.values()) == 0 and first_calls > 0  # answered by the cache (re-asks included)


def test_row_order_of_the_corpus_does_not_matter() -> None:
    judge = ScriptedTestsetJudge(rates={"GARBAGE": 0.2})
    base = rf.generate_testset(CORPUS, 9, judge=judge.judge(), cache=False, seed=5)
    shuffled = CORPUS.sample(fraction=1.0, shuffle=True, seed=11)
    assert shuffled["chunk_id"].to_list() != CORPUS["chunk_id"].to_list()
    assert rf.generate_testset(shuffled, 9, judge=judge.judge(), cache=False, seed=5).equals(base)
    other_seed = rf.generate_testset(CORPUS, 9, judge=judge.judge(), cache=False, seed=6)
    assert not other_seed.equals(base)


def test_plan_is_stratified_by_document() -> None:
    corpus = read_corpus(CORPUS, "doc_id", "chunk_id", "text")
    order = anchor_order(corpus, 0, "single_chunk")
    docs = corpus.frame["doc_id"].gather(order).to_list()
    assert len(set(docs[:5])) == 5  # the first chunk of each of the 5 documents before any second one
    assert sorted(order.tolist()) == list(range(corpus.height))


@pytest.mark.parametrize("budget", [3, 5, 9])
def test_budget_is_a_hard_cap(budget: int) -> None:
    judge = ScriptedTestsetJudge(rates={"FLAKY": 0.4, "GARBAGE": 0.2})
    ts = rf.generate_testset(CORPUS, 8, judge=judge.judge(), cache=False, budget=budget, grounding_band=(0.0, 1.0))
    assert sum(judge.calls.values()) <= budget
    assert ts.height == 8
    short = ts.filter(pl.col("_status") != "ok")
    assert short.height >= 8 - budget
    assert "budget" in set(short["_status"]) and short["_error"].null_count() == 0


def test_dry_run_calls_nothing_and_shows_the_plan() -> None:
    judge = ScriptedTestsetJudge()
    plan = rf.generate_testset(CORPUS, 6, judge=judge.judge(), cache=False, dry_run=True)
    assert sum(judge.calls.values()) == 0
    assert plan.height == 6 and set(plan["_status"]) == {"skipped"}
    assert (plan["input_tokens"] == (plan["prompt"].str.len_chars().cast(pl.Int64) + 3) // 4).all()  # ceil(chars / 4)
    ts = rf.generate_testset(CORPUS, 6, judge=judge.judge(), cache=False)
    assert plan["relevant_ids"].to_list() == ts["relevant_ids"].to_list()  # no rejection: round 1 is the set


def test_the_set_is_scored_by_evaluate_run_and_evaluate(tmp_path) -> None:
    ts = rf.generate_testset(CORPUS, 8, judge=ScriptedTestsetJudge().judge(), cache=False)
    path = tmp_path / "testset.parquet"
    ts.write_parquet(path)
    back = pl.read_parquet(path)
    qrels = rf.generated_qrels(back)
    assert qrels.height == sum(len(r) for r in back["relevant_ids"])
    # a run that ranks each question's own chunks first, then the rest: perfect on the answerable ones
    ids = CORPUS["chunk_id"].to_list()
    run_rows = []
    for qid, rel in back.select("id", "relevant_ids").rows():
        ranked = list(rel) + [c for c in ids if c not in rel]
        run_rows += [(qid, doc, float(len(ranked) - i)) for i, doc in enumerate(ranked)]
    run = pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row")
    per_query = rf.evaluate_run(run, qrels, k=[10])
    answerable = per_query.filter(pl.col("num_rel") > 0)
    assert answerable.height == back.filter(pl.col("query_type") != "unanswerable").height
    assert answerable["ndcg_at_10"].to_list() == [1.0] * answerable.height
    log = back.with_columns(answer=pl.col("ground_truth"), contexts=pl.col("reference_contexts"),
                            retrieved_ids=pl.col("relevant_ids"))  # fmt: skip
    scored = rf.evaluate(log, ["faithfulness", "answer_correctness", "mrr"])
    answered = scored.filter(pl.col("query_type") != "unanswerable")
    assert answered["faithfulness"].min() == 1.0 and answered["mrr"].to_list() == [1.0] * answered.height


def test_corpus_errors_name_column_and_row() -> None:
    judge = ScriptedTestsetJudge().judge()
    repeated = CORPUS.with_columns(chunk_id=pl.Series(["a", "b", "c", "a"] + [f"z{i}" for i in range(7)]))
    with pytest.raises(rf.SchemaError, match=r"chunk ids must be unique.*column 'chunk_id', row 3"):
        rf.generate_testset(repeated, 2, judge=judge, cache=False)
    blank = CORPUS.with_columns(text=pl.when(pl.int_range(pl.len()) == 1).then(pl.lit("  ")).otherwise("text"))
    with pytest.raises(rf.SchemaError, match=r"a chunk without text.*column 'text', row 1"):
        rf.generate_testset(blank, 2, judge=judge, cache=False)
    with pytest.raises(rf.SchemaError, match="body"):
        rf.generate_testset(CORPUS, 2, judge=judge, text="body", cache=False)
    with pytest.raises(rf.InvalidParameterError, match="unknown query type 'essay'"):
        rf.generate_testset(CORPUS, 2, judge=judge, query_types=["essay"], cache=False)
    with pytest.raises(rf.InvalidParameterError, match="n"):
        rf.generate_testset(CORPUS, -1, judge=judge, cache=False)


def test_kinds_of_frames_and_int_ids() -> None:
    judge = ScriptedTestsetJudge().judge()
    arrow = rf.generate_testset(CORPUS.to_arrow(), 3, judge=judge, cache=False, query_types=["single_chunk"])
    pandas = rf.generate_testset(CORPUS.to_pandas(), 3, judge=judge, cache=False, query_types=["single_chunk"])
    assert type(arrow).__name__ == "Table" and type(pandas).__name__ == "DataFrame"
    numbered = CORPUS.with_columns(chunk_id=pl.int_range(100, 100 + pl.len(), dtype=pl.Int64))
    ts = rf.generate_testset(numbered, 3, judge=judge, cache=False, query_types=["single_chunk"])
    assert ts.schema["relevant_ids"] == pl.List(pl.Int64) and rf.generated_qrels(ts)["doc_id"].dtype == pl.Int64


def test_personas_language_and_seed_questions_reach_the_prompt() -> None:
    recording = Recording(ScriptedTestsetJudge())
    ts = rf.generate_testset(CORPUS, 4, judge=rf.judges.CallableJudge(recording, name="rec2"), cache=False,
                             personas=["a tour guide", "a student"], language="French", style="short",
                             seed_questions=["How tall is it?"])  # fmt: skip
    prompt = next(iter(recording.prompts.values()))
    assert "Ask as this person would: a" in prompt and "in French" in prompt and "- How tall is it?" in prompt
    assert set(ts["persona"]) <= {"a tour guide", "a student"}


def test_shingle_jaccard_by_hand_and_threshold() -> None:
    # "abcdef" -> {abcd, bcde, cdef}; "abcdeg" -> {abcd, bcde, cdeg}: 2 shared of 4
    assert shingle_jaccard(["abcdef", "abcdeg"])[0, 1] == pytest.approx(2 / 4)
    # content words "capital france" (11 shingles) inside "city capital france" (16): 11 / 16
    capital = ["What is the capital of France?", "Which city is the capital of France?"]
    assert shingle_jaccard(capital)[0, 1] == pytest.approx(11 / 16)
    assert near_duplicates(["What is the capital of France?", "what's the capital of France", "Who wrote Hamlet?"]) == [
        None, 0, None,
    ]  # fmt: skip
    assert near_duplicates(["When was Einstein born?", "When did Einstein die?"]) == [None, None]
    finished, repainted = "When was the Eiffel Tower finished?", "When was the Eiffel Tower repainted?"
    assert near_duplicates([finished, repainted]) == [None, None]  # 10 / 27: two questions, not one


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(0, 12),
    types=st.lists(
        st.sampled_from(["single_chunk", "multi_chunk", "comparison", "unanswerable"]), min_size=1, unique=True
    ),
    seed=st.integers(0, 5),
    garbage=st.sampled_from([0.0, 0.3]),
)
def test_properties(n: int, types: list[str], seed: int, garbage: float) -> None:
    judge = ScriptedTestsetJudge(rates={"GARBAGE": garbage, "DUPLICATE": 0.2}, seed=seed)
    ts = rf.generate_testset(CORPUS, n, judge=judge.judge(), query_types=types, seed=seed, cache=False)
    assert ts.height == n and ts["id"].n_unique() == n
    assert set(ts["query_type"]) <= set(types)
    ok = ts.filter(pl.col("_status") == "ok")
    assert ts.filter(pl.col("_status") != "ok")["_error"].null_count() == 0
    ids = set(CORPUS["chunk_id"])
    assert all(set(r) <= ids for r in ok["relevant_ids"])
    similarity = shingle_jaccard(ok["question"].to_list())
    np.fill_diagonal(similarity, 0)
    assert ok.height < 2 or similarity.max() < DUPLICATE_JACCARD


def test_reply_format_is_lines_not_json() -> None:
    from ragframe.testsets.prompts import TEMPLATES

    for template in TEMPLATES.values():
        assert "Question: <the question>" in template and "json" not in template.lower()


# ----------------------------------------------------------------------------- ragframe generate


def _scripted_server_reply(monkeypatch: pytest.MonkeyPatch, judge: ScriptedTestsetJudge) -> None:
    import judge_server

    def reply(prompt: str, *, json_mode: bool = False, echo: str | None = None) -> str:
        try:
            return judge(prompt)
        except Exception:  # the scripted faults that raise: an unreadable reply over HTTP
            return "(no reply)"

    monkeypatch.setattr(judge_server, "reply_text", reply)


@pytest.mark.slow
def test_cli_generate_writes_a_set_that_ragframe_eval_takes(tmp_path, monkeypatch, capsys) -> None:
    from judge_server import FakeJudgeServer

    from ragframe.cli.main import main

    judge = ScriptedTestsetJudge(rates={"FLAKY": 0.3})
    _scripted_server_reply(monkeypatch, judge)
    corpus = tmp_path / "corpus.parquet"
    CORPUS.write_parquet(corpus)
    with FakeJudgeServer() as server:
        server.queue("429")  # a 429 the client retries (Retry-After: 0)
        config = tmp_path / "judge.toml"
        config.write_text(
            f'seed = 2\nmax_rounds = 2\n[judge]\nmodel = "fake"\nbase_url = "{server.base_url}"\n'
            'api_key_env = "RAGFRAME_TEST_NO_KEY"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("RAGFRAME_TEST_NO_KEY", "sk-test-not-a-key")
        out = tmp_path / "testset.parquet"
        cache = tmp_path / "cache.sqlite3"
        argv = ["generate", str(corpus), "-o", str(out), "-n", "6", "--config", str(config), "--cache", str(cache)]
        assert main(argv) == 0
        first = out.read_bytes()
        sent = len(server.log)
        assert "6 of 6 questions generated (6 ok)" in capsys.readouterr().err
        assert main(argv) == 0  # again: from the cache, byte for byte, nothing sent
        assert out.read_bytes() == first and len(server.log) == sent
        assert main([*argv[:-2], "--no-cache", "--dry-run", "-o", str(tmp_path / "plan.parquet")]) == 0
        assert len(server.log) == sent and "dry run: 6 first-round prompts" in capsys.readouterr().err
    ts = pl.read_parquet(out)
    assert ts.height == 6 and ts["_status"].to_list() == ["ok"] * 6
    # the set as ragframe eval reads it: its own references against its own chunks, columns mapped
    mapped = ["--column", "answer=ground_truth", "--column", "contexts=reference_contexts"]
    scored = tmp_path / "scored"
    assert main(["eval", str(out), "-o", str(scored), *mapped, "--metrics", "faithfulness", "context_relevance"]) == 0
    assert pl.read_parquet(scored / "scores").height == 6


def test_cli_generate_usage_errors(tmp_path, capsys) -> None:
    from ragframe.cli.main import main

    corpus = tmp_path / "corpus.parquet"
    CORPUS.write_parquet(corpus)
    assert main(["generate", str(corpus), "-o", str(tmp_path / "x.parquet"), "-n", "2"]) == 2
    assert "a judge is needed" in capsys.readouterr().err
    config = tmp_path / "bad.toml"
    config.write_text("temperature = 3\n", encoding="utf-8")
    assert main(["generate", str(corpus), "-o", str(tmp_path / "x.parquet"), "-n", "2", "--config", str(config)]) == 2
    assert "unknown key 'temperature'" in capsys.readouterr().err


def test_concurrency_does_not_change_the_set() -> None:
    import asyncio

    scripted = ScriptedTestsetJudge(rates={"GARBAGE": 0.2, "FLAKY": 0.2, "DUPLICATE": 0.2})

    async def jittery(prompt: str) -> str:  # replies arrive in another order than asked
        await asyncio.sleep((hash(prompt) % 7) / 1000)
        return scripted(prompt)

    judge = rf.judges.CallableJudge(jittery, name="jittery")
    one = rf.generate_testset(CORPUS, 9, judge=judge, cache=False, max_concurrency=1)
    many = rf.generate_testset(CORPUS, 9, judge=judge, cache=False, max_concurrency=16)
    assert one.equals(many)


def test_cost_budget_is_a_hard_cap_on_reported_cost(monkeypatch) -> None:
    from judge_server import FakeJudgeServer

    _scripted_server_reply(monkeypatch, ScriptedTestsetJudge())
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge(
            "fake", base_url=server.base_url, api_key="sk-test", input_price_per_million=1e6,
            output_price_per_million=1e6, max_tokens=200,
        )  # fmt: skip
        ts = rf.generate_testset(CORPUS, 6, judge=judge, cache=False, budget={"cost": 2000.0})
        spent = judge.usage()["cost"].sum()
        assert 0 < spent <= 2000.0  # a token costs 1; each call is bounded by prompt bytes + 64 + 200 before it goes
        assert "budget" in set(ts["_status"]) and "ok" in set(ts["_status"])
    with pytest.raises(rf.InvalidParameterError, match="needs the judge's prices"):
        rf.generate_testset(CORPUS, 2, judge=ScriptedTestsetJudge().judge(), cache=False, budget={"cost": 1.0})


def test_fact_importance_and_lazy_frames() -> None:
    def judge(prompt: str) -> str:
        passage = passages_of(prompt)[0]
        return (
            f"**Question:** What is recorded about {passage.split()[1]} {passage.split()[2]}?\n"
            f"Answer: {passage}\n- Fact: {passage}\nFact (okay): {passage}"
        )

    lazy = rf.generate_testset(CORPUS.lazy(), 2, judge=judge, query_types=["single_chunk"], cache=False)
    assert isinstance(lazy, pl.LazyFrame)
    nuggets = lazy.collect()["nuggets"][0].to_list()
    assert [n["importance"] for n in nuggets] == ["vital", "okay"]


def test_bad_options_name_the_option() -> None:
    judge = ScriptedTestsetJudge().judge()
    for options, match in [
        ({"personas": []}, "personas must be a non-empty list"),
        ({"seed_questions": ["ok", ""]}, "seed_questions must be a non-empty list"),
        ({"language": " "}, "language must be a non-empty str"),
        ({"prompts": {"single_chunk": "no placeholder"}}, "prompts must be a dict"),
        ({"prompts": {"essay": "{passages}"}}, "unknown query type 'essay'"),
        ({"grounding_band": (0.7, 0.2)}, "lo <= hi"),
        ({"query_types": {"single_chunk": 0}}, "positive weight"),
        ({"duplicate_threshold": 1.5}, "duplicate_threshold"),
        ({"judge": None}, "judge must be a callable"),
    ]:
        kwargs = {"judge": judge, "cache": False, **options}
        with pytest.raises(rf.InvalidParameterError, match=match):
            rf.generate_testset(CORPUS, 2, **kwargs)


def test_a_custom_template_is_used() -> None:
    recording = Recording(ScriptedTestsetJudge())
    template = (
        "You write one question for testing a search and answer system.\nPassage:\n{passages}\n\nMine.\n{guidance}"
    )
    judge = rf.judges.CallableJudge(recording, name="rec3")
    rf.generate_testset(CORPUS, 2, judge=judge, query_types=["single_chunk"], prompts={"single_chunk": template},
                        cache=False)  # fmt: skip
    assert all("\nMine.\n" in p for p in recording.prompts.values()) and len(recording.prompts) == 2


def test_coverage_removes_multi_chunk_answers_that_ignore_a_chunk() -> None:
    def one_sided(prompt: str) -> str:  # uses the first passage only, whatever it is shown
        first = passages_of(prompt)[0]
        words = " ".join(first.split()[1:4])
        return f"Question: What is recorded about {words}?\nAnswer: {first}\nFact: {first}"

    judge = rf.judges.CallableJudge(one_sided, name="one-sided")
    ts = rf.generate_testset(CORPUS, 3, judge=judge, query_types=["multi_chunk"], max_rounds=1, cache=False)
    assert ts["_status"].to_list() == ["filtered"] * 3
    assert dict(rf.generation_rejections(ts).rows()) == {"coverage": 3}
    assert all("no fact draws on chunk" in e for e in ts["_error"])
    single = rf.generate_testset(CORPUS, 3, judge=judge, query_types=["single_chunk"], cache=False)
    assert single["_status"].to_list() == ["ok"] * 3  # one chunk: nothing to cover


@pytest.mark.slow
def test_benchmark_on_the_dl19_passages_passes_its_own_checks(capsys) -> None:
    """benchmarks/testset.py on real text: no duplicates kept, byte-identical rerun, budget kept (exit 0)."""
    data = shared_path("rankllm_dl_runs", "bm25_top100_with_text.dl19.json")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "testset.py"
    spec = importlib.util.spec_from_file_location("testset_benchmark", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["-n", "40", "--budget", "30", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "passages 4,297; requested 40" in out and "identical=True" in out


def test_budget_spent_on_generation_leaves_grounding_rows_as_budget() -> None:
    judge = ScriptedTestsetJudge()
    ts = rf.generate_testset(CORPUS, 4, judge=judge.judge(), query_types=["single_chunk"], cache=False, budget=4,
                             grounding_band=(0.0, 1.0))  # fmt: skip
    assert sum(judge.calls.values()) == 4 and judge.calls["grounding"] == 0  # 4 generations, no call left
    assert ts["_status"].to_list() == ["budget"] * 4
    assert all(e.startswith("not checked for grounding: budget") for e in ts["_error"])
    plan = rf.generate_testset(CORPUS, 4, judge=judge.judge(), query_types=["single_chunk"], cache=False, budget=3,
                               dry_run=True)  # fmt: skip
    assert [e.startswith("dry run: not called, and beyond the budget") for e in plan["_error"]] == [False] * 3 + [True]


def test_other_corpus_columns_travel_as_metadata() -> None:
    corpus = CORPUS.with_columns(
        url=pl.format("https://example.org/{}", "chunk_id"), id=pl.int_range(pl.len()), year=pl.lit(2024)
    )
    ts = rf.generate_testset(corpus.sample(fraction=1.0, shuffle=True, seed=1), 4, judge=ScriptedTestsetJudge().judge(),
                             query_types=["single_chunk", "multi_chunk"], cache=False)  # fmt: skip
    assert ts.columns[-3:] == ["url", "source_id", "year"]  # "id" is the set's own: the chunk's is source_id
    for row in ts.iter_rows(named=True):
        assert row["url"] == f"https://example.org/{row['relevant_ids'][0]}"
    short = rf.generate_testset(corpus.head(1), 2, judge=ScriptedTestsetJudge().judge(), query_types=["single_chunk"],
                                cache=False)  # fmt: skip
    assert short["url"].to_list() == ["https://example.org/eiffel-0", None]
