"""``ragframe estimate``: its numbers are ppi_py's, it reads what ``summary`` reads, its errors are one line.

Every frame is built here and written to ``tmp_path``. The printed CSV / JSON (full
precision) is read back and compared with ``ppi_py`` (the reference implementation of
prediction-powered inference) called on the same columns, and with :func:`ragframe.estimate`.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.cli.main import main

ppi_py = pytest.importorskip("ppi_py")

N = 120
LABELLED = 40


def scored_frame() -> pl.DataFrame:
    """A score on every row, a 0/1 label on the first LABELLED rows (a seeded random order), a slice column."""
    rng = np.random.default_rng(3)
    truth = rng.uniform(size=N) < 0.7
    score = np.clip(0.35 * truth + rng.normal(0.45, 0.2, N), 0.0, 1.0)
    labelled = np.zeros(N, dtype=bool)
    labelled[rng.permutation(N)[:LABELLED]] = True
    return pl.DataFrame(
        {
            "id": np.arange(N),
            "faithfulness": score,
            "human_faithfulness": pl.Series(np.where(labelled, truth.astype(float), np.nan)).fill_nan(None),
            "split": np.where(np.arange(N) % 2 == 0, "even", "odd"),
        }
    )


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def printed_json(capsys, *argv) -> list[dict]:
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def reference(frame: pl.DataFrame, method: str, alpha: float) -> tuple[float, float, float]:
    """(estimate, ci_low, ci_high) from ppi_py on ``frame``'s labelled and unlabelled rows."""
    labelled = frame.filter(pl.col("human_faithfulness").is_not_null())
    unlabelled = frame.filter(pl.col("human_faithfulness").is_null())
    y = labelled["human_faithfulness"].to_numpy().astype(float)
    f, u = labelled["faithfulness"].to_numpy(), unlabelled["faithfulness"].to_numpy()
    if method == "classical":
        low, high = ppi_py.classical_mean_ci(y, alpha=alpha)
        return float(y.mean()), float(low), float(high)
    lam = None if method == "ppi++" else 1.0
    point = ppi_py.ppi_mean_pointestimate(y, f, u, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, f, u, alpha=alpha, lam=lam)
    return float(np.ravel(point)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


@pytest.fixture
def scores(tmp_path):
    path = tmp_path / "scores.parquet"
    scored_frame().write_parquet(path)
    return path


ARGS = ("--prediction", "faithfulness", "--label", "human_faithfulness")


@pytest.mark.parametrize(("method", "alpha"), [("ppi++", 0.05), ("ppi", 0.1), ("classical", 0.05)])
def test_printed_estimate_equals_ppi_py(capsys, scores, method, alpha):
    (row,) = printed_json(capsys, "estimate", scores, *ARGS, "--method", method, "--alpha", alpha)
    expected = reference(scored_frame(), method, alpha)
    assert (row["n_labeled"], row["n_unlabeled"], row["method"]) == (LABELLED, N - LABELLED, method)
    np.testing.assert_allclose([row["estimate"], row["ci_low"], row["ci_high"]], expected, rtol=0, atol=1e-9)
    classical = reference(scored_frame(), "classical", alpha)
    got = [row["classical_estimate"], row["classical_ci_low"], row["classical_ci_high"]]
    np.testing.assert_allclose(got, classical, rtol=0, atol=1e-9)


def test_default_method_is_ppi_plus_plus_at_95_percent(capsys, scores):
    (row,) = printed_json(capsys, "estimate", scores, *ARGS)
    expected = reference(scored_frame(), "ppi++", 0.05)
    assert row["method"] == "ppi++" and 0.0 < row["lambda"] < 1.0  # tuned, not clipped, on this frame
    np.testing.assert_allclose([row["estimate"], row["ci_low"], row["ci_high"]], expected, rtol=0, atol=1e-9)
    assert row["ci_high"] - row["ci_low"] < row["classical_ci_high"] - row["classical_ci_low"]  # a useful score


def test_by_estimates_each_slice_from_its_own_rows(capsys, scores):
    rows = printed_json(capsys, "estimate", scores, *ARGS, "--by", "split")
    assert [r["split"] for r in rows] == ["even", "odd"]
    frame = scored_frame()
    for row in rows:
        expected = reference(frame.filter(pl.col("split") == row["split"]), "ppi++", 0.05)
        np.testing.assert_allclose([row["estimate"], row["ci_low"], row["ci_high"]], expected, rtol=0, atol=1e-9)
    assert sum(r["n_labeled"] for r in rows) == LABELLED


def test_csv_table_and_markdown_print_the_library_s_frame(capsys, scores):
    expected = rf.estimate(scored_frame(), prediction="faithfulness", label="human_faithfulness", by="split")
    code, out, _ = run_cli(capsys, "estimate", scores, *ARGS, "--by", "split", "--format", "csv")
    assert code == 0
    assert pl.read_csv(io.StringIO(out)).equals(expected, null_equal=True)
    code, out, _ = run_cli(capsys, "estimate", scores, *ARGS)
    header, rule, line = out.splitlines()
    assert header.split() == rf.estimate(scored_frame(), prediction="faithfulness", label="human_faithfulness").columns
    assert set(rule) == {"-", " "} and f"{expected['n_labeled'].sum():d}" in line.split()
    code, out, _ = run_cli(capsys, "estimate", scores, *ARGS, "--format", "markdown")
    assert code == 0 and out.startswith("| estimate | ci_low | ci_high |")


def test_reads_folders_globs_csv_and_eval_output_folders(capsys, tmp_path):
    frame = scored_frame()
    (tmp_path / "runs").mkdir()
    frame.head(60).write_parquet(tmp_path / "runs" / "part-0.parquet")
    frame.tail(60).write_parquet(tmp_path / "runs" / "part-1.parquet")
    frame.write_csv(tmp_path / "scores.csv")
    (whole,) = printed_json(capsys, "estimate", tmp_path / "runs", *ARGS)
    (globbed,) = printed_json(capsys, "estimate", tmp_path / "runs" / "part-*.parquet", *ARGS)
    (from_csv,) = printed_json(capsys, "estimate", tmp_path / "scores.csv", *ARGS)
    expected = reference(frame, "ppi++", 0.05)
    for row in (whole, globbed, from_csv):
        np.testing.assert_allclose([row["estimate"], row["ci_low"], row["ci_high"]], expected, rtol=0, atol=1e-9)
    # a ragframe eval output folder: the heuristic scored in batches, the label kept beside it
    log = pl.DataFrame(
        {
            "id": np.arange(N),
            "question": ["What is the capital of France?"] * N,
            "answer": ["Paris is the capital of France."] * (N // 2) + ["It is Lyon, on the Moon."] * (N // 2),
            "contexts": [["Paris is the capital of France."]] * N,
            "human": [1, None, None, 1, 0, None] * (N // 6),
        }
    )
    log.write_parquet(tmp_path / "log.parquet")
    rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "out", metrics=["faithfulness"], keep=["id", "human"], progress=False
    )
    (row,) = printed_json(capsys, "estimate", tmp_path / "out", "--prediction", "faithfulness", "--label", "human")
    scored = rf.read_scores(tmp_path / "out")
    direct = rf.estimate(scored, prediction="faithfulness", label="human").row(0, named=True)
    assert row == pytest.approx(direct) and (row["n_labeled"], row["n_unlabeled"]) == (3 * N // 6, 3 * N // 6)


@pytest.mark.parametrize(
    ("frame", "extra", "code", "message"),
    [
        pytest.param(
            scored_frame().with_columns(human_faithfulness=pl.lit(None, dtype=pl.Float64)),
            (),
            3,
            "ragframe: error: estimate: no labelled row: the label column is null on every row "
            "[column 'human_faithfulness']; expected 0/1 labels on a random sample of the rows, "
            "found 120 rows, all null",
            id="label-all-null",
        ),
        pytest.param(
            scored_frame().with_columns(human_faithfulness=pl.lit(None)),
            (),
            3,
            "ragframe: error: estimate: no labelled row",
            id="label-all-null-dtype-null",
        ),
        pytest.param(
            scored_frame().with_columns(
                pl.when(pl.col("id") == 7).then(None).otherwise("faithfulness").alias("faithfulness")
            ),
            (),
            3,
            "ragframe: error: estimate: prediction is null, NaN or infinite (every row needs one: filter or fill "
            "those rows first) [column 'faithfulness', row 7]",
            id="prediction-with-a-null",
        ),
        pytest.param(
            scored_frame().with_columns(pl.col("human_faithfulness") / 0),
            (),
            3,
            "ragframe: error: estimate: label is NaN or infinite [column 'human_faithfulness', row ",
            id="label-not-finite",
        ),
        pytest.param(scored_frame().drop("faithfulness"), (), 3, "missing column [column 'faithfulness']", id="no-col"),
        pytest.param(scored_frame(), ("--method", "mean"), 2, "argument --method: invalid choice: 'mean'", id="method"),
        pytest.param(scored_frame(), ("--alpha", "1"), 2, "argument --alpha: expected a number between 0", id="alpha"),
        pytest.param(
            scored_frame(),
            ("--by", "faithfulness"),
            2,
            "by must be slice columns other than prediction and label",
            id="by-pred",
        ),
    ],
)
def test_errors_are_one_line_with_their_exit_code(capsys, tmp_path, frame, extra, code, message):
    path = tmp_path / "scores.parquet"
    frame.write_parquet(path)
    got, out, err = run_cli(capsys, "estimate", path, *ARGS, *extra)
    assert got == code and out == ""
    last = err.strip().splitlines()[-1]
    assert message in last, err
    if code == 3:
        assert len(err.strip().splitlines()) == 1, err


def test_required_flags_and_a_missing_file(capsys, scores, tmp_path):
    code, _, err = run_cli(capsys, "estimate", scores, "--prediction", "faithfulness")
    assert code == 2 and "the following arguments are required: --label" in err
    code, _, err = run_cli(capsys, "estimate", tmp_path / "nope.parquet", *ARGS)
    missing = tmp_path / "nope.parquet"
    assert code == 3 and err.strip() == f"ragframe: error: scores: no such file or folder: '{missing}'"


# ----------------------------------------------------------------------------- the report's estimate section


def _section(page: str) -> str:
    return page.split('<h2 id="estimates">', 1)[1].split("</section>", 1)[0]


def _cells(section: str, column: str) -> list[float]:
    return [float(v) for v in re.findall(rf'data-column="{column}" data-value="([^"]+)"', section)]


@pytest.mark.slow
def test_report_shows_estimates_when_a_label_column_is_partly_filled(tmp_path):
    pytest.importorskip("jinja2")
    frame = scored_frame().with_columns(full=(pl.col("faithfulness") > 0.5).cast(pl.Int8))
    labels = {"faithfulness": "human_faithfulness", "composite_score": "full"}
    page = rf.report(frame.with_columns(composite_score=pl.col("faithfulness")), tmp_path / "r.html", labels=labels)
    text = page.read_text(encoding="utf-8")
    assert '<a href="#estimates">Estimates from few labels</a>' in text
    section = _section(text)
    # one row: the partly filled label; the fully filled one ("full") is the agreement section's only
    assert section.count('<td data-column="label">') == 1
    assert '<td data-column="label">human_faithfulness</td>' in section
    expected = reference(frame, "ppi++", 0.05)
    got = [_cells(section, c)[0] for c in ("estimate", "ci_low", "ci_high")]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert _cells(section, "n_labeled") == [LABELLED] and _cells(section, "n_unlabeled") == [N - LABELLED]
    classical = reference(frame, "classical", 0.05)
    got = [_cells(section, c)[0] for c in ("classical_estimate", "classical_ci_low", "classical_ci_high")]
    np.testing.assert_allclose(got, classical, rtol=0, atol=1e-12)
    assert "from these rows, not chosen" in section  # when it is valid


@pytest.mark.slow
def test_report_without_partly_filled_labels_has_no_estimate_section(tmp_path):
    pytest.importorskip("jinja2")
    frame = scored_frame().with_columns(pl.col("human_faithfulness").fill_null(1.0))
    text = rf.report(frame, tmp_path / "r.html", labels="human_faithfulness", metrics="faithfulness").read_text()
    assert 'id="estimates"' not in text and "#estimates" not in text
    text = rf.report(frame, tmp_path / "r.html", metrics="faithfulness").read_text()
    assert 'id="estimates"' not in text


def test_report_says_why_a_pair_has_no_estimate(tmp_path):
    pytest.importorskip("jinja2")
    frame = scored_frame().with_columns(
        pl.when(pl.col("id") < 3).then(None).otherwise(pl.col("faithfulness")).alias("faithfulness"),
        answer_relevance=pl.col("faithfulness"),
        ordinal=pl.when(pl.col("human_faithfulness").is_not_null()).then(pl.col("id") % 5 - 2),
    )
    labels = {"faithfulness": "human_faithfulness", "answer_relevance": "ordinal"}
    section = _section(rf.report(frame, tmp_path / "r.html", labels=labels).read_text())
    assert "faithfulness / human_faithfulness: no estimate, faithfulness is null on 3 of the 120 rows" in section
    assert "answer_relevance / ordinal: no estimate, ordinal is not 0/1 or a number in [0, 1]." in section
    assert "<table" not in section


@pytest.mark.parametrize(
    "extra", [("--interval", "wilson"), ("--finite-population",), ("--interval", "wilson", "--finite-population")]
)
def test_interval_and_finite_population_options_are_rf_estimate(capsys, scores, extra) -> None:
    rows = printed_json(capsys, "estimate", scores, *ARGS, "--alpha", "0.1", *extra)
    options = {
        "interval": "wilson" if "wilson" in extra else "normal",
        "finite_population": "--finite-population" in extra,
    }
    expected = rf.estimate(
        scored_frame(), prediction="faithfulness", label="human_faithfulness", alpha=0.1, **options
    ).row(0, named=True)
    for key in ("estimate", "ci_low", "ci_high", "classical_ci_low", "classical_ci_high"):
        assert rows[0][key] == pytest.approx(expected[key], abs=1e-12), key


def test_wilson_with_a_graded_label_is_exit_code_3(capsys, tmp_path) -> None:
    path = tmp_path / "graded.parquet"
    scored_frame().with_columns(pl.col("human_faithfulness") * 0.5).write_parquet(path)
    code, _, err = run_cli(capsys, "estimate", path, *ARGS, "--interval", "wilson")
    assert code == 3 and "label out of range [column 'human_faithfulness'" in err
