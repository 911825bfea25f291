"""Speed of ragframe's seven heuristic RAG metrics against a per-row pure-Python reference.

What is measured
----------------
A synthetic but realistic RAG log (one row per answered question) is generated once,
deterministically, and cached as Parquet under ``--data-dir`` (``benchmarks/_data/``). Each
row has

- ``question``: about 12 words, a question built from a sentence of the main passage;
- ``contexts``: 5 retrieved passages of about 100 words, drawn from a fixed pool
  (``--pool``, 100,000 passages by default) with a Zipf-like popularity (``--zipf``), so
  that popular passages come back row after row as in real logs. One of the five is the
  row's main passage; most of the others are passages on the same topic (neighbours in the
  pool), the rest are independent draws (off-topic retrievals);
- ``answer``: 2 to 5 sentences (about 60 words): mostly faithful rows copy (sometimes
  truncate) sentences of their contexts, mixed rows half copy, hallucinated rows mostly
  use other prose;
- ``ground_truth``: 1 to 3 sentences (about 40 words), mostly from the main passage; null
  in 10% of the rows.

All text is real English prose: the sentences of Python's own documentation topics
(``pydoc_data.topics``, in the standard library, PSF license). Passages are 100-word runs of
sentences picked from a window of nearby sentences (same topic), so passages overlap as
chunks of related documents do.

Each tool runs in a fresh Python process (this script with the hidden ``--worker`` flag):

- ``ragframe``: the log is streamed ``--batch-rows`` rows at a time (100,000 by default;
  ``pl.scan_parquet(...).slice(...)``, timed separately as "read"), each batch scored with
  ``rf.evaluate(df)`` (all seven metrics with ragframe's default methods, composite score and
  pass/fail) and only the score columns kept, which bounds memory whatever the size of the log.
- ``ragframe-compat``: the same with ``compat="rag-eval-node-ts"`` (the seed's methods, the
  ones the reference implements).
- ``reference``: ``benchmarks/heuristics_reference.py``, one sample at a time in pure
  Python. Above ``--reference-rows`` rows (20,000 by default) it scores only the first
  ``--reference-rows`` rows, and its rows/s comes from those (the table says so). Its read
  time includes converting the frame to Python lists.

The clock (``time.perf_counter``) starts after imports. Peak memory is ``ru_maxrss`` of
the worker; ``VmHWM`` (from ``/proc/self/status``, reset at exec) is shown next to it,
because a process started by vfork + exec inherits its parent's ``ru_maxrss``. The data
is generated in a separate process too, so that the driver stays small.

The scores of ``ragframe-compat`` and the reference (seven metrics and ``composite_score``)
are compared on the rows both scored; the table shows the largest absolute difference per metric. Exit status: 0 when
they agree within 1e-9, 1 otherwise or when a worker failed.

Usage, from the repository root::

    python benchmarks/heuristics.py --rows 10000
    python benchmarks/heuristics.py --rows 10000,100000 --repeat 3

The two logs of the speed targets (issue 22): the Zipf log is the default one at 1,000,000
rows (2% of its 5,000,000 retrieved passages distinct, so each is tokenised once and reused);
the unique-passage log spreads 20,000 rows uniformly over a pool of 1,000,000 passages, so 94%
of its 100,000 retrieved passages are distinct (the text stage tokenises nearly every context;
generating it takes about 1 minute and 2 GB once, then it is cached)::

    python benchmarks/heuristics.py --rows 1000000 --tools ragframe --repeat 3
    python benchmarks/heuristics.py --rows 20000 --pool 1000000 --zipf 0 --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import resource
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procstat import cpu_seconds, failure_reason, status_mb

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

HERE = Path(__file__).resolve().parent
METRICS = (
    "faithfulness",
    "answer_relevance",
    "context_precision",
    "context_recall",
    "context_relevance",
    "answer_correctness",
    "hallucination_rate",
)
SCORES = (*METRICS, "composite_score")
TOLERANCE = 1e-9
RESULT_PREFIX = "BENCH-RESULT "
DATA_VERSION = 1  # bump when the generator changes, so cached files are not reused

# Shape of the synthetic log
N_CONTEXTS = 5
CHUNK_ROWS = 100_000  # rows generated (and written as one Parquet row group) at a time
PASSAGE_WINDOW = 40  # a passage picks its sentences among this many consecutive sentences
PASSAGE_TARGET_WORDS = (92, 15)  # mean and sd of the word budget of a passage (about 100 words result)
NEIGHBOUR_SPAN = 30  # on-topic retrievals come from passages this close in the pool
P_NEIGHBOUR = 0.7  # share of the non-main contexts that are on-topic
MAIN_SLOT_P = (0.4, 0.25, 0.15, 0.1, 0.1)  # rank of the main passage among the 5 contexts
ANSWER_SENTENCES = ((2, 3, 4, 5), (0.15, 0.35, 0.35, 0.15))  # about 3.5 sentences (3.3 distinct), 60 words
ANSWER_STYLES = ((0.95, 0.5, 0.05), (0.5, 0.3, 0.2))  # P(copy a context sentence) of faithful/mixed/hallucinated rows
P_TRUNCATE = 0.25  # a copied answer sentence is cut to 60-90% of its words
TRUTH_SENTENCES = ((1, 2, 3), (0.1, 0.5, 0.4))  # about 2.3 sentences (2.2 distinct), 40 words
TRUTH_SOURCES = (0.6, 0.15, 0.25)  # main passage, another context, elsewhere
P_NULL_TRUTH = 0.1
QUESTION_STARTS = (
    "Is it true that",
    "Why is it that",
    "Can you explain why",
    "How come",
    "Does the documentation say that",
    "What does it mean that",
    "In Python, is it the case that",
)
QUESTION_WORDS = (7, 11)  # words taken from the source sentence (inclusive range)


# ----------------------------------------------------------------------------- data


def load_sentences() -> list[str]:
    """Distinct prose sentences of the pydoc topics, in document order."""
    from pydoc_data.topics import topics

    sentences: list[str] = []
    for topic in topics.values():
        for paragraph in re.split(r"\n\s*\n", topic):
            flat = " ".join(paragraph.split())
            sentences.extend(re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat))

    def prose(s: str) -> bool:
        words = s.split()
        letters = sum(c.isalpha() or c == " " for c in s)
        return (
            re.fullmatch(r"[A-Z].*[a-z)\"*]\.", s) is not None
            and 5 <= len(words) <= 50
            and letters / len(s) > 0.8
            and ">>>" not in s
            and "::" not in s
        )

    return list(dict.fromkeys(s for s in sentences if prose(s)))


def data_path(data_dir: Path, rows: int, seed: int, pool: int, zipf: float) -> Path:
    digest = hashlib.sha256("\n".join(load_sentences()).encode()).hexdigest()[:8]
    return data_dir / f"raglog_r{rows}_p{pool}_z{zipf:g}_s{seed}_{digest}_v{DATA_VERSION}.parquet"


@dataclass
class Corpus:
    """The sentences and the passage pool (passages in topic order: neighbours are related)."""

    sentences: pl.Series  # str
    sentence_words: np.ndarray
    passages: pl.Series  # str, one per passage
    passage_start: np.ndarray  # offset of each passage's sentence ids in passage_sentences
    passage_len: np.ndarray  # sentences per passage
    passage_sentences: np.ndarray  # flat sentence ids
    popularity: np.ndarray  # passage id of each popularity rank
    rank_cdf: np.ndarray  # cumulative Zipf weights of the ranks


def build_corpus(seed: int, pool: int, zipf: float) -> Corpus:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng([seed, 0])
    text = load_sentences()
    sentences = pl.Series("sentence", text, dtype=pl.String)
    words = np.array([len(s.split()) for s in text], dtype=np.int64)
    window = min(PASSAGE_WINDOW, len(text))

    # each passage: a random window of nearby sentences, taken in random order until the word
    # budget is spent, then put back in document order
    first = np.sort(rng.integers(0, len(text) - window + 1, size=pool))
    picks = first[:, None] + np.argsort(rng.random((pool, window)), axis=1)
    budget = np.maximum(rng.normal(*PASSAGE_TARGET_WORDS, size=pool), 30)
    cum = np.cumsum(words[picks], axis=1)
    take = (cum - words[picks]) < budget[:, None]  # at least one sentence
    chosen = np.sort(np.where(take, picks, np.iinfo(np.int64).max), axis=1)
    lengths = take.sum(axis=1)
    flat = chosen[np.arange(chosen.shape[1])[None, :] < lengths[:, None]]
    owner = np.repeat(np.arange(pool), lengths)
    passages = (
        pl.DataFrame({"p": owner, "s": sentences.gather(flat)})
        .group_by("p", maintain_order=True)
        .agg(pl.col("s").str.join(" "))
        .get_column("s")
    )
    ranks = np.arange(1, pool + 1, dtype=np.float64)
    return Corpus(
        sentences=sentences,
        sentence_words=words,
        passages=passages,
        passage_start=np.cumsum(lengths) - lengths,
        passage_len=lengths,
        passage_sentences=flat,
        popularity=rng.permutation(pool),
        rank_cdf=np.cumsum(ranks**-zipf),
    )


def _popular(rng: np.random.Generator, corpus: Corpus, size: int | tuple[int, ...]) -> np.ndarray:
    """Passage ids drawn with Zipf-like popularity."""
    import numpy as np

    u = rng.random(size) * corpus.rank_cdf[-1]
    rank = np.minimum(np.searchsorted(corpus.rank_cdf, u), corpus.rank_cdf.size - 1)
    return corpus.popularity[rank]


def _sentence_of(rng: np.random.Generator, corpus: Corpus, passage: np.ndarray) -> np.ndarray:
    """A random sentence id of each passage."""
    import numpy as np

    offset = np.floor(rng.random(passage.size) * corpus.passage_len[passage]).astype(np.int64)
    return corpus.passage_sentences[corpus.passage_start[passage] + offset]


def _join_sentences(corpus: Corpus, row: np.ndarray, sentence: np.ndarray, keep: np.ndarray, n: int) -> pl.Series:
    """One text per row: its distinct sentences joined by a space; ``keep`` > 0 cuts a sentence to that many words."""
    import polars as pl

    parts = pl.DataFrame({"row": row, "id": sentence, "keep": keep})
    parts = parts.unique(subset=["row", "id"], keep="first", maintain_order=True)  # no sentence twice in a text
    parts = parts.with_columns(s=corpus.sentences.gather(parts.get_column("id")))
    cut = pl.col("s").str.split(" ").list.head(pl.col("keep")).list.join(" ").str.replace(r"[^\w)\"*]*$", ".")
    parts = parts.with_columns(pl.when(pl.col("keep") > 0).then(cut).otherwise(pl.col("s")).alias("s"))
    joined = parts.group_by("row", maintain_order=True).agg(pl.col("s").str.join(" "))
    full = pl.DataFrame({"row": range(n)}, schema={"row": pl.Int64}).join(joined, on="row", how="left")
    return full.sort("row").get_column("s").fill_null("")


def generate_chunk(corpus: Corpus, seed: int, chunk: int, n: int) -> tuple[pl.DataFrame, np.ndarray]:
    """``n`` rows of the log, vectorized over rows, and the (n, 5) passage ids of their contexts."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng([seed, 1, chunk])
    pool = corpus.passages.len()
    rows = np.arange(n, dtype=np.int64)

    # contexts: the main passage at a rank near the top, on-topic neighbours, some off-topic draws
    main = _popular(rng, corpus, n)
    ctx = _popular(rng, corpus, (n, N_CONTEXTS))
    offset = rng.integers(1, NEIGHBOUR_SPAN + 1, size=(n, N_CONTEXTS)) * rng.choice((-1, 1), size=(n, N_CONTEXTS))
    neighbour = np.clip(main[:, None] + offset, 0, pool - 1)
    ctx = np.where(rng.random((n, N_CONTEXTS)) < P_NEIGHBOUR, neighbour, ctx)
    main_slot = rng.choice(N_CONTEXTS, size=n, p=MAIN_SLOT_P)
    ctx[rows, main_slot] = main
    contexts = corpus.passages.gather(ctx.ravel()).reshape((n, N_CONTEXTS)).cast(pl.List(pl.String))

    # question: a start, then the first 7-11 words of a sentence of the main passage
    source = corpus.sentences.gather(_sentence_of(rng, corpus, main))
    take = rng.integers(QUESTION_WORDS[0], QUESTION_WORDS[1] + 1, size=n)
    starts = pl.Series(QUESTION_STARTS).gather(rng.integers(0, len(QUESTION_STARTS), size=n))
    body = pl.DataFrame({"s": source, "k": take}).select(
        pl.col("s").str.split(" ").list.head(pl.col("k")).list.join(" ").str.replace(r"[^\w)\"*]*$", "")
    )["s"]
    body = body.str.slice(0, 1).str.to_lowercase() + body.str.slice(1)
    question = starts + " " + body + "?"

    # answer: per row a style (faithful, mixed, hallucinated) = probability of copying a context sentence
    n_answer = rng.choice(ANSWER_SENTENCES[0], size=n, p=ANSWER_SENTENCES[1])
    p_copy = np.asarray(ANSWER_STYLES[0])[rng.choice(3, size=n, p=ANSWER_STYLES[1])]
    a_row = np.repeat(rows, n_answer)
    copy = rng.random(a_row.size) < p_copy[a_row]
    slot = np.where(rng.random(a_row.size) < 0.6, main_slot[a_row], rng.integers(0, N_CONTEXTS, size=a_row.size))
    copied = _sentence_of(rng, corpus, ctx[a_row, slot])
    other = rng.integers(0, corpus.sentences.len(), size=a_row.size)
    a_sentence = np.where(copy, copied, other)
    words = corpus.sentence_words[a_sentence]
    keep = np.where(copy & (rng.random(a_row.size) < P_TRUNCATE), np.ceil(words * rng.uniform(0.6, 0.9, a_row.size)), 0)
    answer = _join_sentences(corpus, a_row, a_sentence, keep.astype(np.int64), n)

    # ground truth: mostly the main passage's sentences; null in 10% of the rows
    n_truth = rng.choice(TRUTH_SENTENCES[0], size=n, p=TRUTH_SENTENCES[1])
    g_row = np.repeat(rows, n_truth)
    where = rng.choice(3, size=g_row.size, p=TRUTH_SOURCES)
    from_main = _sentence_of(rng, corpus, main[g_row])
    from_ctx = _sentence_of(rng, corpus, ctx[g_row, rng.integers(0, N_CONTEXTS, size=g_row.size)])
    elsewhere = rng.integers(0, corpus.sentences.len(), size=g_row.size)
    g_sentence = np.select([where == 0, where == 1], [from_main, from_ctx], elsewhere)
    truth = _join_sentences(corpus, g_row, g_sentence, np.zeros(g_row.size, dtype=np.int64), n)
    truth = pl.select(
        pl.when(pl.lit(rng.random(n) < P_NULL_TRUTH)).then(None).otherwise(pl.lit(truth)).alias("ground_truth")
    ).to_series()

    frame = pl.DataFrame(
        {
            "id": rows + chunk * CHUNK_ROWS,
            "question": question,
            "answer": answer,
            "contexts": contexts,
            "ground_truth": truth,
        }
    )
    return frame, ctx


