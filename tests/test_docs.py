"""The user docs: no pointers to files users cannot see, and docs/metrics.md covers every metric.

docs/metrics.md is the reference of every metric's formula, direction, threshold and
null rules; these tests keep it in step with the metric registry.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest
import sklearn  # noqa: F401  (importing scikit-learn sets KMP_* variables: done here, not inside a block)
from test_readme import Block, parse_blocks

import ragframe as rf
from ragframe.metrics import registry
from ragframe.metrics.heuristic_seed import SEED_THRESHOLDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
METRICS_MD = DOCS / "metrics.md"
#: Internal design notes that are not part of the repository: a path into a ``spec/`` or
#: ``seeds/`` folder (``spec/heuristics.md``, ``../shared/spec/...``, ``shared/seeds/...``) or ``DESIGN.md``.
HIDDEN = re.compile(r"\bspec/|\bseeds/|DESIGN\.md")
#: Columns docs/metrics.md defines besides the registered metrics.
EXTRA_NAMES = ("num_ret", "num_rel", "num_rel_ret", "composite_score", "passed")


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(DOCS.rglob("*")), *sorted((ROOT / "ragframe").rglob("*"))]
    return [f for f in files if f.is_file() and "__pycache__" not in f.parts]


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # binary data (Parquet): no text to check
        return None


def _builtin_table():
    """rf.list_metrics() restricted to the metrics ragframe registers itself (every family)."""
    table = rf.list_metrics()
    return table.filter(table["name"].is_in(sorted(registry._BUILT_IN)))


def _builtin_metrics() -> list[tuple[str, bool, float | None]]:
    """(name, higher_is_better, default threshold) of every built-in metric, every family."""
    return [(r["name"], r["higher_is_better"], r["threshold"]) for r in _builtin_table().iter_rows(named=True)]


def test_scan_finds_the_files_it_checks():
    names = {f.relative_to(ROOT).as_posix() for f in _text_files()}
    assert {"README.md", "docs/metrics.md", "ragframe/__init__.py", "ragframe/metrics/retrieval.py"} <= names


def test_hidden_pattern_matches_what_it_should():
    assert HIDDEN.search("see ``spec/heuristics.md``") and HIDDEN.search("(DESIGN.md, section 2)")
    assert HIDDEN.search("../shared/spec/retrieval.md") and HIDDEN.search("see ../shared/seeds/ for the API")
    assert not HIDDEN.search("inspect/ and respec/ are other words; docs/metrics.md is fine")


def test_no_reference_to_files_outside_the_repository():
    found = []
    for path in _text_files():
        text = _read_text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if HIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, (
        "references to spec/, seeds/ or DESIGN.md (not in the repository; point at docs/ instead):\n" + "\n".join(found)
    )


def test_the_registry_has_the_metrics_the_docs_promise():
    names = [name for name, _, _ in _builtin_metrics()]
    assert len(names) == len(set(names)) >= 18
    assert {"faithfulness", "hallucination_rate", "ndcg_at_k", "mrr", "r_precision"} <= set(names)


@pytest.mark.parametrize("name", [m[0] for m in _builtin_metrics()] + list(EXTRA_NAMES))
def test_metrics_md_mentions_every_metric(name):
    assert f"`{name}`" in METRICS_MD.read_text(encoding="utf-8"), f"docs/metrics.md does not describe `{name}`"


DEFAULT_COLUMN = "default threshold"
SEED_COLUMN = 'threshold with `compat="rag-eval-node-ts"`'


def _overview(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The overview table of docs/metrics.md: its header cells and its rows keyed by the first cell."""
    lines = [line for line in text.splitlines() if line.startswith("| name |")]
    assert len(lines) == 1, "docs/metrics.md: expected one overview table (header '| name | ...')"
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == len(header) and cells[0].startswith("`"):
            rows.setdefault(cells[0], cells)
    return header, rows


