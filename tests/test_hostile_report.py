"""Issue 19, parts 3, 5 and 6: what the report and the demo show, one test per reported case.

A: a constant labelled score (all 0.0 is common) broke ``rf.report(..., labels=)``, ``ragframe
report --labels`` and ``rf.plot.calibration`` with an IndexError; it is the chance diagonal,
AUROC 0.5, as scikit-learn says. B: the compared frame's name, the evidence of the worst
rows, the agreement table's width, the ranking report (forest-plot legend, pass_rate, query
text) and the demo's two identical context metrics.
"""

from __future__ import annotations

import contextlib
import io
import re
from html import unescape

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, roc_auc_score, roc_curve
from test_report import Page, read_page

import ragframe as rf
from ragframe.cli.main import main
from ragframe.datasets import example_paths, wrong_contexts
from ragframe.plot.calibration import roc_points
from ragframe.reporting.content import identical_columns

HUMAN = [1, 0, 1, 0, 1, 1]  # 6 pairs: the chance agreement 1/3 is not a binary fraction


def _constant(value: float) -> pl.DataFrame:
    return pl.DataFrame({"id": range(len(HUMAN)), "faithfulness": [value] * len(HUMAN), "human": HUMAN})


def _section(html: str, name: str) -> str:
    after = html.split(f'<h2 id="{name}">', 1)[1]
    return after.split("<h2 ", 1)[0]


