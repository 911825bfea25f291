"""rf.report and ``ragframe report``: the page is parsed with the standard library's html.parser.

Values are checked against independent computations (rf.summarize, rf.compare,
rf.agreement_with_labels are each checked against scipy/scikit-learn in their own
tests; here the page must carry their numbers exactly, through the cells' data-value).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.cli.main import main
from ragframe.datasets import example_paths, example_rag_log, wrong_contexts

#: The sections of every report; "ranking" (between "calibration" and "worst-rows") only for ranking scores.
SECTIONS = ["provenance", "summary", "distributions", "slices", "comparison", "calibration", "worst-rows"]
LABELS = {
    "faithfulness": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_relevance": "human_context_relevance",
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """What the tests look at: sections, images, every src/href, tags, tables (cells with data-value), style."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[str] = []
        self.images: list[tuple[str, str]] = []  # (section, src)
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.tags: dict[str, int] = {}
        self.tables: list[dict] = []
        self.style = ""
        self.title_text = ""
        self._in: list[str] = []
        self._cell: dict | None = None
        self.feed(html)
        self.close()

    @property
    def section(self) -> str:
        return self.sections[-1] if self.sections else ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self._in.append(tag)
        for name in ("src", "href", "action", "data", "poster"):
            if attributes.get(name) is not None:
                self.urls.append((tag, name, attributes[name]))
        if tag == "h2":
            self.sections.append(attributes.get("id") or "")
        elif tag == "img":
            self.images.append((self.section, attributes.get("src") or ""))
            self._in.pop()  # a void element
        elif tag == "table":
            self.tables.append({"class": attributes.get("class") or "", "section": self.section, "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = {"tag": tag, "column": attributes.get("data-column"), "value": attributes.get("data-value")}
            self._cell["text"] = ""
            self.tables[-1]["rows"][-1].append(self._cell)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag != "img":
            self._in.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._cell = None
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "style":
            self.style += data
        if self._in and self._in[-1] == "title":
            self.title_text += data
        if self._cell is not None:
            self._cell["text"] += data

    def table(self, cls: str, section: str | None = None) -> list[dict]:
        return [t for t in self.tables if t["class"] == cls and (section is None or t["section"] == section)]

    def records(self, cls: str, section: str | None = None, index: int = 0) -> list[dict[str, dict]]:
        """The rows of the index-th table of that class as {column: cell} (header row left out)."""
        rows = self.table(cls, section)[index]["rows"]
        header = [c["text"] for c in rows[0]]
        return [dict(zip(header, row)) for row in rows[1:]]


def read_page(path: Path) -> tuple[str, Page]:
    html = path.read_text(encoding="utf-8")
    return html, Page(html)


@pytest.fixture(scope="module")
def frames(ares_log) -> dict[str, pl.DataFrame]:
    log = ares_log
    return {
        "log": log,
        "scored": rf.evaluate(log, list(LABELS), explain=True),
        "broken": rf.evaluate(wrong_contexts(log), list(LABELS)),
    }


@pytest.fixture(scope="module")
def full(frames, tmp_path_factory) -> tuple[Path, str, Page]:
    """One report with every section: compare, by, labels."""
    path = tmp_path_factory.mktemp("report") / "sub" / "report.html"  # parents are created
    written = rf.report(frames["scored"], path, compare=frames["broken"], by="reaction", labels=LABELS)
    assert written == path and written.is_absolute()
    return (path, *read_page(path))


def _float(cell: dict) -> float | None:
    return None if cell["value"] is None else float(cell["value"])


@pytest.mark.slow
def test_every_section_is_present_in_order(full):
    _, html, page = full
    assert page.sections == SECTIONS
    assert "#ranking" not in html  # no ranking measure: no section, no link to one
    assert page.title_text.startswith("ragframe report: scores (in-memory frame)")


def test_every_image_is_an_inline_png(full):
    _, _, page = full
    sections = [section for section, _ in page.images]
    # distributions, one slice heatmap, the forest plot, the ROC curves; no ranking measure here
    assert sections == ["distributions", "slices", "comparison", "calibration"]
    for _, src in page.images:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.removeprefix("data:image/png;base64,"), validate=True)
        assert data[:8] == PNG_MAGIC and len(data) > 5_000


def test_nothing_is_fetched(full):
    _, _, page = full
    for tag, attribute, value in page.urls:
        assert not value.lower().startswith(("http://", "https://", "//")), (tag, attribute, value)
        assert value.startswith(("data:image/png;base64,", "#")), (tag, attribute, value[:40])
    for tag in ("script", "link", "iframe", "object", "embed", "base"):
        assert tag not in page.tags, tag
    assert "@import" not in page.style and "url(" not in page.style


def test_summary_numbers_are_rf_summarize(full, frames):
    _, _, page = full
    expected = rf.summarize(frames["scored"])
    rows = page.records("summary")
    assert [r["metric"]["text"] for r in rows] == expected["metric"].to_list()
    checked = 0
    for row, want in zip(rows, expected.iter_rows(named=True)):
        for column, cell in row.items():
            if column == "metric":
                continue
            value = want[column]
            assert _float(cell) == value, (want["metric"], column)
            assert cell["text"] == (f"{value:.4f}" if isinstance(value, float) else str(value))
            checked += 1
    assert checked == 4 * 12


def test_comparison_p_values_are_rf_compare(full, frames):
    _, _, page = full
    expected = rf.compare(frames["scored"], frames["broken"], on="id")
    rows = page.records("comparison")
    assert [r["metric"]["text"] for r in rows] == expected["metric"].to_list()
    for row, want in zip(rows, expected.iter_rows(named=True)):
        for column in ("n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted"):
            assert _float(row[column]) == want[column], (want["metric"], column)
        assert row["winner"]["text"] == want["winner"]
        assert row["significant"]["text"] == ("yes" if want["significant"] else "no")
    # the simulated retrieval bug: answer_relevance does not read the contexts
    relevance = next(r for r in rows if r["metric"]["text"] == "answer_relevance")
    assert _float(relevance["p_value"]) == 1.0 and relevance["winner"]["text"] == "tie"


def test_agreement_and_slices_are_the_library_s(full, frames):
    _, html, page = full
    assert "n_resamples=200, seed=0" in html  # the page says how its AUROC intervals were drawn
    agreement = rf.agreement_with_labels(frames["scored"], label_columns=LABELS, n_resamples=200, seed=0)
    rows = page.records("agreement")
    assert [(r["metric"]["text"], r["label"]["text"]) for r in rows] == list(
        zip(agreement["metric"], agreement["label"])
    )
    for row, want in zip(rows, agreement.iter_rows(named=True)):
        for column in ("n", "positives", "auroc", "auroc_low", "auroc_high", "youden_threshold"):
            assert _float(row[column]) == want[column], column
    assert round(_float(rows[0]["auroc"]), 3) == 0.852  # faithfulness vs human_faithfulness (README)
    slices = rf.summarize(frames["scored"], by="reaction")
    rows = page.records("slice")
    assert [(r["reaction"]["text"], r["metric"]["text"]) for r in rows] == list(
        zip(slices["reaction"], slices["metric"])
    )
    assert [_float(r["mean"]) for r in rows] == slices["mean"].to_list()
    assert [_float(r["count"]) for r in rows] == slices["count"].to_list()


def test_worst_rows_are_the_lowest_scores_with_texts_and_signals(full, frames):
    _, _, page = full
    scored = frames["scored"]
    tables = page.table("worst")
    assert len(tables) == 4  # three metrics and composite_score
    for index, metric in enumerate(["faithfulness", "answer_relevance", "context_relevance", "composite_score"]):
        rows = page.records("worst", index=index)
        values = scored[metric].to_numpy()
        order = np.lexsort((np.arange(len(values)), values))[:5]  # lowest first, ties by position
        assert [int(r["row"]["value"]) for r in rows] == order.tolist(), metric
        assert [_float(r[metric]) for r in rows] == values[order].tolist()
        assert [int(r["id"]["value"]) for r in rows] == scored["id"].to_numpy()[order].tolist()
        for row, position in zip(rows, order):
            # the answer; for context_relevance (which does not read it) the numbered contexts it judged
            text = "contexts" if metric == "context_relevance" else "answer"
            assert set(row) & {"answer", "contexts"} == {text}
            values = scored[text][int(position)]
            numbers = [f"[{i}] " for i in range(len(values))] if text == "contexts" else [""]
            values = values if text == "contexts" else [values]
            cut = [n + (v if len(v) <= 300 else v[:300] + "…") for n, v in zip(numbers, values)]
            assert row[text]["text"] == "".join(cut)
            assert row["reaction"]["text"] == scored["reaction"][int(position)]
            assert row["question"]["text"] == scored["question"][int(position)]
    relevance = page.records("worst", index=1)
    signals = scored["answer_relevance_signals"][int(relevance[0]["row"]["value"])].to_list()
    assert signals and relevance[0]["answer_relevance_signals"]["text"] == "".join(
        f"{s['severity']}: {s['message']}" + (f" “{s['evidence']}”" if s["evidence"] else "") for s in signals
    )


def test_provenance_names_the_source_rows_version_and_options(full):
    _, _, page = full
    provenance = {row[0]["text"]: row[1]["text"] for row in page.table("provenance")[0]["rows"]}
    assert provenance["source"] == "in-memory frame"
    assert provenance["rows"] == "200"
    assert provenance["ragframe version"] == rf.__version__
    assert provenance["generated at"].endswith(" UTC")
    assert provenance["slice columns (by)"] == "reaction"
    assert provenance["compared with"] == "in-memory frame (200 rows), paired on id"
    assert provenance["pictures of rows"] == "Drawn from all 200 rows."


def test_user_text_is_escaped(tmp_path):
    evil = "<script>alert('x')</script>"
    frame = pl.DataFrame(
        {
            "id": [1, 2, 3],
            "question": ["<b>bold?</b>", "q & a", "ok"],
            "answer": [evil, "fine", '"><img src=https://evil.example/x.png>'],
            "faithfulness": [0.1, 0.9, 0.2],
            "segment": ["<i>s</i>", "t", "t"],
        }
    )
    path = rf.report(frame, tmp_path / "r.html", by="segment", title=evil, worst=3)
    html, page = read_page(path)
    assert "script" not in page.tags and "b" not in page.tags and "i" not in page.tags
    assert page.tags["img"] == 2  # distributions and the slice heatmap: not the answer's
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert page.title_text == evil
    shown = [r["answer"]["text"] for r in page.records("worst")]
    assert shown == [evil, '"><img src=https://evil.example/x.png>', "fine"]
    assert [r["segment"]["text"] for r in page.records("slice")][:1] == ["<i>s</i>"]
    assert all(not v.startswith("https://") for _, _, v in page.urls)


def test_a_picture_the_plot_refuses_leaves_its_reason_and_the_tables(tmp_path):
    frame = pl.DataFrame({"id": [1, 2, 3, 4], "faithfulness": [0.2, 0.4, 0.9, 0.7], "human": [1, 1, 1, 1]})
    path = rf.report(frame, tmp_path / "r.html", labels="human")  # one class: no ROC curve
    html, page = read_page(path)
    assert [s for s, _ in page.images] == ["distributions"]
    assert "Scores against human: no picture.</strong> calibration: label has a single class" in html
    row = page.records("agreement")[0]
    assert int(row["n"]["value"]) == 4 and int(row["positives"]["value"]) == 4 and row["auroc"]["text"] == "-"


@pytest.mark.slow
def test_evaluate_parquet_output_folder_with_its_manifest(tmp_path):
    log = pl.read_parquet(example_rag_log()).head(60)
    log.write_parquet(tmp_path / "log.parquet")
    rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", metrics=["faithfulness", "answer_relevance"])
    path = rf.report(tmp_path / "out", tmp_path / "report.html", labels="human_faithfulness", by="reaction")
    _, page = read_page(path)
    provenance = {row[0]["text"]: row[1]["text"] for row in page.table("provenance")[0]["rows"]}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert provenance["source"] == str(tmp_path / "out")
    assert provenance["rows"] == "60"
    assert provenance["run source"] == f"{tmp_path / 'log.parquet'} (60 rows)"
    assert json.loads(provenance["evaluator metrics"]) == ["faithfulness", "answer_relevance"]
    assert json.loads(provenance["run batch_rows"]) == 100_000
    assert json.loads(provenance["run keep"]) == manifest["options"]["keep"]
    expected = rf.summarize(rf.read_scores(tmp_path / "out"))
    assert [_float(r["mean"]) for r in page.records("summary")] == expected["mean"].to_list()
    # the label column given for every metric: one (metric, label) row each
    assert [r["label"]["text"] for r in page.records("agreement")] == ["human_faithfulness"] * 3


@pytest.mark.slow
def test_ranking_scores_get_ranking_curves(tmp_path):
    paths = example_paths()
    per_query = rf.evaluate_run(
        rf.read_trec_run(paths["bm25"]), rf.read_qrels(paths["qrels"]), k=[1, 5, 10], metrics=["ndcg_at_k", "mrr"]
    )
    path = rf.report(per_query, tmp_path / "r.html", on="query_id", worst=2)
    html, page = read_page(path)
    assert page.sections == [*SECTIONS[:-1], "ranking", "worst-rows"]
    assert '<a href="#ranking">' in html
    assert [s for s, _ in page.images].count("ranking") == 1  # ndcg at 1, 5, 10
    rows = page.records("worst", index=2)  # ndcg_at_10
    assert [r["query_id"]["text"] for r in rows] == (
        per_query.with_row_index().sort(["ndcg_at_10", "index"])["query_id"].head(2).to_list()
    )


@pytest.mark.slow
def test_ranking_curves_of_a_comparison_draw_both_sides(tmp_path, monkeypatch):
    paths = example_paths()
    qrels = rf.read_qrels(paths["qrels"])
    a, b = (
        rf.evaluate_run(rf.read_trec_run(paths[name]), qrels, k=[1, 5, 10], metrics=["ndcg_at_k"])
        for name in ("bm25", "bm25+gpt3.5-rerank")
    )
    drawn = []
    original = rf.plot.ranking_curve
    monkeypatch.setattr(rf.plot, "ranking_curve", lambda runs, **kw: drawn.append(runs) or original(runs, **kw))
    html, page = read_page(rf.report(a, tmp_path / "r.html", compare=b, on="query_id", worst=0))
    assert page.sections == [*SECTIONS[:-1], "ranking", "worst-rows"]
    assert "a: scores (in-memory frame), b: compare (in-memory frame)" in html
    (runs,) = drawn
    assert list(runs) == ["a: scores (in-memory frame)", "b: compare (in-memory frame)"]
    for side, frame in zip(runs.values(), (a, b)):  # each side's means over all its rows
        expected = frame.select("ndcg_at_1", "ndcg_at_5", "ndcg_at_10").mean().row(0)
        assert side.row(0) == pytest.approx(expected, rel=1e-14)  # b's mean is a lazy (streamed) sum


@pytest.mark.slow
def test_million_rows_aggregate_everything_and_sample_the_pictures(tmp_path):
    n = 1_000_000
    rng = np.random.default_rng(7)
    frame = pl.DataFrame(
        {
            "id": np.arange(n),
            "segment": rng.choice(["a", "b", "c"], n),
            "faithfulness": rng.beta(5, 2, n),
            "answer_relevance": rng.beta(2, 2, n),
            "context_relevance": rng.uniform(size=n),
        }
    )
    frame.write_parquet(tmp_path / "big.parquet")
    started = time.perf_counter()
    path = rf.report(tmp_path / "big.parquet", tmp_path / "big.html", by="segment")
    seconds = time.perf_counter() - started
    html, page = read_page(path)
    assert "a uniform random sample of 100,000 of the 1,000,000 rows (seed 0)" in html
    assert page.sections == SECTIONS
    summary = page.records("summary")
    assert [int(r["count"]["value"]) for r in summary] == [n, n, n]
    expected = rf.summarize(frame)
    assert [_float(r["mean"]) for r in summary] == expected["mean"].to_list()
    assert [_float(r["p90"]) for r in summary] == expected["p90"].to_list()
    assert sum(int(r["count"]["value"]) for r in page.records("slice")) == 3 * n
    assert len(page.images) == 2
    print(f"1M-row report: {seconds:.1f} s")


@pytest.mark.slow
def test_cli_end_to_end(frames, tmp_path):
    frames["scored"].drop(pl.selectors.ends_with("_signals")).write_parquet(tmp_path / "a.parquet")
    frames["broken"].write_parquet(tmp_path / "b.parquet")
    out = tmp_path / "report.html"
    argv = ["report", str(tmp_path / "a.parquet"), "--compare", str(tmp_path / "b.parquet"), "--by", "reaction"]
    argv += ["--labels", "faithfulness=human_faithfulness", "answer_relevance=human_answer_relevance"]
    argv += ["--worst", "3", "--title", "CLI run", "-o", str(out)]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(argv) == 0
    assert stdout.getvalue() == f"{out}\n"
    _, page = read_page(out)
    assert page.sections == SECTIONS and page.title_text == "CLI run"
    assert [(r["metric"]["text"], r["label"]["text"]) for r in page.records("agreement")] == [
        ("faithfulness", "human_faithfulness"),
        ("answer_relevance", "human_answer_relevance"),
    ]
    assert len(page.records("worst")) == 3
    assert len(page.records("comparison")) == 4
    # a label column for every metric, and --metrics
    argv = ["report", str(tmp_path / "a.parquet"), "--labels", "human_faithfulness", "--metrics", "faithfulness"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*argv, "-o", str(out)]) == 0
    _, page = read_page(out)
    assert [r["metric"]["text"] for r in page.records("summary")] == ["faithfulness"]
    assert [r["label"]["text"] for r in page.records("agreement")] == ["human_faithfulness"]


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["--by", "nope"], 3, "ragframe: error: report: missing slice (by) column [column 'nope']"),
        (["--labels", "faithfulness=nope"], 3, "ragframe: error: report: missing label column [column 'nope']"),
        (["--labels", "nope"], 3, "ragframe: error: report: missing label column [column 'nope']"),
        (["--labels", "faithfulness=human_faithfulness", "human_faithfulness"], 2, "not both"),
        (["--labels", "=x"], 2, "expected METRIC=COLUMN or COLUMN"),
        (["--metrics", "nope"], 3, "missing score column [column 'nope']"),
        (["--compare", "missing.parquet"], 3, "ragframe: error: report: compare: no such file or folder"),
        (["--worst", "-1"], 2, "expected an integer >= 0"),
    ],
)
def test_cli_errors_are_one_line_with_the_exit_code(frames, tmp_path, capsys, extra, code, message):
    frames["scored"].drop(pl.selectors.ends_with("_signals")).write_parquet(tmp_path / "a.parquet")
    assert main(["report", str(tmp_path / "a.parquet"), *extra, "-o", str(tmp_path / "r.html")]) == code
    err = capsys.readouterr().err
    assert message in err
    if code == 3:
        assert err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_cli_missing_file(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.parquet"), "-o", str(tmp_path / "r.html")]) == 3
    err = capsys.readouterr().err
    assert err == f"ragframe: error: report: scores: no such file or folder: '{tmp_path / 'none.parquet'}'\n"


@pytest.mark.slow
def test_python_errors(frames, tmp_path):
    scored = frames["scored"]
    with pytest.raises(rf.SchemaError, match=r"missing slice \(by\) column \[column 'nope'\]"):
        rf.report(scored, tmp_path / "r.html", by="nope")
    with pytest.raises(rf.SchemaError, match=r"missing label column \[column 'nope'\]"):
        rf.report(scored, tmp_path / "r.html", labels={"faithfulness": "nope"})
    with pytest.raises(rf.SchemaError, match=r"compared scores.*\[column 'context_relevance'\]"):
        rf.report(scored, tmp_path / "r.html", compare=frames["broken"].drop("context_relevance"))
    with pytest.raises(rf.InputFileError, match="report: scores: no such file"):
        rf.report(tmp_path / "none.parquet", tmp_path / "r.html")
    with pytest.raises(rf.InvalidParameterError, match="worst"):
        rf.report(scored, tmp_path / "r.html", worst=-1)
    with pytest.raises(rf.InvalidParameterError, match="sample_rows"):
        rf.report(scored, tmp_path / "r.html", sample_rows=0)
    with pytest.raises(rf.SchemaError, match="no ragframe score columns"):
        rf.report(pl.DataFrame({"id": [1]}), tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("module", ["jinja2", "matplotlib"])
def test_missing_dependency_names_the_extra(frames, tmp_path, monkeypatch, capsys, module):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(
        rf.MissingDependencyError, match=rf"^report: {module} is not installed: pip install 'ragframe\[report\]'"
    ):
        rf.report(frames["scored"], tmp_path / "r.html")
    frames["scored"].select("id", "faithfulness").write_parquet(tmp_path / "a.parquet")
    assert main(["report", str(tmp_path / "a.parquet"), "-o", str(tmp_path / "r.html")]) == 3
    assert (
        capsys.readouterr().err
        == f"ragframe: error: report: {module} is not installed: pip install 'ragframe[report]'\n"
    )
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_other_frame_kinds_and_no_worst_rows(frames, tmp_path):
    small = frames["scored"].select("id", "faithfulness", "answer_relevance").head(20)
    for kind, frame in [("arrow", small.to_arrow()), ("pandas", small.to_pandas()), ("lazy", small.lazy())]:
        path = rf.report(frame, tmp_path / f"{kind}.html", worst=0)
        html, page = read_page(path)
        assert [_float(r["mean"]) for r in page.records("summary")] == rf.summarize(small)["mean"].to_list(), kind
        assert "Not requested (" in html and not page.table("worst")


@pytest.mark.slow
def test_importing_the_package_imports_no_extra():
    code = "import sys, ragframe, ragframe.reporting; print(sorted({'jinja2', 'matplotlib'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_folders_and_globs_are_scanned_lazily_as_read_scores_reads_them(tmp_path):
    from ragframe.reporting.inputs import load_source

    folder = tmp_path / "parts"
    folder.mkdir()
    pl.DataFrame({"id": [1, 2], "answer": ["a", "b"], "faithfulness": [0.5, None]}).write_parquet(folder / "p0.parquet")
    empty = pl.DataFrame({"id": [3], "answer": ["c"], "faithfulness": [None]})  # a Null column: read_scores casts it
    empty.write_parquet(folder / "p1.parquet")
    for given in (folder, str(folder / "*.parquet")):
        source = load_source(given, "scores")
        assert "PARQUET SCAN" in source.frame.explain().upper(), given  # not a frame already in memory
        assert source.rows == 3 and source.frame.collect().equals(rf.read_scores(given))
    path = rf.report(str(folder / "*.parquet"), tmp_path / "r.html", worst=3)
    _, page = read_page(path)
    assert [r["answer"]["text"] for r in page.records("worst")] == ["a"]
    pl.DataFrame({"id": [4], "other": [1.0]}).write_parquet(folder / "p2.parquet")
    with pytest.raises(rf.InputFileError, match=r"^scores: .*p2\.parquet' has the columns"):
        load_source(folder, "scores")
    with pytest.raises(rf.InputFileError, match=r"^scores: no file matches the glob"):
        load_source(str(tmp_path / "none*.parquet"), "scores")


@pytest.mark.slow
def test_worst_rows_read_by_slices_equal_the_streaming_pass(frames, tmp_path, monkeypatch):
    from ragframe.reporting import content

    frames["scored"].write_parquet(tmp_path / "a.parquet")
    first = rf.report(tmp_path / "a.parquet", tmp_path / "sliced.html", by="reaction", worst=7)
    monkeypatch.setattr(content, "_SLICED_ROWS", 0)  # every row through the streaming pass
    second = rf.report(tmp_path / "a.parquet", tmp_path / "streamed.html", by="reaction", worst=7)
    tables = [read_page(p)[1].table("worst") for p in (first, second)]
    assert len(tables[0]) == 4 and tables[0] == tables[1]


@pytest.mark.slow
def test_errors_name_the_report_file_the_damaged_part_and_the_input_columns(frames, tmp_path, capsys):
    scored = frames["scored"].select("id", "reaction", "faithfulness")
    scored.write_parquet(tmp_path / "a.parquet")
    assert main(["report", str(tmp_path / "a.parquet"), "-o", str(tmp_path)]) == 3  # a folder, not a file
    assert (
        capsys.readouterr().err == f"ragframe: error: report: cannot write the report: Is a directory: '{tmp_path}'\n"
    )
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OSError, match=r"report: cannot write the report: .*afile/r\.html"):
        rf.report(scored, tmp_path / "afile" / "r.html")  # its parent is a file
    parts = tmp_path / "parts"
    parts.mkdir()
    scored.write_parquet(parts / "p0.parquet")
    (parts / "p1.parquet").write_text("not parquet")
    with pytest.raises(rf.InputFileError, match=r"^report: scores: cannot read '.*p1\.parquet' of '.*parts'"):
        rf.report(parts, tmp_path / "r.html")
    with pytest.raises(rf.SchemaError, match=r"missing id \(on\) column \[column 'id'\]; .*'reaction'"):
        rf.report(scored.drop("id"), tmp_path / "r.html", compare=scored)  # the input's columns, all of them
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "afile", "parts"]  # no temporary left