def _overview_cell(name: str, column: str) -> str:
    header, rows = _overview(METRICS_MD.read_text(encoding="utf-8"))
    assert column in header, f"docs/metrics.md: the overview table has no column {column!r}: {header}"
    assert f"`{name}`" in rows, f"docs/metrics.md: no overview table row for `{name}`"
    return rows[f"`{name}`"][header.index(column)]


def _documented(threshold: float | None) -> str:
    return "none" if threshold is None else f"{threshold:g}"


@pytest.mark.parametrize("metric", _builtin_metrics(), ids=lambda m: m[0])
def test_metrics_md_threshold_and_direction_match_the_code(metric):
    """The default-method threshold column is rf.list_metrics()'s threshold; a lower-is-better metric says so."""
    name, higher_is_better, threshold = metric
    family = _overview_cell(name, "family")
    assert ("lower is better" in family) != higher_is_better, f"{name}: the overview gives the wrong direction"
    documented = _overview_cell(name, DEFAULT_COLUMN)
    assert documented == _documented(threshold), (name, documented, threshold)


@pytest.mark.parametrize("name", sorted(SEED_THRESHOLDS))
def test_metrics_md_seed_thresholds_match_the_code(name):
    """The compat column is the seed's thresholds (ragframe.metrics.heuristic_seed.SEED_THRESHOLDS)."""
    documented = _overview_cell(name, SEED_COLUMN)
    assert documented == _documented(SEED_THRESHOLDS[name]), (name, documented, SEED_THRESHOLDS[name])


def test_hallucination_rate_direction_is_stated():
    text = METRICS_MD.read_text(encoding="utf-8")
    section = text.split("#### hallucination_rate", 1)[1].split("\n#", 1)[0]
    assert "**Higher is better.**" in section and "supported" in section


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_relative_links_in_docs_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.is_file(), f"{page.name}: link to missing file {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), f"{page.name}: no heading for {target}"


# ----------------------------------------------------------------------------- docs/metrics.md: every family


#: The section of docs/metrics.md that defines each family's formulas and null rules. A new family
#: registered without a section here fails test_every_family_has_a_section.
FAMILY_SECTIONS = {
    "retrieval": "## Ranking measures",
    "heuristic": "## Heuristic metrics (no LLM)",
    "judge": "## Judge metrics (LLM)",
    "ragchecker": "## Claim-level metrics",
    "nuggets": "## Claim-level metrics",
    "citations": "## Claim-level metrics",
}


def test_builtin_metrics_cover_every_family():
    families = set(_builtin_table()["family"])
    assert {"retrieval", "heuristic", "judge"} <= families


@pytest.mark.parametrize("family", sorted(set(_builtin_table()["family"])))
def test_every_family_has_a_section(family):
    assert family in FAMILY_SECTIONS, f"metric family {family!r} has no section in docs/metrics.md: add one"
    text = METRICS_MD.read_text(encoding="utf-8")
    heading = FAMILY_SECTIONS[family]
    assert re.search(rf"^{re.escape(heading)}\s*$", text, flags=re.M), f"docs/metrics.md: no heading {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    assert re.search(r"null", section, flags=re.I), f"{heading}: no null rules"


@pytest.mark.parametrize("row", list(_builtin_table().iter_rows(named=True)), ids=lambda r: r["name"])
def test_metrics_md_reads_the_registered_inputs(row):
    """The overview's "reads" cell names every input role rf.list_metrics() gives the metric."""
    reads = _overview_cell(row["name"], "reads")
    missing = [role for role in row["inputs"] if f"`{role}`" not in reads]
    assert not missing, f"docs/metrics.md: `{row['name']}` reads {row['inputs']}, the overview says {reads!r}"


@pytest.mark.parametrize("name", [m[0] for m in _builtin_metrics()])
def test_metrics_md_defines_every_metric_outside_the_overview(name):
    """Besides its overview row, each metric is named in a definition (a formula table or a heading)."""
    text = METRICS_MD.read_text(encoding="utf-8")
    head, _, rest = text.partition("\n| name |")
    rest = rest.split("\n\n", 1)[1]  # the overview table ends at the first blank line
    lines = (head + "\n" + rest).splitlines()
    assert any(f"`{name}`" in line or re.match(rf"#+ {name}\s*$", line) for line in lines), name


