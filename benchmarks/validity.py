"""Do the heuristic metrics agree with people? AUROC against human labels, seed methods vs ragframe's.

Development sets (the methods and thresholds were chosen on these only):

- ARES (200 RAG rows, one context each; labels for faithfulness, answer relevance, context
  relevance), bundled with the package;
- RAGChecker (280 pairs of answers, two annotators each): the score difference
  metric(answer 2) - metric(answer 1) against the humans' preference (ties dropped).

Held-out sets (never used to design anything; printed only with ``--held-out``):

- HaluEval QA, one-turn and multi-turn (500 questions each, a right and a hallucinated
  answer per question, one Wikipedia context);
- FaithBench (800 summaries; faithful = no annotator marked an "Unwanted" hallucination).

Reads ``../shared/data`` and skips the sets it cannot find. Prints one table: set, metric,
n, positives, AUROC of the seed's method (rag-eval-node-ts 0.3.2, ``compat=``) and of
ragframe's default method, each with a percentile-bootstrap 95% interval.

An LLM judge, measured the same way (``--judge MODEL``): the judge metrics
(``rf.evaluate(..., mode="llm", judge=rf.OpenAIJudge(MODEL, base_url=...))`` for
faithfulness, answer relevance and context relevance) score the first ``--rows`` ARES rows
(default all 200), and a second table puts the judge's AUROC next to the seed's and
ragframe's heuristics on the same rows (the rows the judge gave a score), with the judge's
calls, tokens, cost (``judge.usage()``; prices from ``--input-price`` / ``--output-price``
per million tokens), wall time and row statuses. The key is read from ``OPENAI_API_KEY``
(never printed), the base URL from ``--base-url``, else ``OPENAI_BASE_URL``, else OpenAI's.
Replies go to the judge cache (``--cache``; the library's default file unless
``--no-cache``), so a rerun costs nothing. Without ``--judge`` that part is skipped (one
line says so). The judge never sees the held-out sets.

The judge also meets the assessor sets (``docs/assessors.md``): it scores both answers of the
first ``--rows`` RAGChecker pairs with ``judge_answer_correctness``, and its row of the
preference meta-evaluation (``rf.preference_agreement``, Pearson / Spearman x100) is printed
beside RAGChecker's and the annotators'; and it grades the first ``--rows`` NIST-judged
(query, passage) pairs of the DL19 BM25 top 10 with ``rf.judge_relevance`` (0-3), compared
with NIST's grades by ``rf.assessor_agreement`` (graded, and binarised at >= 2 and >= 1).
``--judge`` takes a model name, or the endpoint's URL (``--judge http://127.0.0.1:8080/v1``,
the model then from ``--model``).

Usage::

    python benchmarks/validity.py                 # development sets
    python benchmarks/validity.py --held-out      # and the held-out ones
    OPENAI_API_KEY=... python benchmarks/validity.py --judge gpt-4o-mini --input-price 0.15 --output-price 0.6
    python benchmarks/validity.py --judge qwen2.5 --base-url http://127.0.0.1:8000/v1 --rows 50
    python benchmarks/validity.py --judge http://127.0.0.1:8080/v1 --rows 50
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from pathlib import Path

import polars as pl

import ragframe as rf
from ragframe.datasets import example_rag_log

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SEED = "rag-eval-node-ts"
#: (metric, label column) pairs per set.
ARES_PAIRS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}
#: The metrics the judge scores (``mode="llm"``: their judge counterparts) and their labels.
JUDGE_PAIRS = {
    "faithfulness": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_relevance": "human_context_relevance",
}
METHODS = ("seed", "ragframe", "judge")


def _agreement(scored: pl.DataFrame, pairs: dict[str, str], n_resamples: int) -> pl.DataFrame:
    table = rf.agreement_with_labels(
        scored,
        label_columns=pairs,
        n_resamples=n_resamples,
        thresholds=dict.fromkeys(pairs, None),
    )
    return table.select("metric", "n", "positives", "auroc", "auroc_low", "auroc_high")


def _both(frame: pl.DataFrame, pairs: dict[str, str], n_resamples: int, **options) -> pl.DataFrame:
    """Agreement of the seed's and ragframe's methods on one labelled frame."""
    metrics = list(dict.fromkeys(pairs))
    old = rf.evaluate(frame, metrics, compat=SEED, composite=False, **options)
    new = rf.evaluate(frame, metrics, composite=False, **options)
    seed = _agreement(old, pairs, n_resamples).rename(lambda c: f"seed_{c}" if c.startswith("auroc") else c)
    ours = _agreement(new, pairs, n_resamples).select("metric", "auroc", "auroc_low", "auroc_high")
    return seed.join(ours, on="metric", how="left", maintain_order="left")


def ares(n_resamples: int) -> pl.DataFrame:
    log = pl.read_parquet(example_rag_log())
    return _both(log, ARES_PAIRS, n_resamples)


def ragchecker(n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "ragchecker_human_labels" / "human_labeled_data.json"
    if not path.exists():
        return None
    rows = json.loads(path.read_text(encoding="utf-8"))
    frame = pl.DataFrame(
        {
            "row": list(range(len(rows))),
            "question": [r["query"] for r in rows],
            "ground_truth": [r["gt_answer"] for r in rows],
            "answer_1": [_response(r["model1"]) for r in rows],
            "answer_2": [_response(r["model2"]) for r in rows],
            "overall": [r["overall_label"] for r in rows],
            "correctness": [r["correctness_label"] for r in rows],
        }
    )
    out = []
    for metric, label in (("answer_relevance", "overall"), ("answer_correctness", "overall"),
                          ("answer_correctness", "correctness")):  # fmt: skip
        pairs = {f"{metric}_difference": f"prefers_2_{label}"}
        prefer = frame.filter(pl.col(label) != 0).with_columns(
            (pl.col(label) > 0).cast(pl.Int8).alias(pairs[f"{metric}_difference"])
        )
        table = []
        for name, options in (("seed", {"compat": SEED}), ("ours", {})):
            one = rf.evaluate(prefer, [metric], answer="answer_1", composite=False, prefix="a1_", **options)
            two = rf.evaluate(one, [metric], answer="answer_2", composite=False, prefix="a2_", **options)
            scored = two.with_columns((pl.col(f"a2_{metric}") - pl.col(f"a1_{metric}")).alias(f"{metric}_difference"))
            result = _agreement(scored, pairs, n_resamples)
            if name == "seed":
                result = result.rename(lambda c: f"seed_{c}" if c.startswith("auroc") else c)
            else:
                result = result.select("metric", "auroc", "auroc_low", "auroc_high")
            table.append(result)
        merged = (
            table[0].join(table[1], on="metric").with_columns(pl.lit(f"{metric} vs {label} preference").alias("metric"))
        )
        out.append(merged)
    return pl.concat(out)


def _response(model: object) -> str:
    value = model if isinstance(model, dict) else ast.literal_eval(str(model))
    return str(value["response"])


def halueval(name: str, n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "halueval" / f"qa_{name}_data.json"
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = pl.DataFrame(
        {
            "question": [r["question"] for r in rows] * 2,
            "contexts": [[r["knowledge"]] for r in rows] * 2,
            "answer": [r["right_answer"] for r in rows] + [r["hallucinated_answer"] for r in rows],
            "faithful": [1] * len(rows) + [0] * len(rows),
        }
    )
    pairs = {"faithfulness": "faithful", "hallucination_rate": "faithful", "answer_relevance": "faithful"}
    return _both(frame, pairs, n_resamples)


def faithbench(n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "faithbench" / "FaithBench.csv"
    if not path.exists():
        return None
    raw = pl.read_csv(path)
    frame = raw.select(
        pl.col("summary").alias("answer"),
        pl.concat_list(pl.col("source")).alias("contexts"),
        (pl.col("worst-label") != "Unwanted").cast(pl.Int8).alias("faithful"),
    )
    return _both(frame, {"faithfulness": "faithful", "hallucination_rate": "faithful"}, n_resamples)


def make_judge(args: argparse.Namespace) -> rf.OpenAIJudge | None:
    """The judge the options configure (None without ``--judge``); the key from ``OPENAI_API_KEY``."""
    if args.judge is None:
        return None
    extra = {} if args.max_tokens is None else {"max_tokens": args.max_tokens}
    is_url = args.judge.startswith(("http://", "https://"))
    return rf.OpenAIJudge(
        args.model if is_url else args.judge,
        base_url=args.judge if is_url else args.base_url,
        timeout=args.timeout,
        max_concurrency=args.concurrency,
        input_price_per_million=args.input_price,
        output_price_per_million=args.output_price,
        **extra,
    )


def judge_agreement(
    log: pl.DataFrame, judge: rf.OpenAIJudge, cache: Path | bool, n_resamples: int
) -> tuple[pl.DataFrame, pl.DataFrame, float]:
    """The judge's, the seed's and ragframe's AUROC on the rows of ``log`` the judge scored.

    Returns the agreement table (one row per metric and method: ``method``, ``metric``, ``n``,
    ``positives``, ``auroc`` and its interval), the judged frame, and the judge's wall seconds.
    """
    metrics = list(JUDGE_PAIRS)
    start = time.perf_counter()
    judged = rf.evaluate(log, metrics, mode="llm", judge=judge, cache=cache, composite=False)
    seconds = time.perf_counter() - start
    scored = {
        "seed": rf.evaluate(log, metrics, compat=SEED, composite=False),
        "ragframe": rf.evaluate(log, metrics, composite=False),
        "judge": judged,
    }
    # every method on the same rows: those the judge gave a score (a failed call leaves a null)
    frame = log.select(list(dict.fromkeys(JUDGE_PAIRS.values()))).with_columns(
        pl.when(pl.lit(judged[m].is_not_null())).then(pl.lit(scored[method][m])).alias(f"{method}_{m}")
        for method in METHODS
        for m in metrics
    )
    pairs = {f"{method}_{m}": JUDGE_PAIRS[m] for m in metrics for method in METHODS}
    table = rf.agreement_with_labels(
        frame, label_columns=pairs, n_resamples=n_resamples, thresholds=dict.fromkeys(pairs, None)
    )
    method = pl.col("metric").str.extract(r"^([a-z]+)_", 1)
    table = table.select(
        method.alias("method"),
        pl.col("metric").str.replace(r"^[a-z]+_", ""),
        "label",
        "n",
        "positives",
        "auroc",
        "auroc_low",
        "auroc_high",
    )
    return table, judged, seconds


def _interval(auroc: float | None, low: float | None, high: float | None) -> str:
    if auroc is None:
        return "-"
    return f"{auroc:.3f} [{low:.3f}, {high:.3f}]"


def print_judge(judge: rf.OpenAIJudge, rows: int, table: pl.DataFrame, judged: pl.DataFrame, seconds: float) -> None:
    """The judge's agreement next to the heuristics', then its statuses, calls, tokens, cost and time."""
    print(f'\nJudge {judge!r} on the first {rows} ARES rows (dev), mode="llm";')
    print("every method on the rows the judge scored (n):")
    head = "  ".join(f"{m + ' AUROC [95% CI]':24}" for m in METHODS)
    print(f"{'metric':20} {'label':26} {'n':>5} {'pos':>5}  {head}  judge - ragframe")
    for metric, label in JUDGE_PAIRS.items():
        rows_of = {r["method"]: r for r in table.filter(pl.col("metric") == metric).iter_rows(named=True)}
        cells = "  ".join(
            f"{_interval(rows_of[m]['auroc'], rows_of[m]['auroc_low'], rows_of[m]['auroc_high']):24}" for m in METHODS
        )
        judge_row, ours = rows_of["judge"], rows_of["ragframe"]["auroc"]
        gain = "-" if judge_row["auroc"] is None or ours is None else f"{judge_row['auroc'] - ours:+.3f}"
        print(f"{metric:20} {label:26} {judge_row['n']:>5} {judge_row['positives'] or 0:>5}  {cells}  {gain}")
    statuses = "; ".join(
        f"{m}: " + ", ".join(f"{s} {c}" for s, c in judged[f"{m}_status"].value_counts(sort=True).rows())
        for m in JUDGE_PAIRS
    )
    print(f"\nstatuses: {statuses}")
    usage = judge.usage()
    counts = ["calls", "cache_hits", "retries", "failures", "input_tokens", "output_tokens"]
    print(f"\n{'judge.usage()':26} " + " ".join(f"{c:>13}" for c in counts) + f" {'cost':>10}")
    total = usage.select(pl.lit("total").alias("metric"), *[pl.col(c).sum() for c in counts], pl.col("cost").sum())
    if usage["cost"].null_count():
        total = total.with_columns(pl.lit(None, pl.Float64).alias("cost"))
    for row in pl.concat([usage.select("metric", *counts, "cost"), total]).iter_rows(named=True):
        cost = "-" if row["cost"] is None else f"{row['cost']:.4f}"
        print(f"{row['metric']:26} " + " ".join(f"{row[c]:>13,}" for c in counts) + f" {cost:>10}")
    calls = int(total["calls"].item())
    per_call = f"{seconds / calls:.2f} s a call (at concurrency {judge.max_concurrency})" if calls else "all cached"
    print(f"wall time {seconds:.1f} s for {rows} rows x {len(JUDGE_PAIRS)} metrics: {per_call}")
    cost = total["cost"].item()
    if cost is None:
        print("cost: no prices given (--input-price / --output-price, per million tokens)")
    elif calls:
        print(f"cost {cost:.4f} for {calls} calls: about {cost / calls * len(JUDGE_PAIRS) * 1000:.2f} per 1,000 rows")
    print("(cache hits are free and count no tokens. The intervals are each method's, not of the difference:")
    print(" a judge - ragframe gain smaller than their width may be noise of the sample.)")


def _judge_part(args: argparse.Namespace, judge: rf.OpenAIJudge | None) -> None:
    if judge is None:
        print("\nJudge: skipped (no judge configured; --judge MODEL [--base-url URL], key from OPENAI_API_KEY)")
        return
    log = pl.read_parquet(example_rag_log())
    log = log.head(args.rows) if args.rows is not None else log
    cache: Path | bool = False if args.no_cache else (args.cache or True)
    try:
        table, judged, seconds = judge_agreement(log, judge, cache, args.n_resamples)
    except rf.SchemaError as error:  # a judge that scored no row at all: nothing to compare, say so and go on
        print(f"\nJudge {judge!r} on the first {log.height} ARES rows: no AUROC ({error})")
    else:
        print_judge(judge, log.height, table, judged, seconds)
    ragchecker_judge(judge, cache, args.rows, args.n_resamples)
    dl19_relevance(judge, cache, args.rows)


ASPECTS = ("correctness_label", "completeness_label", "overall_label")


def _preference_cells(frame: pl.DataFrame, first: str, second: str, n_resamples: int, **options) -> list[str]:
    cells = []
    if frame.select(pl.col(first).is_null() | pl.col(second).is_null()).to_series().all():
        return ["-"] * len(ASPECTS)  # no score difference at all (every judge call failed)
    for aspect in ASPECTS:
        r = rf.preference_agreement(
            frame, first=first, second=second, human=aspect, n_resamples=n_resamples, **options
        ).row(0, named=True)
        if r["pearson"] is None:
            cells.append("-")
            continue
        interval = "" if r["pearson_low"] is None else f" [{100 * r['pearson_low']:.1f}, {100 * r['pearson_high']:.1f}]"
        cells.append(f"{100 * r['pearson']:.2f} / {100 * r['spearman']:.2f}{interval}")
    return cells


def ragchecker_judge(judge: rf.OpenAIJudge, cache: Path | bool, rows: int | None, n_resamples: int) -> None:
    """The judge's answer correctness in RAGChecker's preference meta-evaluation, beside RAGChecker's own."""
    folder = SHARED / "ragchecker_human_labels"
    if not (folder / "baseline_ragchecker.json").exists():
        print("\nRAGChecker preference meta-evaluation: data not found; skipped")
        return
    human = json.loads((folder / "human_labeled_data.json").read_text(encoding="utf-8"))
    base = {r["instance_id"]: r for r in json.loads((folder / "baseline_ragchecker.json").read_text(encoding="utf-8"))}
    instances = pl.DataFrame(
        [
            {
                "instance_id": r["instance_id"],
                "question": r["query"],
                "ground_truth": r["gt_answer"],
                "answer_1": _response(r["model1"]),
                "answer_2": _response(r["model2"]),
                "ragchecker_1": base[r["instance_id"]]["model1"]["ragchecker"]["overall_label"],
                "ragchecker_2": base[r["instance_id"]]["model2"]["ragchecker"]["overall_label"],
            }
            for r in human[0::2]
        ]
    )
    instances = instances.head(rows) if rows is not None else instances
    labels = pl.DataFrame([{"instance_id": r["instance_id"], **{a: r[a] for a in ASPECTS}} for r in human])
    scored = instances
    for side in ("1", "2"):
        judged = rf.evaluate(
            instances,
            ["answer_correctness"],
            mode="llm",
            judge=judge,
            cache=cache,
            answer=f"answer_{side}",
            composite=False,
        )
        heuristic = rf.evaluate(instances, ["answer_correctness"], answer=f"answer_{side}", composite=False)
        scored = scored.with_columns(
            judged["answer_correctness"].alias(f"judge_{side}"),
            judged["answer_correctness_status"].alias(f"status_{side}"),
            heuristic["answer_correctness"].alias(f"heuristic_{side}"),
        )
    frame = labels.join(scored, on="instance_id")
    options = {"cluster": "instance_id"}
    print(f"\nRAGChecker preference meta-evaluation, the first {instances.height} pairs x 2 annotators")
    print("(rf.preference_agreement: Pearson / Spearman x100 [95% interval of Pearson]; a missing judge score")
    print(" counts as the median difference, as RAGChecker's protocol says)")
    print(f"{'metric':32} " + " ".join(f"{a.replace('_label', ''):>29}" for a in ASPECTS))
    for name, first, second in (
        ("RAGChecker overall score", "ragchecker_1", "ragchecker_2"),
        ("ragframe answer_correctness", "heuristic_1", "heuristic_2"),
        ("judge_answer_correctness", "judge_1", "judge_2"),
    ):
        cells = _preference_cells(frame, first, second, n_resamples, **options)
        print(f"{name:32} " + " ".join(f"{c:>29}" for c in cells))
    statuses = pl.concat([scored["status_1"], scored["status_2"]]).value_counts(sort=True).rows()
    print("judge statuses (both answers): " + ", ".join(f"{s} {c}" for s, c in statuses))