@pytest.mark.slow
def test_long_reasons_and_signals_are_cut_and_too_many_slices_refused(tmp_path):
    long = "why " * 200  # 800 characters
    frame = pl.DataFrame(
        {
            "id": [1, 2, 3],
            "faithfulness": [0.1, 0.5, 0.9],
            "faithfulness_reason": [long, "short", None],
            "faithfulness_signals": [["warn: " + long], [], None],
        }
    )
    path = rf.report(frame, tmp_path / "r.html", worst=2)
    html, page = read_page(path)
    rows = page.records("worst")
    assert (
        rows[0]["faithfulness_reason"]["text"] == long[:300] + "…" and rows[1]["faithfulness_reason"]["text"] == "short"
    )
    assert rows[0]["faithfulness_signals"]["text"] == ("warn: " + long)[:300] + "…"
    assert "each text cut at 300 characters" in html
    many = pl.DataFrame({"id": range(51), "faithfulness": [0.5] * 51})
    rf.report(many.head(50), tmp_path / "ok.html", by="id")  # 50 slices: drawn
    with pytest.raises(rf.SchemaError, match=r"too many slices for a report \[column 'id'\].*found 51 distinct values"):
        rf.report(many, tmp_path / "r.html", by="id")


def test_sampled_histograms_count_n_and_nulls_on_every_row(tmp_path, monkeypatch):
    from ragframe.reporting import figures

    drawn = []
    monkeypatch.setattr(figures, "png_data_uri", lambda figure: drawn.append(figure) or "data:image/png;base64,")
    values = np.where(np.arange(1_000) % 10 == 0, np.nan, np.linspace(0, 1, 1_000))
    frame = pl.DataFrame({"id": range(1_000), "faithfulness": values}).fill_nan(None)
    rf.report(frame, tmp_path / "r.html", sample_rows=100)
    histogram = drawn[0]
    assert histogram.axes[0].get_title() == "faithfulness\nn=900, nulls=100"  # every row, not the 100 drawn
    assert "sample of 100 of 1,000 rows drawn (seed 0)" in histogram.get_suptitle()
    assert sum(p.get_height() for p in histogram.axes[0].patches) <= 100