# ----------------------------------------------------------------------------- docs/columns.md

COLUMNS_MD = DOCS / "columns.md"
SENTINEL = "__renamed_column__"


def _renaming_keywords() -> tuple[set[str], set[str]]:
    """(keywords that rename an input column, default input column names), asked of every metric family.

    Each family says which columns it reads (``Family.columns``) under given options; an option
    renames a column when setting it to a sentinel name makes that name appear among the columns
    read. Both the default ``match="id"`` and ``match="contains"`` are tried.
    """
    defaults = rf.Evaluator.option_defaults()
    keywords: set[str] = set()
    columns: set[str] = set()
    for family in registry.families():
        spec = registry.get_family(family)
        requests = [(m, 10 if m.cutoff else None) for m in registry.metrics() if m.family == family]
        if not requests:
            continue
        for extra in ({}, {"match": "contains"}):
            base = spec.check({**defaults, **extra})
            for available in (["retrieved_scores"], ["relevance"]):
                columns |= set(spec.columns(requests, base, available).values())
            for option in defaults:
                try:
                    changed = spec.check({**defaults, **extra, option: SENTINEL})
                    read = spec.columns(requests, changed, [SENTINEL])
                except rf.RagframeError:
                    continue
                if SENTINEL in read.values():
                    keywords.add(option)
    return keywords, columns


def test_renaming_keywords_are_found():
    """The discovery above finds the keywords we know of (so an empty result cannot pass silently)."""
    keywords, columns = _renaming_keywords()
    known = {"question", "answer", "contexts", "ground_truth", "retrieved_ids", "retrieved_scores", "relevant_ids"}
    assert known | {"relevance"} <= keywords
    assert known | {"relevance", "gold_documents"} <= columns


@pytest.mark.parametrize("keyword", sorted(_renaming_keywords()[0]))
def test_columns_md_documents_every_renaming_keyword(keyword):
    assert f"`{keyword}=`" in COLUMNS_MD.read_text(encoding="utf-8"), f"docs/columns.md: no `{keyword}=`"


@pytest.mark.parametrize("column", sorted(_renaming_keywords()[1]))
def test_columns_md_documents_every_column_read(column):
    text = COLUMNS_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `{re.escape(column)}`", text, flags=re.M), f"docs/columns.md: no row for `{column}`"


@pytest.mark.parametrize("role", sorted({r for inputs in rf.list_metrics()["inputs"] for r in inputs}))
def test_columns_md_documents_every_metric_input(role):
    """Every input role of every registered metric has a row in the input table."""
    text = COLUMNS_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| `{re.escape(role)}`", text, flags=re.M), f"docs/columns.md: no row for `{role}`"


def _claims_frame():
    """One row of every claim-level input column (RAGChecker's verdicts, nuggets)."""
    import polars as pl

    return pl.DataFrame(
        {
            "question": ["What is the capital of France?"],
            "answer": ["Paris is the capital."],
            "answer2response": [["Entailment"]],
            "response2answer": [["Neutral"]],
            "retrieved2response": [[["Entailment"]]],
            "retrieved2answer": [[["Neutral"]]],
            "nuggets": [[{"text": "Paris", "importance": "vital", "assignment": "support"}]],
        }
    )


