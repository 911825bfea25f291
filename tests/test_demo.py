"""``ragframe demo --out DIR`` and ``ragframe.datasets``: the demo writes the inputs it used.

The README's command-line examples start from these files, so they must be exact copies of
the bundled data (and the simulated second log exactly the documented shift).
"""

from __future__ import annotations

import contextlib
import io
import re

import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

import ragframe as rf
from ragframe.cli.main import main
from ragframe.datasets import EXAMPLE_FILES, example_paths, example_rag_log, write_examples, wrong_contexts


@pytest.mark.slow
def test_demo_writes_its_inputs_and_scores(demo):
    out, printed = demo
    names = sorted(p.name for p in out.iterdir())
    written = ["per_query.parquet", "rag_scores.parquet", "report.html", "ranking_report.html"]
    assert names == sorted([*EXAMPLE_FILES.values(), *written])
    for name in EXAMPLE_FILES.values():
        assert name in printed, name


def test_demo_writes_the_html_report_and_says_where(demo):
    out, printed = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"worst rows with their signals): {(out / 'report.html').resolve()}" in printed
    for section in ("provenance", "summary", "distributions", "slices", "comparison", "calibration", "worst-rows"):
        assert f'<h2 id="{section}">' in page, section
    # the comparison is with the wrong-contexts log: answer_relevance (which ignores the contexts) ties
    comparison = page.split('<h2 id="comparison">')[1].split('<h2 id="calibration">')[0]
    relevance = [row for row in comparison.split("<tr>") if '<td data-column="metric">answer_relevance</td>' in row]
    assert len(relevance) == 1 and '<td data-column="winner">tie</td>' in relevance[0]
    assert comparison.count('<td data-column="winner">a</td>') == 5  # every other metric drops
    assert page.count('src="data:image/png;base64,') == 4  # histograms, reaction heatmap, forest plot, ROC curves
    assert "human_faithfulness" in page and "By reaction" in page
    assert "rag_log.wrong_contexts.parquet" in printed


def test_demo_writes_the_ranking_report_with_its_curves(demo):
    out, printed = demo
    page = (out / "ranking_report.html").read_text(encoding="utf-8")
    assert f"(ranking curves, the comparison, the worst queries): {(out / 'ranking_report.html').resolve()}" in printed
    for section in ("summary", "distributions", "comparison", "ranking", "worst-rows"):
        assert f'<h2 id="{section}">' in page, section
    ranking = page.split('<h2 id="ranking">')[1].split('<h2 id="worst-rows">')[0]
    assert ranking.count('src="data:image/png;base64,') == 2  # ndcg over k, recall over k: a and b each
    # the rerank (b) wins nDCG@10 significantly: the demo's printed comparison says the same
    comparison = page.split('<h2 id="comparison">')[1].split('<h2 id="calibration">')[0]
    ndcg = [row for row in comparison.split("<tr>") if '<td data-column="metric">ndcg_at_10</td>' in row]
    assert len(ndcg) == 1 and '<td data-column="winner">b</td>' in ndcg[0]
    summary = page.split('<h2 id="summary">')[1].split('<h2 id="distributions">')[0]
    assert '<td class="num" data-column="mean" data-value="0.5058' in summary  # BM25's nDCG@10 (published)


