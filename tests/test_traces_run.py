"""Trace files through rf.evaluate_parquet and ``ragframe eval --input-format``: staged rows, rejects, exit codes."""

from __future__ import annotations

import json

import polars as pl
import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("openinference.semconv")
import trace_gen

import ragframe as rf
from ragframe.cli.main import main
from ragframe.datasets import example_traces
from ragframe.io.traces.stage import stage_traces


def _broken(tmp_path):
    """Three traces: one good, one without a retriever span, one whose document has no content."""
    good = {"question": "What is X?", "answer": "X is Y.", "documents": [{"content": "X is Y.", "id": "d"}]}
    rows = [good, {**good, "retrievers": []}, {**good, "documents": [{"id": "x"}]}]
    spans = trace_gen.make_spans(rows, seed=2)
    folder = tmp_path / "traces"
    folder.mkdir()
    trace_gen.write_otlp_json(spans, folder / "a.jsonl", spans_per_line=4)
    return folder, sorted({f"{s.context.trace_id:032x}" for s in spans})


def test_staging_in_buckets_gives_the_rows_of_read_traces(tmp_path):
    expected = rf.read_traces(example_traces()).sort("trace_id")
    staged = stage_traces(example_traces(), tmp_path / "t", "openinference", buckets=5)
    assert (staged.traces, staged.rejected) == (200, 0)
    parts = sorted(staged.rows.glob("part-*.parquet"))
    assert len(parts) == 5
    rows = pl.read_parquet(parts).sort("trace_id")
    assert rows.equals(expected.select(rows.columns))
    assert not (tmp_path / "t" / "spans").exists()  # the bucket files are removed


def test_evaluate_parquet_scores_traces_as_evaluate_scores_their_rows(tmp_path):
    result = rf.evaluate_parquet(
        example_traces(), tmp_path / "out", input_format="openinference", metrics=["faithfulness"], progress=False
    )
    assert (result.rows, result.scored, result.rejected, result.traces_rejected) == (200, 200, 0, 0)
    scores = pl.read_parquet(tmp_path / "out" / "scores").sort("trace_id")
    expected = rf.evaluate(rf.read_traces(example_traces()), metrics=["faithfulness"]).sort("trace_id")
    assert scores["faithfulness"].to_list() == expected["faithfulness"].to_list()
    assert {"trace_id", "root_span_id", "retriever_span_id", "llm_span_id", "metadata.version"} <= set(scores.columns)
    again = rf.evaluate_parquet(
        example_traces(), tmp_path / "out", input_format="openinference", metrics=["faithfulness"], progress=False
    )
    assert again.resumed == again.batches  # the staged rows are reused: the run resumes


def test_cli_rejects_traces_with_their_id_and_reason(tmp_path, capsys):
    folder, _ = _broken(tmp_path)
    out = tmp_path / "out"
    code = main(["eval", str(folder), "-o", str(out), "--input-format", "openinference", "--metrics", "faithfulness"])
    assert code == 0
    rejects = pl.read_parquet(out / "rejects" / "traces.parquet")
    assert rejects.columns == ["trace_id", "source_file", "source_row", "reason"]
    reasons = sorted(rejects["reason"].to_list())
    assert reasons[0].startswith("document 0 of span ") and reasons[0].endswith(" has no content")
    assert reasons[1] == "no RETRIEVER or RERANKER span (retrieval='reranker')"
    assert "2 traces could not become rows" in capsys.readouterr().out
    assert pl.read_parquet(out / "scores").height == 1
    code = main(
        ["eval", str(folder), "-o", str(out), "--input-format", "openinference", "--metrics", "faithfulness",
         "--overwrite"]
    )  # fmt: skip
    assert code == 0  # overwrite removes rejects/traces.parquet as ragframe's own file


def test_cli_every_trace_rejected_exits_3_and_a_bad_file_names_its_line(tmp_path, capsys):
    folder, _ = _broken(tmp_path)
    code = main(
        ["eval", str(folder), "-o", str(tmp_path / "o"), "--input-format", "openinference", "--metrics", "faithfulness",
         "--retrieval", "first"]
    )  # fmt: skip
    assert code == 0  # the good trace is scored
    (folder / "a.jsonl").write_text(
        (folder / "a.jsonl").read_text().splitlines()[1] + "\n"
    )  # spans of no complete trace
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.jsonl").write_text('{"resourceSpans": []}\nnot json\n')
    code = main(["eval", str(bad), "-o", str(tmp_path / "o2"), "--input-format", "openinference"])
    assert code == 3
    assert "x.jsonl' line 2: not JSON" in capsys.readouterr().err
    lone = tmp_path / "lone"
    lone.mkdir()
    spans = trace_gen.make_spans([{"question": "q", "answer": "a", "documents": [], "retrievers": []}])
    trace_gen.write_otlp_json(spans, lone / "t.jsonl")
    code = main(
        ["eval", str(lone), "-o", str(tmp_path / "o3"), "--input-format", "openinference", "--metrics", "faithfulness"]
    )
    assert code == 3
    assert "every trace was rejected (1 traces)" in capsys.readouterr().err


def test_cli_phoenix_and_langsmith_inputs(tmp_path):
    spans = trace_gen.make_spans(
        [{"question": "What is X?", "answer": "X is Y.", "documents": [{"content": "X is Y."}]}]
    )
    trace_gen.phoenix_table(spans).write_parquet(tmp_path / "spans.parquet")
    out = tmp_path / "p"
    assert (
        main(
            [
                "eval",
                str(tmp_path / "spans.parquet"),
                "-o",
                str(out),
                "--input-format",
                "phoenix",
                "--metrics",
                "faithfulness",
            ]
        )
        == 0
    )
    assert pl.read_parquet(out / "scores")["faithfulness"].to_list() == [1.0]
    runs = [
        {"id": "r0", "trace_id": "r0", "run_type": "chain", "inputs": {"question": "What is X?"},
         "outputs": {"answer": "X is Y."}},
        {"id": "r1", "trace_id": "r0", "parent_run_id": "r0", "run_type": "retriever", "inputs": {"query": "X"},
         "outputs": {"documents": [{"page_content": "X is Y.", "metadata": {"id": "d1"}}]}},
    ]  # fmt: skip
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    out = tmp_path / "l"
    args = ["eval", str(tmp_path / "runs.jsonl"), "-o", str(out), "--input-format", "langsmith"]
    assert main([*args, "--metrics", "faithfulness"]) == 0
    assert pl.read_parquet(out / "scores").select("trace_id", "retriever_span_id", "faithfulness").row(0) == (
        "r0",
        "r1",
        1.0,
    )
    with pytest.raises(rf.InvalidParameterError):
        rf.evaluate_parquet(tmp_path / "spans.parquet", tmp_path / "q", input_format="zipkin", progress=False)


def test_an_output_folder_inside_the_traces_folder_is_not_read_as_traces(tmp_path):
    folder, _ = _broken(tmp_path)
    args = ["eval", str(folder), "-o", str(folder / "scored"), "--input-format", "openinference"]
    assert main([*args, "--metrics", "faithfulness"]) == 0
    assert main([*args, "--metrics", "faithfulness"]) == 0  # again: resumes, its own parts are not traces


def test_staged_rows_of_other_files_are_not_reused_silently(tmp_path):
    stage_traces(example_traces(), tmp_path / "t", "openinference", buckets=2)
    folder, _ = _broken(tmp_path)
    with pytest.raises(rf.ResumeError, match="other trace files or options"):
        stage_traces(folder, tmp_path / "t", "openinference")
    assert stage_traces(folder, tmp_path / "t", "openinference", overwrite=True).traces == 1