def _output_suffixes() -> set[str]:
    """The companion-column suffixes a run of every built-in metric writes (``_passed``, ``_reason``...)."""
    import polars as pl

    frame = pl.DataFrame(
        {
            "question": ["What is the capital of France?"],
            "answer": ["Paris is the capital."],
            "contexts": [["Paris is the capital of France."]],
            "ground_truth": ["Paris"],
            "retrieved_ids": [["d1", "d2"]],
            "relevant_ids": [["d2"]],
        }
    )
    table = _builtin_table()
    graded = table.filter(table["inputs"].list.contains("relevance"))["name"].to_list()  # judged non-relevant counts
    claim_level = table.filter(
        table["family"].is_in(["ragchecker", "nuggets"]) | table["inputs"].list.contains("nuggets")
    )["name"].to_list()
    names = [name for name in table["name"] if name not in graded and name not in claim_level]
    graded_frame = frame.drop("relevant_ids").with_columns(relevance=pl.lit([{"id": "d2", "grade": 1}]))
    runs = [
        rf.evaluate(frame, names, judge=lambda p: "Score: 0.5", cache=False, explain=True, n_samples=2),
        rf.evaluate(graded_frame, graded),
        rf.evaluate(_claims_frame(), claim_level, explain=True, judge=lambda p: "Nugget 1: support", cache=False),
        rf.evaluate(frame, ["faithfulness"], mode="hybrid", hybrid_band=(0.0, 1.0), judge=lambda p: "Score: 1"),
    ]
    suffixes = set()
    for scored in runs:
        outputs = set(rf.score_columns(scored.columns)) - {"composite_score"}
        for column in set(scored.columns) - set(frame.columns) - outputs:
            base = max((o for o in outputs if column.startswith(o + "_")), key=len, default=None)
            suffixes.add(column if base is None else "<m>" + column[len(base) :])
    return suffixes


def test_output_suffixes_are_found():
    assert {"<m>_passed", "<m>_signals", "<m>_reason", "<m>_status", "<m>_source", "passed"} <= _output_suffixes()


@pytest.mark.parametrize("column", sorted(_output_suffixes()))
def test_columns_md_documents_every_output_column(column):
    text = COLUMNS_MD.read_text(encoding="utf-8")
    assert re.search(rf"^\| (`[^|]*`, )*`{re.escape(column)}`", text, flags=re.M), f"docs/columns.md: no `{column}`"


# ----------------------------------------------------------------------------- docs/cli.md

CLI_MD = DOCS / "cli.md"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    """Every ``ragframe`` subcommand's parser, from the real parser (``ragframe.cli.main.build_parser``)."""
    from ragframe.cli.main import build_parser

    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1, "expected one set of subcommands"
    return dict(actions[0].choices)


def _cli_section(command: str) -> str:
    text = CLI_MD.read_text(encoding="utf-8")
    heading = f"## `ragframe {command}`"
    assert re.search(rf"^{re.escape(heading)}\s*$", text, flags=re.M), f"docs/cli.md: no section {heading!r}"
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def _cli_items() -> list[tuple[str, str, str]]:
    """(command, what, text): every option string, positional argument and choice of every subcommand."""
    items = []
    for command, parser in _subparsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if action.option_strings:
                items += [(command, "option", option) for option in action.option_strings]
            else:
                items.append((command, "argument", action.metavar or action.dest))
            items += [(command, "choice", str(choice)) for choice in action.choices or ()]
    return items


def test_cli_items_are_found():
    items = _cli_items()
    commands = {c for c, _, _ in items}
    assert {"demo", "eval", "trec", "summary", "compare", "gate"} <= commands
    assert ("eval", "option", "--batch-rows") in items and ("trec", "option", "-q") in items
    assert ("compare", "choice", "wilcoxon") in items and ("eval", "argument", "LOG") in items


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_cli_md_has_a_section_per_command(command):
    section = _cli_section(command)
    assert "Exit codes" in section and "```bash" in section, f"docs/cli.md, ragframe {command}: exit codes, example"
    assert f"ragframe {command}" in section.split("```bash", 1)[1], f"docs/cli.md, ragframe {command}: no example"


@pytest.mark.parametrize("item", _cli_items(), ids=lambda i: f"{i[0]}-{i[2]}")
def test_cli_md_documents_every_option(item):
    """Each option string, positional argument and choice appears, in backticks, in its command's section."""
    command, what, text = item
    section = _cli_section(command)
    pattern = rf"`{re.escape(text)}[ `=]" if what != "choice" else rf"(?<![\w-]){re.escape(text)}(?![\w-])"
    assert re.search(pattern, section), f"docs/cli.md, ragframe {command}: {what} {text!r} is not documented"


