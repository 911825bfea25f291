"""``rf.generate_testset`` on real text: the BM25 top-100 passages of TREC DL 2019, with a scripted judge.

The corpus is every distinct passage of ``../shared/data/rankllm_dl_runs/bm25_top100_with_text.dl19.json``
(43 queries x 100 BM25 hits: 4,297 MS MARCO passages; each passage is its own document, so
multi-chunk questions take their second chunk from another passage by lexical overlap). The
passage text is MS MARCO's (non-commercial research use): it is read from the shared folder
and never written out; only counts are printed.

The judge is ``tests/testset_judge.py``'s :class:`ScriptedTestsetJudge`: it writes a
question from each passage's first sentence, and fails on a seeded share of prompts in
every way the generator must survive: garbage (never readable), refusals, flaky replies
(readable on the re-ask), duplicates (questions on a passage's two commonest words, so
passages of one topic collide), ungrounded answers, generic questions, 429s that outlived
their retries (``JudgeRateLimited``) and timeouts. (A 429 that the HTTP client retries is
exercised over a real server in ``tests/test_testsets.py``; this run measures the
generator's own bookkeeping.)

What it prints (one line each, then a JSON summary with ``--json``):

- rows produced vs requested, per status; candidates each filter or failure removed;
- exact and near duplicates among the questions kept (content-word shingle Jaccard >= 0.6);
- calls and tokens (from the judge's usage ledger), wall time;
- a rerun from the reply cache: byte-identical Parquet, calls sent;
- a budgeted run: calls sent never above the budget;
- the BM25 rank, over all 4,297 passages, of each answerable question's source chunk(s):
  share at rank 1, in the top 10, the median (BM25 k1=0.9, b=0.4 as Anserini's, over
  ragframe's tokens without stop words; ties broken in the source's favour).

RAGAS's and DeepEval's generators were not run side by side: neither installs a local model,
and no model server runs on the machine this was measured on (see ``docs/testsets.md``).

Usage::

    python benchmarks/testset.py                 # n=200, seed 0
    python benchmarks/testset.py -n 500 --budget 300 --json
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from testset_judge import ScriptedTestsetJudge  # noqa: E402

import ragframe as rf  # noqa: E402
from ragframe.testsets.lexical import DUPLICATE_JACCARD, normalized, shingle_jaccard, term_matrix  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data" / "rankllm_dl_runs" / "bm25_top100_with_text.dl19.json"
#: The share of prompts that fail each way (the rest get a good reply).
RATES = {
    "GARBAGE": 0.04,
    "REFUSE": 0.04,
    "FLAKY": 0.08,
    "DUPLICATE": 0.10,
    "UNGROUNDED": 0.06,
    "GENERIC": 0.04,
    "RATE": 0.03,
    "TIMEOUT": 0.03,
    "PARTIAL": 0.04,
    "HEDGE": 0.04,
}


def corpus(path: Path) -> pl.DataFrame:
    """One row per distinct passage: doc_id = chunk_id = the MS MARCO passage id."""
    hits = [(h["docid"], h["content"]) for query in json.loads(path.read_text(encoding="utf-8")) for h in query["hits"]]
    frame = pl.DataFrame(hits, schema=["chunk_id", "text"], orient="row").unique("chunk_id", keep="first")
    return frame.select(doc_id="chunk_id", chunk_id="chunk_id", text="text").sort("chunk_id")


def bm25_ranks(chunks: pl.DataFrame, questions: list[str], sources: list[list[str]], k1=0.9, b=0.4) -> list[int]:
    """The BM25 rank of each source chunk of each question, over every chunk (ties: the source first)."""
    import scipy.sparse as sp

    terms = term_matrix(chunks["text"])
    tf = terms.counts.tocsr()
    n = tf.shape[0]
    df = np.bincount(tf.indices, minlength=tf.shape[1])
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
    length = np.asarray(tf.sum(axis=1)).ravel()
    norm = k1 * (1.0 - b + b * length / length.mean())
    rows = np.repeat(np.arange(n), np.diff(tf.indptr))
    weights = tf.data * (k1 + 1.0) / (tf.data + norm[rows]) * idf[tf.indices]
    doc_weights = sp.csr_matrix((weights, tf.indices, tf.indptr), shape=tf.shape)
    query = term_matrix(pl.Series(questions), terms.vocabulary).counts
    query.data[:] = 1.0
    scores = np.asarray((query @ doc_weights.T).todense())
    position = {cid: i for i, cid in enumerate(chunks["chunk_id"].to_list())}
    ranks = []
    for q, ids in enumerate(sources):
        for cid in ids:
            ranks.append(int((scores[q] > scores[q, position[cid]]).sum()) + 1)
    return ranks


def duplicates(questions: list[str]) -> tuple[int, int]:
    """(exact, near) duplicate pairs among ``questions`` (same content words; Jaccard >= the threshold)."""
    norm = normalized(questions)
    exact = len(norm) - len(set(norm))
    similarity = shingle_jaccard(questions)
    np.fill_diagonal(similarity, 0.0)
    near = int((np.triu(similarity) >= DUPLICATE_JACCARD).sum())
    return exact, near


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=100, help="calls of the budgeted run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--data", type=Path, default=DATA, help="bm25_top100_with_text.dl19.json")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"no data: {args.data}", file=sys.stderr)
        return 2
    chunks = corpus(args.data)
    report: dict = {"passages": chunks.height, "requested": args.n, "rates": RATES}
    cache = Path(tempfile.mkdtemp()) / "judge.sqlite3"

    scripted = ScriptedTestsetJudge(rates=RATES, seed=args.seed)
    judge = scripted.judge()
    start = time.perf_counter()
    testset = rf.generate_testset(chunks, args.n, judge=judge, seed=args.seed, cache=cache, max_concurrency=8)
    report["seconds"] = round(time.perf_counter() - start, 2)
    usage = judge.usage()
    report["calls"] = dict(scripted.calls)
    report["usage"] = usage.select("metric", "calls", "failures", "input_tokens", "output_tokens").to_dicts()
    report["statuses"] = dict(testset.group_by("_status").len().sort("_status").rows())
    report["query_types_ok"] = dict(
        testset.filter(pl.col("_status") == "ok").group_by("query_type").len().sort("query_type").rows()
    )
    report["rejected"] = dict(rf.generation_rejections(testset).rows())
    ok = testset.filter(pl.col("_status") == "ok")
    report["produced"] = ok.height
    report["exact_duplicates"], report["near_duplicate_pairs"] = duplicates(ok["question"].to_list())
    first = io.BytesIO()
    testset.write_parquet(first)

    rerun = ScriptedTestsetJudge(rates=RATES, seed=args.seed)
    again = io.BytesIO()
    rf.generate_testset(chunks, args.n, judge=rerun.judge(), seed=args.seed, cache=cache).write_parquet(again)
    report["rerun_identical"] = first.getvalue() == again.getvalue()
    report["rerun_calls"] = sum(rerun.calls.values())  # failures (429s, timeouts) are not cached: asked again

    capped = ScriptedTestsetJudge(rates=RATES, seed=args.seed)
    budgeted = rf.generate_testset(chunks, args.n, judge=capped.judge(), seed=args.seed + 1, cache=False,
                                   budget=args.budget)  # fmt: skip
    report["budget"] = {
        "calls_allowed": args.budget,
        "calls_sent": sum(capped.calls.values()),
        "statuses": dict(budgeted.group_by("_status").len().sort("_status").rows()),
    }

    answerable = ok.filter(pl.col("query_type") != "unanswerable")
    ranks = np.array(bm25_ranks(chunks, answerable["question"].to_list(), answerable["relevant_ids"].to_list()))
    report["bm25_source_rank"] = {
        "sources": int(ranks.size),
        "rank_1": round(float((ranks == 1).mean()), 3),
        "top_10": round(float((ranks <= 10).mean()), 3),
        "median": float(np.median(ranks)),
    }
    by_type = {}
    for query_type in ("single_chunk", "multi_chunk", "comparison"):
        part = answerable.filter(pl.col("query_type") == query_type)
        if part.height:
            r = np.array(bm25_ranks(chunks, part["question"].to_list(), part["relevant_ids"].to_list()))
            by_type[query_type] = {
                "rank_1": round(float((r == 1).mean()), 3),
                "top_10": round(float((r <= 10).mean()), 3),
            }
    report["bm25_by_type"] = by_type

    print(f"passages {chunks.height:,}; requested {args.n}, produced {ok.height}; statuses {report['statuses']}")
    print(f"rejected candidates: {report['rejected']}")
    print(f"duplicates kept: {report['exact_duplicates']} exact, {report['near_duplicate_pairs']} near pairs")
    print(f"calls {report['calls']}; {report['seconds']} s")
    print(usage)
    print(f"rerun from the cache: identical={report['rerun_identical']}, calls sent {report['rerun_calls']}")
    print(f"budget {args.budget} calls: sent {report['budget']['calls_sent']}; {report['budget']['statuses']}")
    print(f"BM25 rank of the source chunks: {report['bm25_source_rank']}; by type {by_type}")
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    ok_run = report["rerun_identical"] and report["budget"]["calls_sent"] <= args.budget and ok.height > 0
    return 0 if ok_run and report["exact_duplicates"] == 0 and report["near_duplicate_pairs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
