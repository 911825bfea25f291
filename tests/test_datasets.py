"""rf.read_dataset / rf.write_dataset: RAGAS, DeepEval, TREC RAG and RAGChecker files.

The ragas and deepeval fixtures in tests/data/datasets were written by ragas 0.4.3 and deepeval 4.3.1
themselves (tests/data/datasets/README.md); the expected values below are the samples given to them.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import ragframe as rf

DATA = Path(__file__).parent / "data" / "datasets"

EIFFEL = {
    "question": "Where is the Eiffel Tower?",
    "contexts": ["The Eiffel Tower is in Paris.", 'Paris is the capital of France, it\'s "big".'],
    "answer": "It is in Paris.",
    "ground_truth": "Paris, France.",
    "reference_contexts": ["The Eiffel Tower is in Paris."],
    "retrieved_ids": ["d1", "d7"],
    "relevant_ids": ["d1"],
}
RAGAS_EXPECTED = pl.DataFrame(
    [
        EIFFEL,
        {
            "question": "Wie hoch ist der Turm?",
            "contexts": ["Er ist 330 m hoch; früher 300 m."],
            "answer": "330 Meter.",
        },
        {"question": "No contexts here", "contexts": [], "answer": "Nothing retrieved."},
    ],
    schema={
        "question": pl.String,
        "contexts": pl.List(pl.String),
        "answer": pl.String,
        "ground_truth": pl.String,
        "reference_contexts": pl.List(pl.String),
        "retrieved_ids": pl.List(pl.String),
        "relevant_ids": pl.List(pl.String),
    },
)


# ----------------------------------------------------------------------------- RAGAS


@pytest.mark.parametrize("name", ["ragas_written.jsonl", "ragas_written.csv"])
def test_ragas_files_written_by_ragas_read_as_the_samples(name):
    got = rf.read_dataset(DATA / name, format="ragas")
    assert_frame_equal(got.select(RAGAS_EXPECTED.columns), RAGAS_EXPECTED)


def test_ragas_roundtrip_equals_ragas_bytes(tmp_path):
    df = rf.read_dataset(DATA / "ragas_written.jsonl", format="ragas")
    p = rf.write_dataset(df, tmp_path / "again.jsonl", format="ragas")
    mine = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]
    theirs = [json.loads(line) for line in (DATA / "ragas_written.jsonl").read_text(encoding="utf-8").splitlines()]
    assert mine == theirs
    assert [list(r) for r in mine] == [list(r) for r in theirs]  # same field order as ragas's to_dict


def test_ragas_csv_roundtrip(tmp_path):
    p = rf.write_dataset(RAGAS_EXPECTED, tmp_path / "ds.csv", format="ragas")
    assert_frame_equal(rf.read_dataset(p, format="ragas").select(RAGAS_EXPECTED.columns), RAGAS_EXPECTED)


def test_ragas_legacy_names():
    got = rf.read_dataset(DATA / "ragas_legacy.jsonl", format="ragas")
    assert got["question"].to_list() == ["What is BM25?", "Who wrote trec_eval?"]
    assert got["contexts"].to_list()[1] == ["trec_eval was written by Chris Buckley."]
    # ragas 0.1 took the first of ground_truths; an explicit ground_truth wins
    assert got["ground_truth"].to_list() == ["A bag-of-words ranking function.", "Chris Buckley"]
    assert got["ground_truths"].to_list() == [["A bag-of-words ranking function.", "Okapi BM25."], None]


def test_ragas_mixed_names_refused(tmp_path):
    p = tmp_path / "mixed.jsonl"
    p.write_text(json.dumps({"user_input": "q", "contexts": ["c"]}) + "\n")
    with pytest.raises(rf.SchemaError, match=r"mixes ragas >= 0\.2 fields"):
        rf.read_dataset(p, format="ragas")


def test_ragas_number_ids_become_text(tmp_path):
    p = tmp_path / "ids.jsonl"
    p.write_text(json.dumps({"user_input": "q", "retrieved_context_ids": [3, "x"]}) + "\n")
    assert rf.read_dataset(p, format="ragas")["retrieved_ids"].to_list() == [["3", "x"]]


# ----------------------------------------------------------------------------- DeepEval


def test_deepeval_goldens_written_by_deepeval():
    got = rf.read_dataset(DATA / "deepeval_goldens.json", format="deepeval")
    assert got.select("question", "answer", "ground_truth", "contexts", "reference_contexts").rows() == [
        (
            "Where is the Eiffel Tower?",
            "It is in Paris.",
            "Paris, France.",
            ["The Eiffel Tower is in Paris.", "Paris is big."],
            ["The Eiffel Tower is in Paris."],
        ),
        ("Wie hoch ist der Turm?", None, "330 m", None, None),
    ]
    assert got["additional_metadata"].to_list() == [None, {"lang": "de"}]


def test_deepeval_test_cases_written_by_deepeval():
    got = rf.read_dataset(DATA / "deepeval_test_cases.json", format="deepeval")
    assert got.select("question", "answer", "ground_truth", "contexts", "reference_contexts").rows() == [
        ("q1", "a1", "e1", ["r1", "r2"], ["c1"]),
        ("q2", "a2", None, None, None),
    ]


@pytest.mark.parametrize("name", ["deepeval_goldens.json", "deepeval_test_cases.json"])
def test_deepeval_file_written_back_is_deepevals_own(tmp_path, name):
    src = rf.read_dataset(DATA / name, format="deepeval")
    p = rf.write_dataset(src, tmp_path / name, format="deepeval")
    assert p.read_text(encoding="utf-8").rstrip("\n") == (DATA / name).read_text(encoding="utf-8").rstrip("\n")


def test_deepeval_roundtrip(tmp_path):
    src = rf.read_dataset(DATA / "deepeval_goldens.json", format="deepeval")
    p = rf.write_dataset(src, tmp_path / "g.json", format="deepeval")
    cols = ["question", "answer", "ground_truth", "contexts", "reference_contexts"]
    assert_frame_equal(rf.read_dataset(p, format="deepeval").select(cols), src.select(cols))
    # what deepeval's loaders look up: input, actual_output, expected_output, retrieval_context, context
    assert set(json.loads(p.read_text())[0]) >= {
        "input",
        "actual_output",
        "expected_output",
        "retrieval_context",
        "context",
    }


# ----------------------------------------------------------------------------- TREC RAG


def test_trec_rag_2024():
    got = rf.read_dataset(DATA / "trec_rag_2024.jsonl", format="trec_rag")
    first = got.row(0, named=True)
    assert first["topic_id"] == "2024-105741"
    assert first["question"] == "is it bad to have your circadian rhythm messed up"
    assert first["retrieved_ids"][2] == "msmarco_v2.1_doc_10_1132347614#2_2029470911"
    assert first["answer_sentences"] == [
        "A disrupted circadian rhythm is linked to poor sleep.",
        "It can also affect metabolism and mood.",
        "Consistent light exposure helps.",
    ]
    assert first["sentence_citations"] == [[0, 2], [1], []]
    assert first["answer"] == " ".join(first["answer_sentences"])
    assert got["response_length"].to_list() == [20, 5]


def test_trec_rag_2025_metadata():
    got = rf.read_dataset(DATA / "trec_rag_2025.jsonl", format="trec_rag")
    row = got.row(0, named=True)
    assert (row["run_id"], row["topic_id"], row["team_id"], row["narrative_id"]) == (
        "ragframe-fixture-25",
        "1",
        "rf",
        "n1",
    )
    assert row["question"].startswith("I want to understand")
    assert row["sentence_citations"] == [[0], [0, 1]]
    assert "response_length" not in got.columns


def test_trec_rag_roundtrip_gives_the_same_lines(tmp_path):
    src = rf.read_dataset(DATA / "trec_rag_2024.jsonl", format="trec_rag")
    p = rf.write_dataset(src, tmp_path / "run.jsonl", format="trec_rag")
    lines = [json.loads(line) for line in p.read_text().splitlines()]
    original = [json.loads(line) for line in (DATA / "trec_rag_2024.jsonl").read_text().splitlines()]
    assert lines == original
    # response_length computed from the sentences (whitespace words) equals the file's hand count
    p2 = rf.write_dataset(src.drop("response_length"), tmp_path / "run2.jsonl", format="trec_rag")
    assert [json.loads(line)["response_length"] for line in p2.read_text().splitlines()] == [20, 5]


def test_trec_rag_plain_answer_is_one_uncited_sentence(tmp_path):
    df = pl.DataFrame({"id": [7], "question": ["q"], "retrieved_ids": [["d"]], "answer": ["Just text here."]})
    p = rf.write_dataset(df, tmp_path / "r.jsonl", format="trec_rag", run_id="x")
    line = json.loads(p.read_text())
    assert line == {
        "run_id": "x",
        "topic_id": "7",
        "topic": "q",
        "references": ["d"],
        "response_length": 3,
        "answer": [{"text": "Just text here.", "citations": []}],
    }


def test_trec_rag_citation_out_of_range(tmp_path):
    p = tmp_path / "bad.jsonl"
    ok = {"topic_id": "1", "topic": "q", "references": ["a"], "answer": [{"text": "x", "citations": [0]}]}
    bad = {**ok, "answer": [{"text": "x", "citations": [0]}, {"text": "y", "citations": [1]}]}
    p.write_text(json.dumps(ok) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(rf.SchemaError, match=r"line 3 of .*sentence 1 cites reference 1") as info:
        rf.read_dataset(p, format="trec_rag")
    assert info.value.row == 1
    df = pl.DataFrame(
        {
            "topic_id": ["1"],
            "question": ["q"],
            "retrieved_ids": [["a"]],
            "answer_sentences": [["x"]],
            "sentence_citations": [[[1]]],
        }
    )
    with pytest.raises(rf.SchemaError, match="not an index into retrieved_ids"):
        rf.write_dataset(df, tmp_path / "o.jsonl", format="trec_rag")


# ----------------------------------------------------------------------------- RAGChecker


def test_ragchecker_output_reads_and_writes_back_the_same_results(tmp_path):
    path = shared_path("ragchecker_human_labels", "checking_outputs.json")
    original = json.loads(path.read_text())
    got = rf.read_dataset(path, format="ragchecker")
    assert got.height == 2
    first = original["results"][0]
    row = got.row(0, named=True)
    assert row["id"] == first["query_id"] and row["question"] == first["query"]
    assert row["answer"] == first["response"] and row["ground_truth"] == first["gt_answer"]
    assert row["contexts"] == [d["text"] for d in first["retrieved_context"]]
    assert row["retrieved_ids"] == [d["doc_id"] for d in first["retrieved_context"]]
    assert row["retrieved2answer"] == first["retrieved2answer"]
    assert row["metrics"] == first["metrics"]
    p = rf.write_dataset(got, tmp_path / "again.json", format="ragchecker")
    assert json.loads(p.read_text())["results"] == original["results"]
    # the file-level means (x100) are the per-result metrics' means, as the README says
    mean_f1 = got["metrics"].struct.field("f1").mean() * 100
    assert round(mean_f1, 1) == original["metrics"]["overall"]["f1"] == 68.3


def test_ragchecker_input_has_no_claim_columns():
    got = rf.read_dataset(shared_path("ragchecker_human_labels", "checking_inputs.json"), format="ragchecker")
    assert got.columns == ["id", "question", "answer", "ground_truth", "retrieved_ids", "contexts"]
    assert got["contexts"].list.len().to_list() == [4, 3]  # counted in the file with json


def test_ragchecker_written_without_ids(tmp_path):
    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "ground_truth": ["g"], "contexts": [["t1", "t2"]]})
    p = rf.write_dataset(df.to_pandas(), tmp_path / "in.json", format="ragchecker")
    result = json.loads(p.read_text())["results"][0]
    assert result["retrieved_context"] == [{"doc_id": None, "text": "t1"}, {"doc_id": None, "text": "t2"}]
    assert "retrieved_ids" not in rf.read_dataset(p, format="ragchecker").columns


# ----------------------------------------------------------------------------- errors and frame kinds


def test_unknown_format():
    with pytest.raises(rf.InvalidParameterError, match="format must be one of 'ragas', 'deepeval'"):
        rf.read_dataset(DATA / "ragas_written.jsonl", format="trulens")


def test_bad_json_line_is_named(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"user_input": "q"}) + "\n{not json\n")
    with pytest.raises(rf.InputFileError, match=r"line 2 of .*bad.jsonl.* is not JSON"):
        rf.read_dataset(p, format="ragas")


def test_wrong_kind_is_named(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([{"input": "q"}, {"input": "q2", "retrieval_context": "one string"}]))
    with pytest.raises(rf.SchemaError, match=r"record 2 of .*field 'retrieval_context' is not list\[str\]") as info:
        rf.read_dataset(p, format="deepeval")
    assert info.value.row == 1 and info.value.column == "retrieval_context"


def test_missing_file():
    with pytest.raises(rf.InputFileError, match="no such file"):
        rf.read_dataset("no/such/file.json", format="ragchecker")


def test_question_column_required(tmp_path):
    with pytest.raises(rf.SchemaError, match="question column is required"):
        rf.write_dataset(pl.DataFrame({"answer": ["a"]}), tmp_path / "x.jsonl", format="ragas")


def test_renamed_columns_and_arrow_input(tmp_path):
    table = pl.DataFrame({"query": ["q"], "passages": [["c"]]}).to_arrow()
    p = rf.write_dataset(table, tmp_path / "x.jsonl", format="ragas", question="query", contexts="passages")
    assert json.loads(p.read_text()) == {"user_input": "q", "retrieved_contexts": ["c"]}


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "question": TEXT,
            "answer": st.none() | TEXT,
            "contexts": st.none() | st.lists(TEXT, max_size=4),
            "ground_truth": st.none() | TEXT,
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, fmt=st.sampled_from(["ragas:.jsonl", "ragas:.csv", "deepeval:.json", "ragchecker:.json"]))
def test_roundtrip_property(tmp_path, rows, fmt):
    """Any text (quotes, commas, newlines, non-ASCII) comes back as written, in every format."""
    name, suffix = fmt.split(":")
    df = pl.DataFrame(
        rows,
        schema={"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String), "ground_truth": pl.String},
    )
    if name == "ragas" and suffix == ".csv":
        # CSV cannot tell an empty string from a missing value (ragas's own CSV has the same limit)
        df = df.with_columns(pl.col("question", "answer", "ground_truth").replace("", None))
        df = df.with_columns(pl.col("question").fill_null("q"))
    if name == "ragchecker":
        df = df.with_columns(pl.col("contexts").fill_null([]))
    p = rf.write_dataset(df, tmp_path / f"x{suffix}", format=name)
    back = rf.read_dataset(p, format=name)
    for column in df.columns:
        expected = df[column]
        if column in back.columns:
            assert back[column].to_list() == expected.to_list(), column
        else:  # a field no row had is not a column
            assert expected.null_count() == df.height, column


def test_fields_without_a_role_keep_their_values(tmp_path):
    """Polars alone would read [1.5, true] as [1.5, 1.0] and {"a": 1} beside "x" as "{1}": such a field is
    kept as each value's JSON text instead; a field of one JSON type keeps its dtype."""
    p = tmp_path / "extra.jsonl"
    rows = [
        {"user_input": "q1", "mixed": 1.5, "obj": {"a": 1}, "tag": "x", "n": 1},
        {"user_input": "q2", "mixed": True, "obj": "x", "tag": None, "n": 2.5},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = rf.read_dataset(p, format="ragas")
    assert got["mixed"].to_list() == ["1.5", "true"]
    assert got["obj"].to_list() == ['{"a": 1}', '"x"']
    assert got["tag"].to_list() == ["x", None] and got["n"].to_list() == [1.0, 2.5]