def test_cli_md_lists_every_exit_code():
    from ragframe.cli.main import EXIT_CODES

    text = CLI_MD.read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in EXIT_CODES.values():
        assert re.search(rf"^\| {code} \|", table, flags=re.M), f"docs/cli.md: exit code {code} is not in the table"


# ----------------------------------------------------------------------------- docs/migration.md

MIGRATION_MD = DOCS / "migration.md"
#: Every class, function, method, option and result type the seed systems document, by system: read
#: from their documentation once and kept here (users do not have it). Each must be named in the first
#: column of its system's migration table.
SEED_APIS: dict[str, tuple[str, ...]] = {
    "rag-eval-node-ts": (
        "evaluate",
        "evaluateBatch",
        "createEvaluator",
        "Evaluator.evaluate",
        "Evaluator.evaluateBatch",
        "Evaluator.config",
        "computeMetric",
        "scoreFaithfulness",
        "scoreAnswerRelevance",
        "scoreContextPrecision",
        "scoreContextRecall",
        "scoreContextRelevance",
        "scoreAnswerCorrectness",
        "scoreHallucinationRate",
        "splitSentences",
        "filterFactualSentences",
        "tokenize",
        "getNgrams",
        "ngramOverlap",
        "weightedNgramOverlap",
        "tfidfSimilarity",
        "buildTfIdfVectors",
        "cosineSimilarity",
        "tokenF1",
        "createOpenAIJudge",
        "createAnthropicJudge",
        "JudgeFn",
        "EvaluationMode",
        "mode",
        "judge",
        "metricModes",
        "thresholds",
        "MetricThresholds",
        "compositeThreshold",
        "compositeWeights",
        "heuristic",
        "HeuristicOptions",
        "ngramSizes",
        "ngramWeights",
        "claimSupportThreshold",
        "chunkRelevanceThreshold",
        "sentenceCoverageThreshold",
        "ngramWeight",
        "tfidfWeight",
        "promptOverrides",
        "PromptOverrides",
        "EvaluateOptions",
        "EvaluatorConfig",
        "BatchEvaluateOptions",
        "concurrency",
        "onProgress",
        "baselineResult",
        "regressionThreshold",
        "EvalSample",
        "MetricId",
        "MetricResult",
        "EvalSignal",
        "EvalResult",
        "CostTracker",
        "MetricAggregate",
        "BatchEvalResult",
        "MetricRegression",
    ),
    "anchor / astro_context": (
        "RetrievalMetricsCalculator",
        "RetrievalMetricsCalculator.evaluate",
        "RetrievalMetrics",
        "RAGMetrics",
        "EvaluationResult",
        "LLMRAGEvaluator",
        "LLMRAGEvaluator.evaluate",
        "PipelineEvaluator",
        "PipelineEvaluator.evaluate_retrieval",
        "PipelineEvaluator.evaluate_rag",
        "PipelineEvaluator.evaluate",
        "EvaluationSample",
        "EvaluationDataset",
        "AggregatedMetrics",
        "BatchEvaluator",
        "BatchEvaluator.evaluate",
        "ABTestRunner",
        "ABTestRunner.run",
        "ABTestResult",
        "Retriever",
        "ContextItem",
        "SourceType",
        "HumanJudgment",
        "HumanEvaluationCollector",
        "HumanEvaluationCollector.judgments",
        "HumanEvaluationCollector.add_judgment",
        "HumanEvaluationCollector.add_judgments",
        "HumanEvaluationCollector.compute_agreement",
        "HumanEvaluationCollector.to_dataset",
        "HumanEvaluationCollector.compute_metrics",
    ),
    "langrag": (
        "FaithfulnessEvaluator",
        "FaithfulnessEvaluator.evaluate",
        "AnswerRelevancyEvaluator",
        "AnswerRelevancyEvaluator.evaluate",
        "ContextRelevancyEvaluator",
        "ContextRelevancyEvaluator.evaluate",
        "BaseEvaluator",
        "BaseEvaluator.name",
        "BaseEvaluator.evaluate",
        "BaseEvaluator._call_llm",
        "BaseEvaluator._parse_score_from_response",
        "EvaluationSample",
        "EvaluationResult",
    ),
    "REMem": (
        "RetrievalRecall",
        "RetrievalRecallAll",
        "RetrievalNDCGAny",
        "calculate_metric_scores",
        "is_chunk_from_original",
    ),
}