def _text(html: str) -> str:
    """The page's text: tags (and the <wbr> break hints) dropped, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", html)))


# ----------------------------------------------------------------------------- A: a constant labelled score


@pytest.mark.parametrize("value", [0.0, 0.37, 1.0])
def test_agreement_of_a_constant_score_is_chance_as_sklearn_says(value):
    row = rf.agreement_with_labels(_constant(value), label_columns="human", n_resamples=200).row(0, named=True)
    scores = [value] * len(HUMAN)
    assert row["auroc"] == roc_auc_score(HUMAN, scores) == 0.5
    assert row["auroc_low"] == row["auroc_high"] == 0.5  # every resample is a constant score too
    assert row["youden_threshold"] is None and row["youden_j"] == 0.0  # no cut beats chance
    assert row["spearman"] is None and row["kendall"] is None  # undefined for a constant side
    predicted = [int(value >= 0.4)] * len(HUMAN)  # faithfulness passes at 0.4
    assert row["accuracy"] == np.mean(np.array(predicted) == np.array(HUMAN))
    assert row["cohen_kappa"] == cohen_kappa_score(HUMAN, predicted) == 0.0  # exactly, not -8e-17


@pytest.mark.parametrize("value", [0.0, 0.37, 1.0])
def test_calibration_of_a_constant_score_is_the_chance_diagonal(value):
    fig = rf.plot.calibration(_constant(value), "human")
    (line,) = [line for line in fig.axes[0].lines if line.get_gid() == "roc:faithfulness"]
    fpr, tpr, _ = roc_curve(HUMAN, [value] * len(HUMAN))
    assert line.get_xdata().tolist() == fpr.tolist() == [0.0, 1.0]
    assert line.get_ydata().tolist() == tpr.tolist() == [0.0, 1.0]
    assert fig.legends[0].get_texts()[0].get_text() == "faithfulness: AUROC 0.500 (n=6, 4 positive)"


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.booleans()), min_size=2, max_size=30).filter(
        lambda pairs: len({p for _, p in pairs}) == 2
    )
)
def test_roc_points_are_sklearns_roc_curve_ties_and_constants_included(pairs):
    score = np.array([s for s, _ in pairs])
    positive = np.array([p for _, p in pairs])
    fpr, tpr = roc_points(score, positive)
    want_fpr, want_tpr, _ = roc_curve(positive, score)
    assert fpr.tolist() == pytest.approx(want_fpr.tolist(), abs=1e-15)
    assert tpr.tolist() == pytest.approx(want_tpr.tolist(), abs=1e-15)


def _agreement_row(page: Page) -> dict:
    (row,) = page.records("agreement")
    return row


def test_report_with_a_constant_labelled_score_shows_auroc_one_half(tmp_path):
    html, page = read_page(rf.report(_constant(0.0), tmp_path / "r.html", labels={"faithfulness": "human"}))
    row = _agreement_row(page)
    assert (row["metric"]["text"], row["label"]["text"]) == ("faithfulness", "human")
    assert row["auroc"]["value"] == row["auroc_low"]["value"] == row["auroc_high"]["value"] == "0.5"
    assert row["youden_threshold"]["text"] == "-"
    calibration = _section(html, "calibration")
    assert "no picture" not in calibration and calibration.count('src="data:image/png;base64,') == 1


def test_cli_report_labels_with_a_constant_score_exits_0(tmp_path):
    _constant(0.0).write_parquet(tmp_path / "scores.parquet")
    out = tmp_path / "r.html"
    argv = ["report", str(tmp_path / "scores.parquet"), "--labels", "faithfulness=human", "-o", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    assert _agreement_row(read_page(out)[1])["auroc"]["value"] == "0.5"


# ----------------------------------------------------------------------------- B: the names of the two sides


@pytest.fixture(scope="module")
def ares(ares_log) -> dict[str, pl.DataFrame]:
    metrics = ["faithfulness", "answer_relevance", "context_relevance"]
    scored = rf.evaluate(ares_log, metrics, explain=True)
    return {"scored": scored, "broken": rf.evaluate(wrong_contexts(ares_log), metrics)}


@pytest.mark.slow
def test_label_and_compare_label_name_both_sides(ares, tmp_path):
    path = rf.report(
        ares["scored"], tmp_path / "r.html", compare=ares["broken"], label="week 12", compare_label="wrong contexts"
    )
    html, page = read_page(path)
    comparison = _text(_section(html, "comparison"))
    assert "a = week 12 (these scores), b = wrong contexts (compared)" in comparison
    assert "Mean difference, b (wrong contexts) minus a (week 12)." in comparison
    provenance = {row[0]["text"]: row[1]["text"] for row in page.table("provenance")[0]["rows"]}
    assert provenance["source"] == "week 12: in-memory frame"
    assert provenance["compared with"] == "wrong contexts: in-memory frame (200 rows), paired on id"
    assert page.title_text == "ragframe report: week 12"


@pytest.mark.slow
def test_two_frames_are_told_apart_without_labels(ares, tmp_path):
    html, _ = read_page(rf.report(ares["scored"], tmp_path / "r.html", compare=ares["broken"], worst=0))
    comparison = _text(_section(html, "comparison"))
    assert "a = scores (in-memory frame) (these scores), b = compare (in-memory frame) (compared)" in comparison


@pytest.mark.slow
def test_cli_names_the_sides_by_their_file_names(ares, tmp_path):
    a, b = tmp_path / "this_week.parquet", tmp_path / "wrong_contexts.parquet"
    ares["scored"].drop(pl.selectors.ends_with("_signals")).write_parquet(a)
    ares["broken"].write_parquet(b)
    out = tmp_path / "r.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(a), "--compare", str(b), "--worst", "0", "-o", str(out)]) == 0
    comparison = _text(_section(out.read_text(encoding="utf-8"), "comparison"))
    assert f"a = {a} (these scores), b = {b} (compared)" in comparison


@pytest.mark.slow
def test_ranking_curves_name_both_sides(tmp_path, monkeypatch):
    paths = example_paths()
    qrels = rf.read_qrels(paths["qrels"])
    a, b = (
        rf.evaluate_run(rf.read_trec_run(paths[name]), qrels, k=[1, 10], metrics=["ndcg_at_k"])
        for name in ("bm25", "bm25+gpt3.5-rerank")
    )
    drawn = []
    original = rf.plot.ranking_curve
    monkeypatch.setattr(rf.plot, "ranking_curve", lambda runs, **kw: drawn.append(list(runs)) or original(runs, **kw))
    rf.report(a, tmp_path / "r.html", compare=b, on="query_id", worst=0, label="BM25", compare_label="rerank")
    assert drawn == [["a: BM25", "b: rerank"]]


@pytest.mark.slow
def test_demo_report_says_wrong_contexts(demo):
    out, _ = demo
    comparison = _text(_section((out / "report.html").read_text(encoding="utf-8"), "comparison"))
    assert "a = ARES log (these scores), b = wrong contexts (compared)" in comparison
    ranking = _text(_section((out / "ranking_report.html").read_text(encoding="utf-8"), "comparison"))
    assert "a = bm25 (these scores), b = bm25+gpt3.5-rerank (compared)" in ranking


# ----------------------------------------------------------------------------- B: evidence of the worst rows

EDGE = pl.DataFrame(
    {
        "id": [0, 1, 2, 3, 4],
        "question": ["What is X?", "What is X?", "What is X?", "Where is Paris?", "What is X?"],
        "answer": [
            "The context is not relevant to the question.",
            "",
            "X is a thing.",
            "Paris is in France.",
            "Quantum foam is everywhere.",
        ],
        "contexts": [["X is a thing."], ["X is a thing."], [], ["Cats sleep a lot."], ["X is a thing."]],
        "ground_truth": ["X is a thing.", "X is a thing.", "X is a thing.", "Paris is in France.", "X is a thing."],
    }
)
RAG = ["faithfulness", "hallucination_rate", "answer_relevance", "context_relevance", "context_precision"]


@pytest.mark.parametrize("metric", [*RAG, "context_recall"])
def test_every_zero_score_explains_itself(metric):
    """A 0.0 with explain=True has at least one signal: the reason, with its evidence where there is one."""
    scored = rf.evaluate(EDGE, [metric], explain=True)
    zero = scored.filter(pl.col(metric) == 0.0)
    assert zero.height >= 2, metric
    assert zero[f"{metric}_signals"].list.len().min() >= 1, zero.select("id", f"{metric}_signals").rows()


@pytest.mark.parametrize(
    ("metric", "row", "shown"),
    [
        (
            "faithfulness",
            0,
            "warning: Answer declines or hedges instead of answering: score 0. “not relevant to the question”",
        ),
        ("faithfulness", 1, "warning: Answer has no sentence with a word: score 0."),
        ("faithfulness", 2, "warning: No context to check the answer against: score 0."),
        (
            "hallucination_rate",
            4,
            "critical: Answer sentence appears unsupported by any context (bigram containment=0.000). "
            "“Quantum foam is everywhere.”",
        ),
        (
            "answer_relevance",
            0,
            "warning: Answer declines or hedges instead of answering (score=0.000). “not relevant to the question”",
        ),
        ("context_relevance", 3, "info: Context chunk(s) with low relevance to the question: indices [0]."),
        ("context_precision", 2, "warning: No contexts were retrieved: score 0."),
        (
            "context_recall",
            3,
            "warning: Ground-truth sentence not found in the contexts (bigram containment=0.000). "
            "“Paris is in France.”",
        ),
    ],
    ids=[
        "faithfulness-refusal",
        "faithfulness-no-words",
        "faithfulness-no-contexts",
        "hallucination_rate-unsupported-sentence",
        "answer_relevance-refusal",
        "context_relevance-low-chunk",
        "context_precision-no-contexts",
        "context_recall-missing-sentence",
    ],
)
def test_worst_rows_with_a_zero_show_the_evidence(metric, row, shown, tmp_path):
    scored = rf.evaluate(EDGE, [metric], explain=True, composite=False)
    assert scored[metric][row] == 0.0
    _, page = read_page(rf.report(scored, tmp_path / "r.html", metrics=[metric], worst=5))
    (record,) = [r for r in page.records("worst") if r["id"]["text"] == str(row)]
    assert record[f"{metric}_signals"]["text"] == shown


@pytest.mark.parametrize(
    ("metric", "texts"),
    [
        ("context_relevance", ["question", "contexts"]),
        ("context_precision", ["question", "contexts"]),
        ("context_recall", ["question", "contexts", "ground_truth"]),
        ("faithfulness", ["question", "answer"]),
        ("answer_relevance", ["question", "answer"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(v),
)
def test_context_metrics_worst_rows_show_the_contexts_judged(metric, texts, tmp_path):
    scored = rf.evaluate(EDGE, [metric], explain=True, composite=False)
    _, page = read_page(rf.report(scored, tmp_path / "r.html", metrics=[metric], worst=5))
    header = [c["text"] for c in page.table("worst")[0]["rows"][0]]
    assert header == ["row", "id", *texts, metric, f"{metric}_signals"]
    if "contexts" in texts:
        (cats,) = [r for r in page.records("worst") if r["id"]["text"] == "3"]
        assert cats["contexts"]["text"] == "[0] Cats sleep a lot."


def test_many_chunks_are_numbered_and_cut_at_ten(tmp_path):
    chunks = [f"chunk {i} about cats" for i in range(13)]
    frame = pl.DataFrame({"id": [1], "question": ["What is X?"], "contexts": [chunks]})
    scored = rf.evaluate(frame, ["context_relevance"], composite=False)
    _, page = read_page(rf.report(scored, tmp_path / "r.html", worst=1))
    (record,) = page.records("worst")
    assert record["contexts"]["text"] == "".join(f"[{i}] {c}" for i, c in enumerate(chunks[:10])) + "… 3 more chunks"


# ----------------------------------------------------------------------------- B: the agreement table's width

#: The browser window the issue measured, and the page's side padding (main { padding: 0 32px }).
WINDOW, PAGE_PADDING = 1200, 2 * 32


def _width(text: str, bold: bool = False) -> float:
    """Pixels of ``text`` at the table's 13 px in DejaVu Sans (a wide font: Chromium's default on Debian)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    prop = FontProperties(family="DejaVu Sans", size=13, weight="bold" if bold else "normal")
    return TextPath((0, 0), text, prop=prop).get_extents().width if text else 0.0