def dl19_relevance(judge: rf.OpenAIJudge, cache: Path | bool, rows: int | None) -> None:
    """The judge's 0-3 grades of NIST-judged DL19 passages (BM25 top 10) against NIST's grades."""
    text = SHARED / "rankllm_dl_runs" / "bm25_top100_with_text.dl19.json"
    qrels_path = SHARED / "anserini_qrels" / "qrels.dl19-passage.txt"
    if not (text.exists() and qrels_path.exists()):
        print("\nDL19 relevance grading: data not found; skipped")
        return
    hits = json.loads(text.read_text(encoding="utf-8"))
    pairs = pl.DataFrame(
        [
            {
                "query_id": str(h["qid"]),
                "doc_id": h["docid"],
                "rank": h["rank"],
                "query": q["query"],
                "passage": h["content"],
            }
            for q in hits
            for h in q["hits"][:10]
        ]
    )
    nist = rf.read_qrels(qrels_path)
    pairs = pairs.join(nist.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="semi").sort(
        "query_id", "rank"
    )
    pairs = pairs.head(rows) if rows is not None else pairs
    graded = rf.judge_relevance(pairs, judge=judge, cache=cache)
    llm = graded.filter(pl.col("relevance").is_not_null()).select("query_id", "doc_id", "relevance")
    statuses = graded["relevance_status"].value_counts(sort=True).rows()
    print(f"\nDL19 relevance grading: {pairs.height} NIST-judged pairs of the BM25 top 10, rf.judge_relevance (0-3)")
    print("judge statuses: " + ", ".join(f"{s} {c}" for s, c in statuses))
    if llm.height == 0:
        print("no grade came back: no agreement to compute")
        return
    print(f"{'labels':14} {'pairs':>6} {'agreement':>9} {'kappa':>7} {'linear':>7} {'quadratic':>9}")
    for name, at in (("graded 0-3", None), (">= 2", 2), (">= 1", 1)):
        r = rf.assessor_agreement(nist, llm, binarize_at=at).row(0, named=True)
        kappas = f"{r['kappa']:>7.3f} {r['kappa_linear']:>7.3f} {r['kappa_quadratic']:>9.3f}"
        print(f"{name:14} {r['pairs']:>6} {r['agreement']:>9.3f} {kappas}")
    print("(TREC RAG 2025 for scale: NIST vs UMBRELA-v2 agree 0.441, kappa 0.233 graded; kappa 0.431 at >= 2)")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--held-out", action="store_true", help="also the held-out sets (HaluEval QA, FaithBench)")
    parser.add_argument("--n-resamples", type=int, default=2000, help="bootstrap resamples of each interval")
    judge = parser.add_argument_group("LLM judge (ARES, RAGChecker and DL19 dev rows)")
    judge.add_argument(
        "--judge", metavar="MODEL|URL", help="model name of an OpenAI-compatible endpoint, or the endpoint's URL"
    )
    judge.add_argument("--model", default="default", help="the model name when --judge is a URL")
    judge.add_argument("--base-url", help="the endpoint, up to /v1 (default: OPENAI_BASE_URL, else OpenAI's)")
    judge.add_argument(
        "--rows", type=int, help="judge the first N rows of each set (default: all: 200 ARES, 280 pairs, 430 passages)"
    )
    judge.add_argument("--input-price", type=float, help="price per million input tokens")
    judge.add_argument("--output-price", type=float, help="price per million output tokens")
    judge.add_argument("--max-tokens", type=int, help="max_tokens of each reply (default: not sent)")
    judge.add_argument("--concurrency", type=int, default=16, help="requests in flight at once")
    judge.add_argument("--timeout", type=float, default=60.0, help="seconds per attempt")
    judge.add_argument("--cache", type=Path, help="judge cache file (default: the library's)")
    judge.add_argument("--no-cache", action="store_true", help="no judge cache")
    args = parser.parse_args(argv)
    if args.rows is not None and args.rows < 1:
        parser.error("--rows must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    judge = make_judge(args)  # before the long part: a bad option fails at once
    sets = [("ARES (dev)", lambda: ares(args.n_resamples)), ("RAGChecker (dev)", lambda: ragchecker(args.n_resamples))]
    if args.held_out:
        sets += [
            ("HaluEval-QA one-turn (held out)", lambda: halueval("one-turn", args.n_resamples)),
            ("HaluEval-QA multi-turn (held out)", lambda: halueval("multi-turn", args.n_resamples)),
            ("FaithBench (held out)", lambda: faithbench(args.n_resamples)),
        ]
    print(f"{'set':34} {'metric':44} {'n':>5} {'pos':>5}  {'seed AUROC [95% CI]':24}  ragframe AUROC [95% CI]")
    for name, build in sets:
        table = build()
        if table is None:
            print(f"{name:34} (data not found under {SHARED}; skipped)")
            continue
        for row in table.iter_rows(named=True):
            seed = _interval(row["seed_auroc"], row["seed_auroc_low"], row["seed_auroc_high"])
            ours = _interval(row["auroc"], row["auroc_low"], row["auroc_high"])
            print(f"{name:34} {row['metric']:44} {row['n']:>5} {row['positives'] or 0:>5}  {seed:24}  {ours}")
    print("\nAUROC: probability that a row humans judged positive (faithful, relevant, preferred) scores higher")
    print("than a negative one; 0.5 is chance, below 0.5 points the wrong way.")
    _judge_part(args, judge)
    return 0


if __name__ == "__main__":
    sys.exit(main())