def test_demo_without_the_report_extra_says_how_to_get_it_and_exits_0(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 raises ImportError
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--out", str(tmp_path)])
    assert code == 0
    printed = buffer.getvalue()
    lines = [line for line in printed.splitlines() if "HTML report" in line or "ragframe[report]" in line]
    assert lines == ["no HTML report: report: jinja2 is not installed: pip install 'ragframe[report]'"], lines
    assert "report.html" not in printed and not (tmp_path / "report.html").exists()
    assert not (tmp_path / "ranking_report.html").exists()


def test_demo_inputs_are_byte_copies_of_the_bundled_files(demo):
    out, _ = demo
    sources = {**example_paths(), "rag_log": example_rag_log()}
    for key, source in sources.items():
        assert (out / EXAMPLE_FILES[key]).read_bytes() == source.read_bytes(), key


def test_wrong_contexts_log_is_the_documented_shift(demo):
    out, _ = demo
    log = pl.read_parquet(example_rag_log())
    broken = pl.read_parquet(out / EXAMPLE_FILES["rag_log_wrong_contexts"])
    assert broken.columns == log.columns and broken.height == log.height == 200
    assert broken.drop("contexts").equals(log.drop("contexts"))
    contexts = log["contexts"].to_list()
    assert broken["contexts"].to_list() == [contexts[-1], *contexts[:-1]]
    assert broken["contexts"][5].to_list() == contexts[4] and broken["contexts"][0].to_list() == contexts[199]


def test_demo_scores_come_from_the_written_inputs(demo):
    out, printed = demo
    # the published BM25 nDCG@10 (Pyserini) from the copied files, as ragframe trec computes it
    per_query = rf.evaluate_run(
        rf.read_trec_run(out / "run.bm25.txt"), rf.read_qrels(out / "qrels.txt"), k=[10], metrics=["ndcg_at_k"]
    )
    assert round(rf.run_summary(per_query)["ndcg_at_10"].item(), 4) == 0.5058
    assert "ndcg_at_10         0.5058              0.6868" in printed
    rag = pl.read_parquet(out / "rag_scores.parquet")
    assert rag.height == 200 and rag["id"].to_list() == list(range(200))
    assert not [c for c in rag.columns if c.endswith("_signals")]  # the signals are for the report only


def test_demo_heuristic_summary_lists_scores_not_the_human_labels(demo):
    _, printed = demo
    lines = printed.split("heuristic RAG metrics", 1)[1].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    rows = []
    for line in lines[header + 2 :]:  # after the header and its dashes, up to the blank line
        if not line.strip():
            break
        rows.append(line.split()[0])
    assert rows == [
        "faithfulness",
        "answer_relevance",
        "context_precision",
        "context_relevance",
        "hallucination_rate",
        "composite_score",
    ]


def _agreement_rows(printed: str) -> tuple[list[str], dict[str, list[str]]]:
    """The demo's agreement table: header cells (split on 2+ spaces) and rows keyed by metric."""
    lines = printed.split("do the scores agree with the human labels?", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells
    return header, rows


@pytest.mark.slow
def test_demo_shows_agreement_of_both_methods_with_the_human_labels(demo):
    _, printed = demo
    header, rows = _agreement_rows(printed)
    assert header == ["metric", "human label", "good", "ragframe", "rag-eval-node-ts", "passes", "seed passes"]
    assert list(rows) == [
        "faithfulness",
        "hallucination_rate",
        "answer_relevance",
        "context_precision",
        "context_relevance",
    ]
    assert "0.5 is chance, below 0.5 points the wrong way" in printed
    # the printed AUROCs are scikit-learn's on the two methods' scores, to the 3 decimals shown
    log = pl.read_parquet(example_rag_log())
    columns = header.index("ragframe"), header.index("rag-eval-node-ts")
    for metric, cells in rows.items():
        label = cells[1]
        for column, options in zip(columns, ({}, {"compat": "rag-eval-node-ts"})):
            scores = rf.evaluate(log, [metric], composite=False, **options)[metric].to_numpy()
            expected = roc_auc_score(log[label].to_numpy(), scores)
            assert cells[column].split(" [")[0] == f"{expected:.3f}", (metric, options)
        assert int(cells[2]) == int(log[label].sum())
    new, seed = (float(rows["faithfulness"][c].split(" [")[0]) for c in columns)
    assert new > seed  # 0.852 against 0.727
    # passes: scores at or above each method's default threshold; with the seed's (0.7), no answer passes
    # faithfulness although humans judged 172 faithful (issue 12)
    thresholds = dict(rf.list_metrics().select("name", "threshold").iter_rows())
    for metric, cells in rows.items():
        scores = rf.evaluate(log, [metric], composite=False)[metric]
        assert int(cells[header.index("passes")]) == int((scores >= thresholds[metric]).sum()), metric
    assert rows["faithfulness"][header.index("seed passes")] == "0"
    assert rows["context_relevance"][header.index("rag-eval-node-ts")] == "0.500 [0.500, 0.500]"  # constant 0


def test_wrong_contexts_lowers_the_context_metrics_only():
    log = pl.read_parquet(example_rag_log())
    metrics = ["faithfulness", "answer_relevance", "context_precision"]
    base = rf.evaluate(log, metrics).select(metrics).mean()
    broken = rf.evaluate(wrong_contexts(log), metrics).select(metrics).mean()
    assert broken["answer_relevance"].item() == base["answer_relevance"].item()
    assert broken["faithfulness"].item() < base["faithfulness"].item() - 0.04
    assert broken["context_precision"].item() < base["context_precision"].item() - 0.1


def test_wrong_contexts_errors_and_other_column_name():
    frame = pl.DataFrame({"chunks": [["a"], ["b"]]})
    assert wrong_contexts(frame, contexts="chunks")["chunks"].to_list() == [["b"], ["a"]]
    with pytest.raises(rf.SchemaError, match=r"wrong_contexts.*missing column.*contexts"):
        wrong_contexts(frame)
    with pytest.raises(rf.SchemaError, match="no row"):
        wrong_contexts(frame.clear(), contexts="chunks")
    with pytest.raises(rf.SchemaError, match="polars DataFrame"):
        wrong_contexts(frame.to_pandas(), contexts="chunks")


def test_write_examples_replaces_earlier_files(tmp_path):
    (tmp_path / "qrels.txt").write_text("stale", encoding="utf-8")
    written = write_examples(tmp_path)
    assert written["qrels"].read_bytes() == example_paths()["qrels"].read_bytes()


def _estimate_rows(printed: str) -> dict[str, list[str]]:
    """The demo's estimate table: rows keyed by the method's first word, cells split on 2+ spaces."""
    lines = printed.split("the rate of faithful answers from 50 labels", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("method "))
    assert re.split(r"\s{2,}", lines[start].strip()) == ["method", "rate", "ci_low", "ci_high", "labels"]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0].split()[0]] = cells
    return rows