def _seed_table_names(system: str) -> str:
    """The first cells of the migration table rows in the section ``## <system>``, joined."""
    text = MIGRATION_MD.read_text(encoding="utf-8")
    heading = f"## {system}"
    assert re.search(rf"^{re.escape(heading)}\s*$", text, flags=re.M), f"docs/migration.md: no section {heading!r}"
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return "\n".join(line.split(" | ", 1)[0] for line in rows)


def _names_in(cell_text: str) -> set[str]:
    """Every backticked name in the cells, and ``Class.method`` for a cell ``Class(...).method(...)``."""
    names = set()
    for code in re.findall(r"`([^`]+)`", cell_text):
        names.add(re.split(r"[(\s]", code, maxsplit=1)[0])
        chain = re.sub(r"\([^()]*\)", "", code)  # Class(k).evaluate(a, b) -> Class.evaluate
        names.add(chain.split()[0] if chain.split() else chain)
    return names


def test_names_in_reads_calls_and_chains():
    assert _names_in("| `ABTestRunner(evaluator, dataset)`, `ABTestRunner.run(a, b)`") >= {
        "ABTestRunner",
        "ABTestRunner.run",
    }
    assert "RetrievalMetricsCalculator.evaluate" in _names_in("`RetrievalMetricsCalculator(k).evaluate(r, k)`")
    assert "evaluate" not in _names_in("`evaluateBatch(samples)`")


@pytest.mark.parametrize(
    ("system", "name"), [(s, n) for s, names in SEED_APIS.items() for n in names], ids=lambda v: str(v)
)
def test_migration_table_names_each_seed_api(system, name):
    assert name in _names_in(_seed_table_names(system)), f"docs/migration.md, {system}: no row for `{name}`"


@pytest.mark.parametrize("system", sorted(SEED_APIS))
def test_migration_section_says_where_numbers_differ(system):
    text = MIGRATION_MD.read_text(encoding="utf-8")
    heading = f"### {system.split(' / ')[0]}: where the numbers differ"
    assert heading in text, f"docs/migration.md: no {heading!r}"


# ----------------------------------------------------------------------------- README's Documentation list


def test_readme_documentation_list_links_every_page():
    """README's "Documentation" section links every docs/*.md page, and the notebooks when there are any."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^## Documentation\s*$", text, flags=re.M), "README.md: no '## Documentation' section"
    section = text.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\(([^)#\s]+)", section))
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    if list((ROOT / "notebooks").glob("*.ipynb")):
        pages.add("notebooks/README.md")
    assert pages <= linked, f"README.md, Documentation: not linked: {sorted(pages - linked)}"


# ----------------------------------------------------------------------------- every Python block runs alone

#: The ```python blocks of docs/*.md: each must run on its own (its own imports and inputs), as a
#: reader copies it.
DOCS_BLOCKS = [
    block
    for page in sorted(DOCS.glob("*.md"))
    for block in parse_blocks(page.read_text(encoding="utf-8"), page)
    if block.lang == "python"
]


def _global_state() -> tuple[list[str], dict[str, str]]:
    """What a block could leave for a later one besides its names: registered metrics, environment variables."""
    return rf.list_metrics()["name"].to_list(), dict(os.environ)


def run_alone(block: Block, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``block`` in a fresh namespace, in ``folder``; it must leave no registered metric or variable behind.

    In this process, not a fresh interpreter per block (about 10 s for the 25 blocks instead of
    about 70 s here): a name the block does not define or import itself is still a NameError
    (the namespace is empty; that modules stay imported does not bind their names), a file an
    earlier block wrote is absent (a new folder), and the two ways a block could reach a later
    one through the process (a metric left registered, an environment variable) are checked.
    """
    monkeypatch.chdir(folder)
    before = _global_state()
    code = "\n" * block.line + block.code  # a traceback names the page's own line numbers
    exec(compile(code, str(block.source), "exec"), {"__name__": "__docs__"})
    assert _global_state() == before, f"{block.id} leaves a registered metric or an environment variable behind"


