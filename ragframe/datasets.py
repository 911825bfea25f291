"""The small real examples bundled with the package (see ``ragframe/data/README.md``).

- :func:`example_paths`: TREC DL 2019 passage ranking, a BM25 run, a GPT-3.5 rerank of it and
  the official graded qrels (43 judged queries).
- :func:`example_rag_log`: 200 answers of a documentation assistant with human labels (ARES).
- :func:`example_traces`: that log as OpenTelemetry spans (OTLP JSON lines, OpenInference names).
- :func:`wrong_contexts`: that log with a simulated retrieval bug, for regression examples.
- :func:`write_examples`: all of them as files in one folder (what ``ragframe demo --out``
  writes next to its scores), for the command-line examples of the README.
"""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path

import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.public import public

__all__ = ["example_paths", "example_rag_log", "example_traces", "wrong_contexts", "write_examples", "EXAMPLE_FILES"]

#: The files :func:`write_examples` writes, by key: the file name in the folder.
EXAMPLE_FILES = {
    "rag_log": "rag_log.parquet",
    "rag_log_wrong_contexts": "rag_log.wrong_contexts.parquet",
    "bm25": "run.bm25.txt",
    "bm25+gpt3.5-rerank": "run.rerank-gpt35.txt",
    "qrels": "qrels.txt",
}


@public
def example_paths() -> dict[str, Path]:
    """Paths of the bundled TREC DL 2019 example: ``qrels`` and the runs ``bm25`` and ``bm25+gpt3.5-rerank``.

    Returns
    -------
    dict of str to pathlib.Path
        The bundled files (TREC run and qrels formats; ``rf.read_trec_run``, ``rf.read_qrels``).

    Examples
    --------
    >>> sorted(example_paths())
    ['bm25', 'bm25+gpt3.5-rerank', 'qrels']
    """
    root = resources.files("ragframe") / "data"
    return {
        "qrels": Path(str(root / "qrels.dl19-passage.txt")),
        "bm25": Path(str(root / "run.dl19.bm25.txt")),
        "bm25+gpt3.5-rerank": Path(str(root / "run.dl19.bm25-rerank-gpt35.txt")),
    }


@public
def example_rag_log() -> Path:
    """Path of the bundled ARES RAG log: 200 questions, answers and passages with human labels.

    Returns
    -------
    pathlib.Path
        A Parquet file with columns ``id, question, answer, contexts`` (list[str]),
        ``source_url, reaction`` and the 0/1 labels ``human_context_relevance``,
        ``human_faithfulness``, ``human_answer_relevance``. No reference answer.

    Examples
    --------
    >>> import polars as pl
    >>> pl.read_parquet(example_rag_log()).select("question", "answer", "contexts", "human_faithfulness").shape
    (200, 4)
    """
    return Path(str(resources.files("ragframe") / "data" / "ares_databricks_docs.parquet"))


@public
def example_traces() -> Path:
    """Path of the bundled example traces: the ARES log as 200 traces of real OpenTelemetry spans.

    OTLP JSON lines as the OpenTelemetry collector's file exporter writes them (gzipped), made
    by ``opentelemetry-sdk`` with the OpenInference attribute names (``benchmarks/example_traces.py``):
    per row of :func:`example_rag_log` a CHAIN root span (question, answer, ``metadata``
    ``{"version", "row"}``, ``session.id``), a RETRIEVER span (the passage; id: source URL
    ``#`` row id; no score) and an LLM span (the messages). Rows 0-99 are ``version`` ``v1``;
    rows 100-199 are ``v2`` and carry the previous row's passage (:func:`wrong_contexts`, a
    simulated retrieval bug).

    Returns
    -------
    pathlib.Path
        The ``.otlp.jsonl.gz`` file; ``rf.read_traces`` reads it.

    Examples
    --------
    >>> example_traces().name
    'example_traces.otlp.jsonl.gz'
    """
    return Path(str(resources.files("ragframe") / "data" / "example_traces.otlp.jsonl.gz"))


@public
def wrong_contexts(log: pl.DataFrame, /, contexts: str = "contexts") -> pl.DataFrame:
    """The log with a simulated retrieval bug: each row gets the previous row's contexts.

    The first row gets the last row's. Questions and answers are unchanged, so the answers
    now rest on passages retrieved for another question: the context and faithfulness
    metrics drop, ``answer_relevance`` does not. A deterministic stand-in for a second
    system, for the regression and gate examples (it is not real data).

    Parameters
    ----------
    log : polars.DataFrame
        A RAG log with a ``contexts`` column (at least one row).
    contexts : str
        Name of the contexts column.

    Returns
    -------
    polars.DataFrame
        The same columns and rows, the contexts shifted down by one row (cyclically).

    Examples
    --------
    >>> import polars as pl
    >>> log = pl.DataFrame({"id": [1, 2, 3], "contexts": [["a"], ["b"], ["c"]]})
    >>> wrong_contexts(log)["contexts"].to_list()
    [['c'], ['a'], ['b']]
    """
    if not isinstance(log, pl.DataFrame):
        raise SchemaError("expected a polars DataFrame", found=type(log).__name__)
    if contexts not in log.columns:
        raise SchemaError("missing column", column=contexts, available=log.columns)
    if log.height == 0:
        raise SchemaError("the log has no row to shift", column=contexts)
    column = log.get_column(contexts)
    return log.with_columns(pl.concat([column.tail(1), column.head(-1)]).alias(contexts))


@public
def write_examples(folder: str | os.PathLike[str], /) -> dict[str, Path]:
    """Write the bundled examples into ``folder`` (created): :data:`EXAMPLE_FILES`.

    The runs, the qrels and the RAG log are byte-for-byte copies of the bundled files;
    ``rag_log.wrong_contexts.parquet`` is :func:`wrong_contexts` of the log. Existing files
    of these names are replaced.

    Parameters
    ----------
    folder : str or os.PathLike
        Destination folder; created with its parents when missing.

    Returns
    -------
    dict of str to pathlib.Path
        The written files, keyed as :data:`EXAMPLE_FILES`.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     sorted(p.name for p in write_examples(tmp).values())
    ['qrels.txt', 'rag_log.parquet', 'rag_log.wrong_contexts.parquet', 'run.bm25.txt', 'run.rerank-gpt35.txt']
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = {key: out / name for key, name in EXAMPLE_FILES.items()}
    sources = {**example_paths(), "rag_log": example_rag_log()}
    for key, source in sources.items():
        shutil.copyfile(source, written[key])
    wrong_contexts(pl.read_parquet(sources["rag_log"])).write_parquet(written["rag_log_wrong_contexts"])
    return written