def _table_width(html: str, css: str, cls: str) -> float:
    """The narrowest width of a table as a browser lays it out: each column as wide as its widest unbreakable text."""
    body = html.split(f'<table class="{cls}">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
    header_wraps = "white-space: nowrap" not in css.split("thead th {", 1)[1].split("}", 1)[0]
    padding = float(re.search(r"th, td \{ padding: \d+px (\d+)px", css).group(1))
    columns: list[float] = []
    for index, row in enumerate(rows):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
        for k, cell in enumerate(cells):
            if index == 0:  # a header breaks only at its <wbr> hints, and only when headers may wrap
                parts = cell.split("<wbr>") if header_wraps else [cell.replace("<wbr>", "")]
                columns.append(max(_width(unescape(p), bold=True) for p in parts))
            else:
                columns[k] = max(columns[k], _width(unescape(re.sub(r"<[^>]+>", "", cell))))
    return sum(columns) + 2 * padding * len(columns)


@pytest.mark.slow
def test_agreement_table_fits_the_page_or_scrolls_visibly(demo):
    out, _ = demo
    html, page = read_page(out / "report.html")
    assert '<div class="table-wrap">\n<table class="agreement">' in html
    wrap = page.style.split(".table-wrap {", 1)[1].split("}", 1)[0]
    assert "overflow-x: auto" in wrap  # wider than the page: it scrolls inside its box...
    assert re.search(r"\.table-wrap::-webkit-scrollbar \{ height: \d+px; \}", page.style)  # ...with a scrollbar
    assert re.search(r"\.table-wrap::-webkit-scrollbar-thumb \{ background: #[0-9a-f]{6}", page.style)  # shown
    assert "scrollbar-color:" in page.style  # Firefox
    assert "youden_<wbr>threshold" in html and "cohen_<wbr>kappa" in html
    assert _table_width(html, page.style, "agreement") <= WINDOW - PAGE_PADDING  # and the demo's table fits


# ----------------------------------------------------------------------------- B: the ranking report


@pytest.fixture(scope="module")
def trec_per_query() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query scores of the bundled bm25 and bm25+gpt3.5-rerank TREC runs (rf.evaluate_run)."""
    paths = example_paths()
    qrels = rf.read_qrels(paths["qrels"])
    return tuple(
        rf.evaluate_run(rf.read_trec_run(paths[name]), qrels, k=[1, 5, 10, 100])
        for name in ("bm25", "bm25+gpt3.5-rerank")
    )


def test_forest_plot_legend_hides_no_interval(trec_per_query):
    measures = ["ndcg_at_1", "ndcg_at_5", "ndcg_at_10", "ndcg_at_100", "recall_at_1", "mrr", "average_precision"]
    fig = rf.plot.compare(rf.compare(*trec_per_query, on="query_id", metrics=measures))
    fig.draw_without_rendering()
    (ax,) = fig.axes
    assert ax.get_legend() is None and len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent()
    assert legend.y1 <= ax.get_window_extent().y0  # below the axes: over no bar, ndcg_at_1's included
    bars = next(c for c in ax.collections if c.get_gid() == "ci")
    assert not any(legend.overlaps(path.get_extents(ax.transData)) for path in bars.get_paths())


@pytest.mark.slow
def test_ranking_report_has_no_pass_rate_column(trec_per_query, tmp_path):
    columns = ["query_id", "ndcg_at_1", "ndcg_at_10", "mrr"]
    html, page = read_page(rf.report(trec_per_query[0].select(columns), tmp_path / "r.html", on="query_id", worst=0))
    header = [c["text"] for c in page.table("summary")[0]["rows"][0]]
    assert "pass_rate" not in header and header[:2] == ["metric", "count"] and "ci_high" in header
    assert "No metric has a pass threshold" in _text(_section(html, "summary"))


@pytest.mark.slow
def test_rag_report_keeps_its_pass_rate_column(ares, tmp_path):
    _, page = read_page(rf.report(ares["scored"], tmp_path / "r.html", worst=0, by="reaction"))
    for cls in ("summary", "slice"):
        header = [c["text"] for c in page.table(cls)[0]["rows"][0]]
        assert "pass_rate" in header, cls


@pytest.mark.slow
def test_worst_queries_show_their_text_when_the_run_has_it(trec_per_query, tmp_path):
    per_query = trec_per_query[0].select("query_id", "ndcg_at_10", "mrr")
    texts = {qid: f"query text {qid}" for qid in per_query["query_id"].to_list()}
    with_text = per_query.with_columns(query=pl.col("query_id").replace_strict(texts))
    html, page = read_page(rf.report(with_text, tmp_path / "a.html", on="query_id", worst=3))
    for index in (0, 1):
        records = page.records("worst", index=index)
        assert [r["query"]["text"] for r in records] == [texts[r["query_id"]["text"]] for r in records]
    assert "add one to see what each row asked" not in html
    html, page = read_page(rf.report(per_query, tmp_path / "b.html", on="query_id", worst=3))
    assert "query" not in [c["text"] for c in page.table("worst")[0]["rows"][0]]
    assert "The scores have no query or question column: add one to see what each row asked (ragframe" in _text(html)
    assert "--keep id question answer contexts" in _text(html)


# ----------------------------------------------------------------------------- B: the demo's identical context metrics


def test_demo_says_why_context_precision_equals_context_relevance(demo):
    out, printed = demo
    assert "ragframe's context_precision and context_relevance are equal on every row here: each row has one" in (
        printed
    )
    summary = _text(_section((out / "report.html").read_text(encoding="utf-8"), "summary"))
    assert "context_precision, context_relevance are equal on every row" in summary


def test_identical_columns_are_equal_on_every_row_not_just_in_summary():
    frame = pl.DataFrame({"a": [0.1, 0.9, None], "b": [0.1, 0.9, None], "c": [0.9, 0.1, None], "d": [0.1, 0.9, 0.5]})
    summary = rf.summarize(frame, metrics=["a", "b", "c", "d"])
    assert summary["mean"][0] == summary["mean"][2]  # c has a's summary (mean, std, count) but other rows
    assert identical_columns(frame, summary) == [["a", "b"]]