def test_docs_have_the_python_blocks_they_promise():
    pages = {block.source.name for block in DOCS_BLOCKS}
    assert len(DOCS_BLOCKS) >= 25 and {"report.md", "plots.md", "judges.md", "statistics.md"} <= pages


@pytest.mark.slow
@pytest.mark.parametrize("block", DOCS_BLOCKS, ids=lambda b: b.id)
def test_docs_python_block_runs_alone(block, tmp_path, monkeypatch):
    run_alone(block, tmp_path, monkeypatch)


def test_a_block_using_an_earlier_blocks_name_fails(tmp_path, monkeypatch):
    first = Block("python", "import ragframe as rf\n", 1, None, DOCS / "example.md")
    run_alone(first, tmp_path, monkeypatch)
    with pytest.raises(NameError, match="'rf' is not defined"):
        run_alone(Block("python", "rf.list_metrics()\n", 5, None, DOCS / "example.md"), tmp_path, monkeypatch)


def test_a_block_leaving_a_metric_registered_fails(tmp_path, monkeypatch):
    code = (
        "import polars as pl\nimport ragframe as rf\n"
        "rf.register_metric(rf.Metric('leaked_metric', 'custom', ('answer',), 'x', kernel=lambda v: pl.lit(1.0)))\n"
    )
    try:
        with pytest.raises(AssertionError, match="leaves a registered metric"):
            run_alone(Block("python", code, 1, None, DOCS / "example.md"), tmp_path, monkeypatch)
    finally:
        rf.unregister_metric("leaked_metric")


def _summary_table() -> dict[str, str]:
    """statistics.md's table of summary functions: the first function of each row -> its columns cell."""
    text = (DOCS / "statistics.md").read_text(encoding="utf-8")
    table = text.split("## Summaries", 1)[1].split("### ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        found = re.match(r"`(?:rf\.|rf\.distributed\.)?(\w+)\(", cells[0]) if len(cells) == 4 else None
        if found:
            rows[found.group(1)] = cells[3]
    return rows


def test_statistics_md_lists_every_summary_function():
    import ragframe.distributed as distributed

    names = {n for n in rf.__all__ if "summar" in n} | {n for n in distributed.__all__ if "summar" in n}
    listed = set(_summary_table())
    text = (DOCS / "statistics.md").read_text(encoding="utf-8").split("## Summaries", 1)[1].split("### ", 1)[0]
    assert sorted(n for n in names if n not in listed and f"rf.{n}(" not in text) == []


def test_statistics_md_summary_columns_are_the_real_ones():
    import polars as pl

    scored = pl.DataFrame({"faithfulness": [0.9, 0.5], "faithfulness_source": ["heuristic", "judge"]})
    judgments = pl.DataFrame({"query": ["q", "q"], "item_id": ["d", "d"], "annotator": ["x", "y"], "relevance": [1, 2]})
    outputs = {
        "routing_summary": rf.routing_summary(scored),
        "judgment_summary": rf.judgment_summary(judgments),
    }
    table = _summary_table()
    for name, frame in outputs.items():
        documented = re.findall(r"`(\w+)`", table[name])
        assert [c for c in documented if c not in frame.columns] == [], name
        assert [c for c in frame.columns if c not in documented and c != "metric"] == [], name
