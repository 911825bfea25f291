"""``rf.report``: gather the report's content, draw its pictures, render the template, write the file."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import secrets, validate
from ragframe.extras import require
from ragframe.public import public
from ragframe.reporting import content, figures
from ragframe.reporting.inputs import IN_MEMORY, Source, load_source
from ragframe.reporting.render import render
from ragframe.reporting.tables import table
from ragframe.stats.summary import summarize

__all__ = ["report"]
SUMMARY_COLUMNS = (
    "metric", "count", "null_count", "mean", "std", "min", "p50", "p90", "p99", "max", "pass_rate", "ci_low", "ci_high",
)  # fmt: skip
SLICE_COLUMNS = ("metric", "count", "null_count", "mean", "std", "p50", "pass_rate", "ci_low", "ci_high")
COMPARE_COLUMNS = (
    "metric", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "significant", "winner",
    "effect_size",
)  # fmt: skip
AGREEMENT_COLUMNS = (
    "metric", "label", "n", "positives", "auroc", "auroc_low", "auroc_high", "spearman", "kendall",
    "youden_threshold", "threshold", "accuracy", "cohen_kappa",
)  # fmt: skip
ESTIMATE_COLUMNS = (
    "metric", "label", "estimate", "ci_low", "ci_high", "n_labeled", "n_unlabeled", "lambda", "classical_estimate",
    "classical_ci_low", "classical_ci_high", "ess_gain", "effective_n",
)  # fmt: skip


@public
def report(
    scores: Any,
    path: str | os.PathLike[str],
    *,
    compare: Any = None,
    on: str | list[str] = "id",
    by: str | list[str] | None = None,
    labels: str | list[str] | dict[str, str] | None = None,
    metrics: str | list[str] | None = None,
    worst: int = 5,
    sample_rows: int = 100_000,
    title: str | None = None,
    label: str | None = None,
    compare_label: str | None = None,
) -> Path:
    """Write a self-contained HTML report of scored rows: provenance, summaries, pictures, worst rows.

    One file: pictures are inlined PNG data URIs, the CSS is inline, nothing is fetched (it
    opens offline). Every table is computed on all rows; the pictures of rows
    (distributions, calibration curves) are drawn from a seeded uniform sample of
    ``sample_rows`` rows, and the page says so.

    Parameters
    ----------
    scores : frame or str or os.PathLike
        Scored rows: a polars DataFrame or LazyFrame, pyarrow Table, pandas DataFrame, or a
        path :func:`ragframe.read_scores` reads (Parquet file, folder, glob, CSV, JSON, or a
        ``ragframe eval`` / :func:`ragframe.evaluate_parquet` output folder, whose manifest
        gives the source and the Evaluator's options). Parquet files, folders and globs are
        scanned lazily: only the columns shown are read.
    path : str or os.PathLike
        The HTML file to write (parent folders are created; an existing file is replaced).
    compare : frame or path, optional
        Scores of a second system on the same rows: adds the paired comparison
        (:func:`ragframe.compare`, t test, Holm-adjusted p-values) and its forest plot.
    on : str or list of str
        Id column(s) pairing the rows with ``compare``; also shown with the worst rows.
    by : str or list of str, optional
        Slice columns: a summary table and a heatmap per column (at most 50 distinct values each).
    labels : str, list of str, or dict, optional
        Human label columns of ``scores`` (``{metric: label}`` or label columns for every
        metric): adds :func:`ragframe.agreement_with_labels` (``n_resamples=200, seed=0``: the
        AUROC interval's bootstrap, a tenth of the function's default, so that a million rows
        take seconds per metric) and ROC curves.
    metrics : str or list of str, optional
        Score columns; default every ragframe score column (not ``by``, ``on`` or labels).
    worst : int
        Rows shown per metric, the lowest scores first (the highest for a lower-is-better
        metric); 0 for none.
    sample_rows : int
        Rows the pictures of rows are drawn from (seed 0); all rows when there are fewer.
    title : str, optional
        The page's title; default "ragframe report: <label>".
    label, compare_label : str, optional
        What the page calls ``scores`` (side a) and ``compare`` (side b) in the comparison,
        its forest plot and the ranking curves. Default: the path given, or ``"scores
        (in-memory frame)"`` and ``"compare (in-memory frame)"`` for frames.

    Returns
    -------
    pathlib.Path
        The file written, absolute.

    Raises
    ------
    MissingDependencyError
        jinja2 or matplotlib is missing (``pip install 'ragframe[report]'``).
    InputFileError, SchemaError, InvalidParameterError
        An unreadable input, a missing column, a bad argument.

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> scores = pl.DataFrame({"id": [1, 2, 3, 4], "faithfulness": [0.9, 0.2, 0.6, None]})
    >>> out = report(scores, pathlib.Path(tempfile.mkdtemp()) / "report.html", worst=2)
    >>> out.name, "<h2 id=\\"summary\\">" in out.read_text(encoding="utf-8")
    ('report.html', True)
    """
    worst = validate.integer(worst, "worst", minimum=0)
    sample_rows = validate.positive_int(sample_rows, "sample_rows")
    for name, value in (("title", title), ("label", label), ("compare_label", compare_label)):
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise validate.fail(name, "a non-empty str or None", value)
    if not isinstance(path, (str, os.PathLike)):
        raise validate.fail("path", "a path (str or os.PathLike)", path)
    require("report", "jinja2")
    require("report", "matplotlib")
    source = load_source(scores, "scores")
    other = None if compare is None else load_source(compare, "compare")
    plan = content.plan_report(source.schema, metrics, by, labels, on)
    names = Names(label or _default_name(source, "scores"), compare_label or _default_name(other, "compare"))
    context = _page(source, other, plan, worst, sample_rows, title, names)
    return _write(Path(path), secrets.scrub(render(context)))  # no key this process knows reaches the page


@dataclass(frozen=True)
class Names:
    """What the page calls the two sides: ``a`` the scores, ``b`` the compared scores."""

    a: str
    b: str


def _default_name(source: Source | None, role: str) -> str:
    """The path given, or ``"<role> (in-memory frame)"``.

    Examples
    --------
    >>> import polars as pl
    >>> from ragframe.reporting.inputs import load_source
    >>> _default_name(load_source(pl.DataFrame({"mrr": [1.0]}), "compare"), "compare")
    'compare (in-memory frame)'
    """
    if source is None:
        return role
    return f"{role} ({IN_MEMORY})" if source.label == IN_MEMORY else source.label


def _page(
    source: Source,
    other: Source | None,
    plan: content.Plan,
    worst: int,
    sample_rows: int,
    title: str | None,
    names: Names,
) -> dict[str, Any]:
    """The template's variables: every table (all rows) and picture (sampled rows)."""
    frame = content.numeric_frame(source, plan)
    sample = content.sample_frame(frame, sample_rows)
    note = _sample_note(frame.height, sample.height)
    summaries = content.slice_summaries(frame, plan)
    slice_images = figures.slice_figures(summaries, plan)
    summary = summarize(frame, metrics=plan.metrics)
    return {
        "title": title or f"ragframe report: {names.a}",
        "provenance": _provenance(source, other, plan, worst, note, names),
        "sampling": {"sampled": sample.height < frame.height, "note": note},
        "summary": table(summary, _shown(summary, SUMMARY_COLUMNS)),
        "statuses": _statuses(source, plan),
        "pass_rates": "pass_rate" in _shown(summary, SUMMARY_COLUMNS),
        "identical": content.identical_columns(frame, summary),
        "distributions": figures.distribution_figure(frame, plan, sample_rows, note),
        "slices": [
            {"column": c, "table": table(s, _shown(s, (c, *SLICE_COLUMNS))), "image": slice_images[c]}
            for c, s in summaries.items()
        ],
        "comparison": None if other is None else _comparison(frame, source, other, plan, names),
        "calibration": None if plan.labels is None else _calibration(frame, sample, plan, note),
        "estimates": _estimates(frame, plan),
        "ranking": figures.ranking_figures(frame, plan, None if other is None else other.frame, (names.a, names.b)),
        "worst": {
            "n": worst,
            "chars": content.TEXT_CHARS,
            "asked": any(c in source.schema for c in content.ASKED_COLUMNS),
            "metrics": [
                {"metric": m, "table": table(t)} for m, t in content.worst_rows(source, frame, plan, worst).items()
            ],
        },
    }


def _statuses(source: Source, plan: content.Plan) -> dict[str, Any] | None:
    """The judge-status table and, per judged metric with failures, a line saying which rows its statistics cover."""
    statuses = content.status_table(source, plan)
    if statuses is None:
        return None
    failed = [s for s in statuses.columns[4:] if s not in ("ok", "null")]
    notes = [
        f"{r['metric']}: every statistic on this page covers the {r['scored']:,} of {r['rows']:,} rows "
        f"({r['share_scored']:.1%}) with a score; "
        + ", ".join(f"{r[s]:,} {s}" for s in failed if r[s])
        + " left out (null score)."
        for r in statuses.iter_rows(named=True)  # a row per judged metric (a few), not per scored row
        if any(r[s] for s in failed)
    ]
    return {"table": table(statuses), "notes": notes}


def _shown(frame: pl.DataFrame, columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns`` without ``pass_rate`` when it is null on every row (no metric has a threshold).

    Examples
    --------
    >>> import polars as pl
    >>> _shown(pl.DataFrame({"metric": ["mrr"], "pass_rate": [None]}), ("metric", "pass_rate"))
    ('metric',)
    """
    if "pass_rate" in frame.columns and frame["pass_rate"].null_count() == frame.height:
        return tuple(c for c in columns if c != "pass_rate")
    return columns


def _comparison(frame: pl.DataFrame, source: Source, other: Source, plan: content.Plan, names: Names) -> dict[str, Any]:
    compared = content.comparison_table(frame, source, other, plan)
    return {
        "a": names.a,
        "b": names.b,
        "on": ", ".join(plan.on),
        "table": table(compared, COMPARE_COLUMNS),
        "image": figures.comparison_figure(compared, names.a, names.b),
    }


def _calibration(frame: pl.DataFrame, sample: pl.DataFrame, plan: content.Plan, note: str) -> dict[str, Any]:
    return {
        "resamples": content.AGREEMENT_RESAMPLES,
        "table": table(content.agreement_table(frame, plan), AGREEMENT_COLUMNS),
        "images": figures.calibration_figures(sample, plan, note),
    }


def _estimates(frame: pl.DataFrame, plan: content.Plan) -> dict[str, Any] | None:
    """The "Estimates from few labels" section: None unless a label column is filled on some rows only."""
    found, notes = content.estimate_table(frame, plan)
    if found is None and not notes:
        return None
    return {
        "rows": f"{frame.height:,}",
        "table": None if found is None else table(found, ESTIMATE_COLUMNS),
        "notes": notes,
    }


def _sample_note(rows: int, sampled: int) -> str:
    """What the pictures of rows are drawn from.

    Examples
    --------
    >>> _sample_note(10, 10)
    'Drawn from all 10 rows.'
    >>> _sample_note(1_000_000, 100_000)
    'Drawn from a uniform random sample of 100,000 of the 1,000,000 rows (seed 0); the tables use every row.'
    """
    if sampled == rows:
        return f"Drawn from all {rows:,} rows."
    return (
        f"Drawn from a uniform random sample of {sampled:,} of the {rows:,} rows (seed {content.SAMPLE_SEED}); "
        "the tables use every row."
    )


def _provenance(
    source: Source, other: Source | None, plan: content.Plan, worst: int, note: str, names: Names
) -> list[dict]:
    """Name/value rows: where the rows came from, what was computed, with which options."""
    from ragframe import __version__

    labels = plan.labels
    label_text = (
        "none" if labels is None else ", ".join(f"{k}={v}" for k, v in labels.items()) if isinstance(labels, dict)
        else ", ".join(labels)
    )  # fmt: skip
    if labels is not None:
        label_text += f" (AUROC interval: {content.AGREEMENT_RESAMPLES} bootstrap resamples, seed 0)"
    items = [
        ("source", _called(names.a, source.label)),
        ("rows", f"{source.rows:,}"),
        ("ragframe version", __version__),
        ("generated at", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("score columns", ", ".join(plan.metrics)),
        ("slice columns (by)", ", ".join(plan.by) or "none"),
        ("human labels", label_text),
        ("compared with", "none" if other is None else f"{_called(names.b, other.label)} ({other.rows:,} rows), "
         "paired on " + ", ".join(plan.on)),
        ("worst rows per metric", str(worst)),
        ("pictures of rows", note),
    ]  # fmt: skip
    items += _manifest_items(source.manifest)
    return [{"name": name, "value": value} for name, value in items]


def _called(name: str, label: str) -> str:
    """A side's name and where its rows came from, once when they are the same.

    Examples
    --------
    >>> _called("wrong contexts", "in-memory frame"), _called("runs/a.parquet", "runs/a.parquet")
    ('wrong contexts: in-memory frame', 'runs/a.parquet')
    >>> _called("compare (in-memory frame)", "in-memory frame")  # the default name of a frame
    'in-memory frame'
    """
    return label if name == label or name.endswith(f"({label})") else f"{name}: {label}"


def _manifest_items(manifest: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The evaluate_parquet run's source files and options, from its manifest.json.

    Examples
    --------
    >>> manifest = {"source": [{"path": "log.parquet", "rows": 3}], "options": {"evaluator": {"metrics": ["mrr"]}}}
    >>> _manifest_items(manifest)
    [('run source', 'log.parquet (3 rows)'), ('evaluator metrics', '["mrr"]')]
    >>> _manifest_items({"options": {"evaluator": {"judge": {"model": "m", "api_key": "sk-0123"}}}})[1]
    ('evaluator judge', '{"api_key": "***", "model": "m"}')
    """
    if manifest is None:
        return []
    files = manifest.get("source") or []
    items = [("run source", "; ".join(f"{f.get('path')} ({f.get('rows')} rows)" for f in files))]
    options = secrets.redact(manifest.get("options") or {})  # a manifest of an older version may hold a key
    evaluator = options.get("evaluator") or {}
    items += [(f"evaluator {key}", json.dumps(value, sort_keys=True)) for key, value in evaluator.items()]
    items += [(f"run {key}", json.dumps(value, sort_keys=True)) for key, value in options.items() if key != "evaluator"]
    return items


def _write(path: Path, html: str) -> Path:
    """Write ``html`` to ``path`` through a temporary file in the same folder (never a half-written page).

    A failure is an OSError naming ``path`` (not the temporary file or a parent folder).
    """
    path = path.absolute()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # open(): the umask's permissions
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(html, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # its folder may not exist, or be a file
            temporary.unlink(missing_ok=True)
        raise OSError(exc.errno, f"report: cannot write the report: {exc.strerror or exc}", str(path)) from exc
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path