@pytest.mark.slow
def test_a_judged_run_says_what_failed_and_what_each_statistic_covers(tmp_path):
    # 108 rows sent to a judge, 63 of them failing (40 timeouts, 23 unreadable replies): the page says so per
    # metric, and that its statistics cover the 45 scored rows only
    log = pl.read_parquet(example_rag_log()).head(108).with_row_index("n")
    timeouts, unreadable = set(range(40)), set(range(40, 63))
    answers = dict(zip(log["answer"], log["n"]))

    def judge(prompt: str) -> str:
        row = next(n for answer, n in answers.items() if answer in prompt)
        if row in timeouts:
            raise TimeoutError("the judge timed out")
        return "no verdict here" if row in unreadable else "Score: 0.8\nReason: fine."

    scored = rf.evaluate(log, ["judge_answer_relevance", "faithfulness"], judge=judge, cache=False, parse_retries=0)
    status = scored["judge_answer_relevance_status"].value_counts().sort("judge_answer_relevance_status").rows()
    assert status == [("ok", 45), ("parse_error", 23), ("timeout", 40)]  # the judge did what the test planned
    html, page = read_page(rf.report(scored, tmp_path / "judged.html"))
    assert page.sections == [*SECTIONS[:2], "judge-calls", *SECTIONS[2:]]
    (row,) = page.records("statuses", "judge-calls")
    values = {k: v["value"] if v["value"] is not None else v["text"] for k, v in row.items()}
    assert values["metric"] == "judge_answer_relevance" and int(values["rows"]) == 108 and int(values["scored"]) == 45
    assert float(values["share_scored"]) == pytest.approx(45 / 108)
    assert (int(values["ok"]), int(values["parse_error"]), int(values["timeout"])) == (45, 23, 40)
    assert "covers the 45 of 108 rows (41.7%) with a score; 23 parse_error, 40 timeout left out" in html
    summary = {r["metric"]["text"]: r for r in page.records("summary", "summary")}
    assert int(summary["judge_answer_relevance"]["count"]["value"]) == 45
    assert int(summary["judge_answer_relevance"]["null_count"]["value"]) == 63


@pytest.mark.slow
def test_a_report_without_judge_columns_has_no_judge_section(tmp_path, frames):
    _, page = read_page(rf.report(frames["scored"], tmp_path / "plain.html"))
    assert "judge-calls" not in page.sections and not page.table("statuses")