def generate(path: Path, rows: int, seed: int, pool: int, zipf: float) -> dict[str, Any]:
    """Write the log chunk by chunk (one row group per chunk) and a JSON file describing it."""
    import numpy as np
    import polars as pl
    import pyarrow.parquet as pq

    start = time.perf_counter()
    corpus = build_corpus(seed, pool, zipf)
    passage_words = corpus.passages.str.count_matches(r"\S+").to_numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    writer: pq.ParquetWriter | None = None
    seen = np.zeros(pool, dtype=bool)
    words = {"question": 0, "answer": 0, "contexts": 0, "ground_truth": 0}
    truth_rows = 0
    try:
        for chunk, first in enumerate(range(0, rows, CHUNK_ROWS)):
            frame, ctx = generate_chunk(corpus, seed, chunk, min(CHUNK_ROWS, rows - first))
            seen[ctx.ravel()] = True
            counts = frame.select(
                pl.col("question", "answer", "ground_truth").str.count_matches(r"\S+").sum(),
                pl.col("ground_truth").is_not_null().sum().alias("truths"),
            ).row(0, named=True)
            counts["contexts"] = int(passage_words[ctx].sum())
            for key in words:
                words[key] += counts[key]
            truth_rows += counts["truths"]
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, compression="zstd")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, path)
    info = {
        "rows": rows,
        "pool": pool,
        "zipf": zipf,
        "sentences": corpus.sentences.len(),
        "distinct_passages_used": int(seen.sum()),
        "distinct_context_share": float(seen.sum() / (rows * N_CONTEXTS)),
        "words_per_question": words["question"] / rows,
        "words_per_answer": words["answer"] / rows,
        "words_per_context": words["contexts"] / (rows * N_CONTEXTS),
        "words_per_ground_truth": words["ground_truth"] / max(truth_rows, 1),
        "null_ground_truth_share": 1 - truth_rows / rows,
        "generation_seconds": time.perf_counter() - start,
        "file_mb": path.stat().st_size / 2**20,
    }
    path.with_suffix(".json").write_text(json.dumps(info, indent=1))
    return info


