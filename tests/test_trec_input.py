"""Reading TREC run and qrels files: the rules of trec_eval 10's readers, on tiny hand-made files.

trec_eval's readers (``get_qrels.c``, ``get_trec_results.c``, ``form_res_rels.c``): a qrels line
has exactly four fields; a run line at least six (later fields ignored, see its test run
``results.trunc``); a docno listed twice for one query stops the evaluation ("duplicate docs").
"""

from __future__ import annotations

import gzip

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InputFileError, SchemaError

RUN = "q1 Q0 d1 1 3.0 tag\nq1 Q0 d2 2 2.0 tag\nq2 Q0 d1 1 1.0 tag\n"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"


def write(tmp_path, name: str, content: str | bytes):
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


# ----------------------------------------------------------------------------- byte order mark


@pytest.mark.parametrize("compress", [False, True])
def test_bom_is_stripped_and_the_first_line_kept(tmp_path, compress):
    bom = b"\xef\xbb\xbf"

    def content(text: str) -> bytes:
        data = bom + text.encode("utf-8")
        return gzip.compress(data) if compress else data

    run = rf.read_trec_run(write(tmp_path, "run.txt", content(RUN)))
    qrels = rf.read_qrels(write(tmp_path, "qrels.txt", content(QRELS)))
    assert run["query_id"].to_list() == ["q1", "q1", "q2"]  # not "\ufeffq1"
    assert qrels["query_id"].to_list() == ["q1", "q1", "q2"]
    assert run.equals(rf.read_trec_run(write(tmp_path, "plain_run.txt", RUN)))
    per_query = rf.evaluate_run(run, qrels, k=1, metrics=["precision_at_k"])
    # q1: d1 (grade 1) first -> P@1 = 1; without the fix q1's first document moved to a query "\ufeffq1"
    assert per_query.select("query_id", "num_ret", "precision_at_1").rows() == [("q1", 2, 1.0), ("q2", 1, 1.0)]


def test_bom_only_at_the_start(tmp_path):
    # a BOM elsewhere is content (a zero-width no-break space): it stays part of the field
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 \ufeffd2 1\n")
    assert rf.read_qrels(path)["doc_id"].to_list() == ["d1", "\ufeffd2"]


# ----------------------------------------------------------------------------- field counts


@pytest.mark.parametrize(
    ("line", "fields"),
    [("q1 0 d9 1 extra", 5), ("q1 0 d9", 3), ("q1 0 d9 1 # note", 6)],
)
def test_qrels_line_must_have_exactly_four_fields(tmp_path, line, fields):
    # line 4 of the file: a comment and a blank line count as lines
    path = write(tmp_path, "qrels.txt", "# judged by NIST\nq1 0 d1 1\n\n" + line + "\nq1 0 d2 0\n")
    with pytest.raises(SchemaError, match="malformed line 4") as err:
        rf.read_qrels(path)
    assert "exactly 4" in str(err.value) and repr(line) in str(err.value)
    assert len(line.split()) == fields


def test_qrels_trailing_whitespace_and_tabs_are_fine(tmp_path):
    path = write(tmp_path, "qrels.txt", "q1\t0\td1\t1\t \r\n  q1 0 d2 -1   \n")
    assert rf.read_qrels(path).select("doc_id", "relevance").rows() == [("d1", 1), ("d2", -1)]


def test_run_fields_after_the_tag_are_ignored_as_trec_eval_does(tmp_path):
    path = write(tmp_path, "run.txt", "q1 Q0 d1 1 3.0 tag more junk at\nq1 Q0 d2 2 2.0 tag\n")
    assert rf.read_trec_run(path).select("doc_id", "score", "tag").rows() == [("d1", 3.0, "tag"), ("d2", 2.0, "tag")]


def test_run_line_with_five_fields_is_malformed(tmp_path):
    path = write(tmp_path, "run.txt", "q1 Q0 d1 1 3.0 tag\nq1 Q0 d2 2 2.0\n")
    with pytest.raises(SchemaError, match="malformed line 2") as err:
        rf.read_trec_run(path)
    assert "at least 6" in str(err.value)


def test_only_ascii_whitespace_separates_fields(tmp_path):
    # trec_eval splits on C's isspace; a no-break space (U+00A0) or an ideographic space (U+3000)
    # inside a docno is part of it
    path = write(tmp_path, "run.txt", "q1 Q0 d\u00a0x 1 2.0 t\nq1\tQ0\td\u3000y\t2\t1.0\tt\n")
    assert rf.read_trec_run(path)["doc_id"].to_list() == ["d\u00a0x", "d\u3000y"]


# ----------------------------------------------------------------------------- duplicate run lines


def test_duplicate_run_line_is_refused_naming_file_lines_and_doc(tmp_path):
    lines = ["q1 Q0 d1 1 3.0 t", "q2 Q0 d1 1 3.0 t", "# comment", "q1 Q0 d2 2 2.0 t", "q1 Q0 d1 3 1.0 t"]
    path = write(tmp_path, "run.txt", "\n".join(lines) + "\n")
    with pytest.raises(InputFileError) as err:
        rf.read_trec_run(path)
    message = str(err.value)
    assert "read_trec_run" in message and str(path) in message
    assert "duplicate docno 'd1' for query 'q1' at line 5" in message and "first at line 1" in message