def test_demo_estimates_the_faithful_rate_from_50_labels(demo):
    """PPI++ and classical from the same 50 seeded labels (ppi_py's numbers), next to the truth from all 200."""
    ppi_py = pytest.importorskip("ppi_py")
    import numpy as np

    _, printed = demo
    rows = _estimate_rows(printed)
    assert list(rows) == ["ppi++", "classical", "truth"]
    log = pl.read_parquet(example_rag_log())
    heuristic = rf.evaluate(log, ["faithfulness"], composite=False)["faithfulness"].to_numpy()
    labels = log["human_faithfulness"].to_numpy().astype(float)
    kept = (pl.Series(range(200)).shuffle(seed=7) < 50).to_numpy()  # the documented draw: seed 7, 50 rows
    y, f, u = labels[kept], heuristic[kept], heuristic[~kept]
    low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, f, u, alpha=0.05))
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, u))[0])
    assert rows["ppi++"][1:] == [f"{point:.4f}", f"{low:.4f}", f"{high:.4f}", "50"]
    c_low, c_high = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert rows["classical"][1:] == [f"{y.mean():.4f}", f"{c_low:.4f}", f"{c_high:.4f}", "50"]
    assert rows["truth"][1:] == ["0.8600", "-", "-", "200"]  # 172 of the 200 answers judged faithful
    # the real numbers of this draw: PPI++ 0.8264 [0.7264, 0.9263], narrower than the labels' [0.7135, 0.9265];
    # both cover the truth
    assert rows["ppi++"][1:4] == ["0.8264", "0.7264", "0.9263"]
    assert rows["classical"][1:4] == ["0.8200", "0.7135", "0.9265"]
    assert "worth 56.8 labels (x1.14)" in printed and "the other 150 are hidden from the estimator" in printed