# ----------------------------------------------------------------------------- workers (one tool, own process)


def work_ragframe(
    path: Path, scores_path: Path, batch_rows: int, reference_rows: int, compat: str | None = None
) -> dict[str, Any]:
    import polars as pl

    import ragframe as rf
    from ragframe.io.memory import trim_heap

    # Stream the log: read --batch-rows rows at a time (polars reads only the row groups a
    # slice needs) and keep only the score columns, so memory is bounded by the batch
    # whatever the size of the log.
    read = seconds = 0.0
    cpu = cpu_seconds()
    parts, ids, batches = [], [], 0
    total = pl.scan_parquet(path).select(pl.len()).collect().item()
    for first in range(0, total, batch_rows):
        start = time.perf_counter()
        df = pl.scan_parquet(path).slice(first, batch_rows).collect()
        read += time.perf_counter() - start
        start = time.perf_counter()
        parts.append(rf.evaluate(df, compat=compat).select(SCORES))
        seconds += time.perf_counter() - start
        ids.append(df.get_column("id"))
        batches += 1
        del df
        trim_heap()  # as evaluate_parquet does after each batch (rf.evaluate itself does not trim)
    cpu = cpu_seconds() - cpu
    scored = pl.concat(parts)
    scored.with_columns(pl.concat(ids).alias("id")).write_parquet(scores_path)
    return {"rows": scored.height, "read_seconds": read, "seconds": seconds, "cpu_seconds": cpu, "batches": batches}