def test_same_doc_in_two_queries_is_not_a_duplicate(tmp_path):
    path = write(tmp_path, "run.txt", "q1 Q0 d1 1 3.0 t\nq2 Q0 d1 1 3.0 t\n")
    assert rf.read_trec_run(path).height == 2


def test_duplicate_in_a_gzip_run(tmp_path):
    path = write(tmp_path, "run.txt.gz", gzip.compress(b"q1 Q0 a 1 1 t\nq1 Q0 a 2 0.5 t\n"))
    with pytest.raises(InputFileError, match="line 2"):
        rf.read_trec_run(path)


def test_duplicate_qrels_lines_are_read_and_resolved_by_evaluate_run(tmp_path):
    # qrels repeats that agree are dropped by evaluate_run, conflicting ones refused there (row named)
    path = write(tmp_path, "qrels.txt", "q1 0 d1 1\nq1 0 d1 1\n")
    qrels = rf.read_qrels(path)
    assert qrels.height == 2
    run = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]})
    assert rf.evaluate_run(run, qrels, k=1, metrics=["mrr"])["num_rel"].to_list() == [1]


# ----------------------------------------------------------------------------- damaged files


def test_missing_file_is_an_input_file_error(tmp_path):
    with pytest.raises(InputFileError, match="read_qrels: no such file"):
        rf.read_qrels(tmp_path / "nope.txt")
    with pytest.raises(InputFileError, match="read_trec_run: no such file"):
        rf.read_trec_run(tmp_path)  # a folder is not a file


def test_undecodable_file_names_the_line(tmp_path):
    path = write(tmp_path, "run.txt", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\xff 2 1.0 t\n")
    with pytest.raises(InputFileError, match=r"line 2 of .* is not UTF-8"):
        rf.read_trec_run(path)


def test_truncated_gzip_is_an_input_file_error(tmp_path):
    path = write(tmp_path, "qrels.txt.gz", gzip.compress(QRELS.encode())[:-12])
    with pytest.raises(InputFileError, match="cannot decompress"):
        rf.read_qrels(path)


# ----------------------------------------------------------------------------- writing: only files the readers accept


def test_written_files_read_back(tmp_path):
    run = pl.DataFrame({"query_id": ["q2", "q1", "q1"], "doc_id": [7, 3, 10], "score": [1.0, 2.0, 2.0]})
    rf.write_trec_run(run, tmp_path / "run.txt", tag="t")
    # ties broken by doc id descending as strings: "3" > "10"
    assert (tmp_path / "run.txt").read_text() == "q1 Q0 3 1 2.0 t\nq1 Q0 10 2 2.0 t\nq2 Q0 7 1 1.0 t\n"
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["3"], "relevance": [2.0]})  # a whole-number float grade
    rf.write_qrels(qrels, tmp_path / "qrels.txt")
    assert rf.read_qrels(tmp_path / "qrels.txt").select("doc_id", "relevance").rows() == [("3", 2)]


@pytest.mark.parametrize(
    ("column", "values", "found"),
    [
        ("doc_id", ["a b", "c"], "'a b'"),
        ("doc_id", ["", "c"], "''"),
        ("doc_id", [None, "c"], "None"),
        ("query_id", ["#q", "q"], "'#q'"),
    ],
)
def test_writers_refuse_ids_that_cannot_be_a_field(tmp_path, column, values, found):
    run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "y"], "score": [1.0, 0.5]}).with_columns(
        pl.Series(column, values)
    )
    with pytest.raises(SchemaError, match="cannot be a TREC field") as err:
        rf.write_trec_run(run, tmp_path / "run.txt")
    assert (err.value.column, err.value.row, err.value.found) == (column, 0, found)
    qrels = run.rename({"score": "relevance"}).with_columns(pl.lit(1).alias("relevance"))
    with pytest.raises(SchemaError, match="cannot be a TREC field"):
        rf.write_qrels(qrels, tmp_path / "qrels.txt")
    assert not (tmp_path / "run.txt").exists() and not (tmp_path / "qrels.txt").exists()


def test_writers_refuse_what_the_readers_would_refuse(tmp_path):
    run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [1.0, 0.5]})
    with pytest.raises(SchemaError, match="listed twice") as err:
        rf.write_trec_run(run, tmp_path / "run.txt")
    assert (err.value.column, err.value.row) == ("doc_id", 1)
    with pytest.raises(SchemaError, match="NaN"):
        rf.write_trec_run(run.with_columns(doc_id=pl.Series(["a", "b"]), score=pl.Series([1.0, None])), tmp_path / "r")
    with pytest.raises(rf.InvalidParameterError, match="tag must be"):
        rf.write_trec_run(run, tmp_path / "run.txt", tag="my run")
    qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1.5]})
    with pytest.raises(SchemaError, match="not a whole number"):  # never truncated to 1
        rf.write_qrels(qrels, tmp_path / "qrels.txt")
    with pytest.raises(rf.InvalidParameterError, match="relevance must be a non-empty column name"):
        rf.write_qrels(qrels, tmp_path / "qrels.txt", relevance="")