def work_reference(path: Path, scores_path: Path, batch_rows: int, reference_rows: int) -> dict[str, Any]:
    import polars as pl
    from heuristics_reference import evaluate_sample

    start = time.perf_counter()
    df = pl.read_parquet(path, n_rows=reference_rows)
    samples = list(
        zip(
            df.get_column("question").to_list(),
            df.get_column("answer").to_list(),
            df.get_column("contexts").to_list(),
            df.get_column("ground_truth").to_list(),
        )
    )
    read = time.perf_counter() - start
    start, cpu = time.perf_counter(), cpu_seconds()
    results = [evaluate_sample(q, a, c, g) for q, a, c, g in samples]
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    columns = {name: [r[name] for r in results] for name in SCORES}
    scored = pl.DataFrame(columns, schema=dict.fromkeys(SCORES, pl.Float64))
    scored.with_columns(pl.Series("id", df.get_column("id"))).write_parquet(scores_path)
    return {"rows": df.height, "read_seconds": read, "seconds": seconds, "cpu_seconds": cpu}


def work_ragframe_compat(path: Path, scores_path: Path, batch_rows: int, reference_rows: int) -> dict[str, Any]:
    return work_ragframe(path, scores_path, batch_rows, reference_rows, compat="rag-eval-node-ts")


#: ragframe: its default methods; ragframe-compat: the seed's methods (compat="rag-eval-node-ts"),
#: the ones the reference implements, so only their numbers are compared with it.
WORKERS = {"ragframe": work_ragframe, "ragframe-compat": work_ragframe_compat, "reference": work_reference}


def worker_main(args: argparse.Namespace) -> int:
    """Run one tool and print its result as one JSON line; exit status 0 when it succeeded."""
    result: dict[str, Any]
    try:
        import polars  # noqa: F401  (both workers read the Parquet file with it; keep the import untimed)

        if args.worker == "generate":
            result = generate(args.data_file, args.gen_rows, args.seed, args.pool, args.zipf)
        else:
            if args.worker == "reference":
                import heuristics_reference  # noqa: F401  (builds its regexes at import: untimed)
            else:
                import ragframe  # noqa: F401
            result = WORKERS[args.worker](args.data_file, args.scores_file, args.batch_rows, args.reference_rows)
    except MemoryError:
        result = {"error": "out of memory (MemoryError)"}
    except Exception as exc:
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["ru_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["vm_hwm_mb"] = status_mb("VmHWM")
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


# ----------------------------------------------------------------------------- driver


@dataclass
class Outcome:
    """What one tool did on one data size (best time of the repeats, largest peak memory)."""

    tool: str
    rows: int = 0
    read_seconds: float | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    ru_maxrss_mb: float = 0.0
    vm_hwm_mb: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def rows_per_second(self) -> float | None:
        return None if not self.seconds else self.rows / self.seconds


def run_worker(role: str, args: argparse.Namespace, extra: Sequence[str]) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", role, *extra]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout:g} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
            if "error" in result and proc.stderr.strip():
                print(f"--- {role} worker failed:\n{proc.stderr.rstrip()}", file=sys.stderr)
            return result
    return {"error": failure_reason(proc)}


def measure(tool: str, args: argparse.Namespace, data: Path, scores: Path, repeat: int) -> Outcome:
    outcome = Outcome(tool)
    flags = [
        "--data-file", str(data), "--scores-file", str(scores),
        "--batch-rows", str(args.batch_rows), "--reference-rows", str(args.reference_rows),
    ]  # fmt: skip
    for _ in range(repeat):
        result = run_worker(tool, args, flags)
        if "error" in result:
            outcome.error = result["error"]
            return outcome
        outcome.ru_maxrss_mb = max(outcome.ru_maxrss_mb, result["ru_maxrss_mb"])
        if result.get("vm_hwm_mb") is not None:
            outcome.vm_hwm_mb = max(outcome.vm_hwm_mb or 0.0, result["vm_hwm_mb"])
        if outcome.seconds is None or result["seconds"] < outcome.seconds:
            outcome.rows, outcome.seconds = result["rows"], result["seconds"]
            outcome.read_seconds, outcome.cpu_seconds = result["read_seconds"], result["cpu_seconds"]
            outcome.extra = {k: v for k, v in result.items() if k == "batches"}
    return outcome


def compare_scores(ragframe_scores: Path, reference_scores: Path) -> tuple[bool, list[str], dict[str, int]]:
    """Largest |difference| per score on the rows both scored; a null on one side only is a disagreement.

    Returns whether all agree within 1e-9, the lines to print, and the id of the worst row of
    each score that disagrees.
    """
    import polars as pl

    ours = pl.read_parquet(reference_scores)
    theirs = pl.read_parquet(ragframe_scores).head(ours.height)
    agree = ours.get_column("id").equals(theirs.get_column("id"))
    lines = [f"{'score':<20} {'max |diff|':>11} {'null mismatches':>16}  worst row"]
    bad: dict[str, int] = {}
    for name in SCORES:
        a, b = ours.get_column(name), theirs.get_column(name)
        one_null = a.is_null() != b.is_null()
        diff = (a - b).abs().fill_nan(math.inf)
        biggest = 0.0 if diff.null_count() == diff.len() else float(diff.max())  # type: ignore[arg-type]
        n_null = int(one_null.sum())
        if n_null == 0 and biggest <= TOLERANCE:
            lines.append(f"{name:<20} {biggest:>11.1e} {n_null:>16}")
            continue
        agree = False
        worst = int(one_null.arg_true()[0]) if n_null else diff.arg_max()
        assert worst is not None
        bad[name] = int(ours["id"][worst])
        where = f"id {bad[name]}: ragframe {b[worst]!r}, reference {a[worst]!r}"
        lines.append(f"{name:<20} {biggest:>11.1e} {n_null:>16}  {where}")
    return agree, lines, bad


def save_examples(data: Path, bad: dict[str, int]) -> Path:
    """Write the input rows of the disagreements (one per score) as JSON, for a minimal reproduction."""
    import polars as pl

    ids = sorted(set(bad.values()))
    rows = pl.read_parquet(data).filter(pl.col("id").is_in(ids)).to_dicts()
    by_id = {row["id"]: row for row in rows}
    examples = [{"score": name, **by_id[i]} for name, i in bad.items()]
    out = data.with_name(f"{data.stem}.disagreements.json")
    out.write_text(json.dumps(examples, indent=1, ensure_ascii=False))
    return out


def ragframe_version() -> str:
    """ragframe's version and git state (commit, and a digest of uncommitted changes to the package)."""
    from importlib.metadata import version

    repo = HERE.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        diff = subprocess.run(
            ["git", "-C", str(repo), "diff", "HEAD", "--", "ragframe"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return version("ragframe")
    dirty = f" + uncommitted changes (diff sha256 {hashlib.sha256(diff).hexdigest()[:8]})" if diff else ""
    return f"{version('ragframe')}, commit {commit}{dirty}"


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(rows: int, info: dict[str, Any], outcomes: list[Outcome], agree_lines: list[str], repeat: int) -> None:
    print()
    print(
        f"== {rows:,} rows: {info['words_per_question']:.1f}-word questions, {info['words_per_answer']:.1f}-word"
        f" answers, {N_CONTEXTS} contexts of {info['words_per_context']:.1f} words"
        f" ({info['distinct_passages_used']:,} distinct of {rows * N_CONTEXTS:,}, pool {info['pool']:,},"
        f" zipf {info['zipf']:g}), {info['words_per_ground_truth']:.1f}-word ground truths"
        f" ({info['null_ground_truth_share']:.0%} null); Parquet {info['file_mb']:.0f} MB"
    )
    header = ["tool", "rows scored", "read s", "score s", "CPU s", "rows/s", "peak RSS MB", "VmHWM MB", "vs reference"]
    ref = next((o for o in outcomes if o.tool == "reference"), None)
    table = []
    for o in outcomes:
        if o.error is not None:
            table.append([o.tool, "FAILED: " + o.error] + [""] * (len(header) - 2))
            continue
        ratio = None
        if ref is not None and ref.rows_per_second and o.rows_per_second:
            ratio = o.rows_per_second / ref.rows_per_second
        name = o.tool + (f" ({o.extra['batches']} batches)" if o.extra.get("batches", 1) > 1 else "")
        table.append(
            [
                name,
                f"{o.rows:,}" + (" (first rows)" if o.rows < rows else ""),
                _fmt(o.read_seconds, ".2f"),
                _fmt(o.seconds, ".2f"),
                _fmt(o.cpu_seconds, ".2f"),
                _fmt(o.rows_per_second, ",.0f"),
                _fmt(o.ru_maxrss_mb, ",.0f"),
                _fmt(o.vm_hwm_mb, ",.0f"),
                "-" if ratio is None else f"{ratio:,.1f}x",
            ]
        )
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for line in [header, *table]:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    notes = []
    if ref is not None and ref.error is None and ref.rows < rows:
        notes.append(f"reference rows/s measured on the first {ref.rows:,} rows only")
    if repeat > 1:
        notes.append(f"best of {repeat} runs")
    notes.append("rows/s = rows scored / score s (wall clock, read time excluded); CPU s = user + system, all threads")
    notes.append("peak RSS = ru_maxrss of the worker; VmHWM = the kernel's high-water mark of its resident memory")
    notes.append(f"ragframe {ragframe_version()}")
    for note in notes:
        print("  note: " + note)
    if agree_lines:
        print()
        for line in agree_lines:
            print("  " + line)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--rows", default="10000", help="comma-separated log sizes, e.g. 10000,100000,1000000")
    parser.add_argument("--batch-rows", type=int, default=100_000, help="ragframe scores bigger logs in slices of this")
    parser.add_argument("--reference-rows", type=int, default=20_000, help="the reference scores the first N rows")
    parser.add_argument(
        "--tools",
        default="ragframe,ragframe-compat,reference",
        help="comma-separated: ragframe (default methods), ragframe-compat (the seed's methods), reference",
    )
    parser.add_argument("--repeat", type=int, default=1, help="time each tool this many times, keep the best")
    parser.add_argument("--pool", type=int, default=100_000, help="passages in the retrieval pool")
    parser.add_argument("--zipf", type=float, default=0.9, help="exponent of the passages' popularity (rank ** -zipf)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=HERE / "_data")
    parser.add_argument("--regenerate", action="store_true", help="rebuild the cached Parquet file")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per worker process")
    parser.add_argument("--worker", choices=["generate", *WORKERS], help=argparse.SUPPRESS)
    parser.add_argument("--data-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scores-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--gen-rows", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.row_counts = [int(x.replace("_", "")) for x in args.rows.split(",") if x.strip()]
    args.tool_list = [t.strip() for t in args.tools.split(",") if t.strip()]
    for name in ("batch_rows", "reference_rows", "repeat", "pool"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    unknown = set(args.tool_list) - set(WORKERS)
    if unknown:
        parser.error(f"unknown tool(s) {sorted(unknown)}; choose from {list(WORKERS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        return worker_main(args)
    ok = True
    for rows in args.row_counts:
        data = data_path(args.data_dir, rows, args.seed, args.pool, args.zipf)
        if args.regenerate or not data.exists() or not data.with_suffix(".json").exists():
            print(f"generating {rows:,} rows -> {data}", flush=True)
            flags = ["--data-file", str(data), "--gen-rows", str(rows), "--seed", str(args.seed)]
            flags += ["--pool", str(args.pool), "--zipf", str(args.zipf)]
            info = run_worker("generate", args, flags)
            if "error" in info:
                print(f"  generation failed: {info['error']}")
                return 1
            print(f"  generated in {info['generation_seconds']:.1f} s ({info['file_mb']:.0f} MB)", flush=True)
        info = json.loads(data.with_suffix(".json").read_text())
        outcomes = []
        score_files = {}
        for tool in args.tool_list:
            score_files[tool] = data.with_name(f"{data.stem}.{tool}-scores.parquet")
            print(f"timing {tool} on {rows:,} rows ...", flush=True)
            outcomes.append(measure(tool, args, data, score_files[tool], args.repeat))
        ok = ok and all(o.error is None for o in outcomes)
        agree_lines: list[str] = []
        checked = {"ragframe-compat", "reference"}
        if checked <= set(score_files) and all(o.error is None for o in outcomes):
            agree, agree_lines, bad = compare_scores(score_files["ragframe-compat"], score_files["reference"])
            compared = min(o.rows for o in outcomes if o.tool in checked)
            verdict = "agree within 1e-9" if agree else "DISAGREE"
            agree_lines.insert(0, f"ragframe-compat vs reference on the first {compared:,} rows: {verdict}")
            if bad:
                agree_lines.append(f"inputs of the worst rows: {save_examples(data, bad)}")
            ok = ok and agree
        report(rows, info, outcomes, agree_lines, args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
