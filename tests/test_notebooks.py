"""The notebooks in notebooks/ run from top to bottom and are committed clean.

Each notebook is executed with nbclient in a fresh ``python3`` kernel (ipykernel of the
interpreter running pytest), in ``tmp_path`` as its working folder, so whatever it writes
lands there. The notebooks check their own key numbers in ``assert`` cells; the tests below
check that those cells are still there, that the displayed tables hold the real values, that
every plot cell showed a picture, and that the quick start wrote its HTML report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["few_labels.ipynb", "quickstart.ipynb", "ranking.ipynb"]
CELL_TIMEOUT = 120  # seconds per cell; each notebook takes a few seconds in all
#: What a fresh environment may print once to stderr (not a problem of the notebooks).
FIRST_RUN_NOTICES = ("Matplotlib is building the font cache",)


def execute(notebook: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Run every cell in a new python3 kernel whose working folder is ``folder``; raise on error."""
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(folder)}}
    )
    client.execute()
    return notebook


def run(name: str, folder: Path) -> nbformat.NotebookNode:
    return execute(nbformat.read(NOTEBOOKS / name, as_version=4), folder)


def code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def tagged(notebook: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    cells = [cell for cell in notebook.cells if tag in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"expected one cell tagged {tag!r}, found {len(cells)}"
    return cells[0]


def text(cell: nbformat.NotebookNode) -> str:
    """What a cell printed and displayed: its streams, and its results as plain text and HTML.

    The HTML of a polars table holds every cell whole (the plain text wraps long ones).
    """
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.extend(output.data.get(kind, "") for kind in ("text/plain", "text/html"))
    return "\n".join(parts)


def pictures(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The code cells that showed a PNG image."""
    return [cell for cell in code_cells(notebook) if any("image/png" in o.get("data", {}) for o in cell.outputs)]


def assert_ran_clean(notebook: nbformat.NotebookNode) -> None:
    for number, cell in enumerate(code_cells(notebook)):
        assert cell.execution_count == number + 1, f"cell {cell.id} was not executed in order"
        assert not [o for o in cell.outputs if o.output_type == "error"], f"cell {cell.id} raised"
        errors = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        errors = [e for e in errors if not e.startswith(FIRST_RUN_NOTICES)]
        assert not errors, f"cell {cell.id} wrote to stderr (a warning?): {errors[0][:500]}"


def assert_cell_asserts(notebook: nbformat.NotebookNode, *snippets: str) -> None:
    """The notebook still checks these values itself (in cells that start with ``assert``)."""
    sources = "\n".join(cell.source for cell in code_cells(notebook))
    for snippet in snippets:
        assert snippet in sources, f"the notebook no longer asserts {snippet!r}"


def test_no_notebook_left_out():
    assert sorted(path.name for path in NOTEBOOKS.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_clean(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=nbformat.NO_CONVERT)
    assert notebook.nbformat == 4
    nbformat.validate(notebook)  # raises nbformat.ValidationError
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in code_cells(notebook):
        assert cell.outputs == [], f"{name}: cell {cell.id} has outputs: clear them before committing"
        assert cell.execution_count is None, f"{name}: cell {cell.id} has an execution count"
        assert "execution" not in cell.metadata, f"{name}: cell {cell.id} keeps execution timings"
        # bundled data only: no network, nothing from the team's ../shared folder
        for word in ("http://", "https://", "shared/", "urlopen", "requests."):
            assert word not in cell.source, f"{name}: cell {cell.id} mentions {word!r}"


@pytest.mark.slow
def test_kernel_is_this_interpreter(tmp_path):
    """The python3 kernel nbclient starts runs the Python (and the ragframe) under test."""
    source = "import json, os, sys, ragframe\nprint(json.dumps([sys.prefix, ragframe.__file__, os.getcwd()]))"
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    executed = execute(probe, tmp_path)
    prefix, module, cwd = json.loads(text(executed.cells[0]))
    import ragframe

    assert Path(prefix).resolve() == Path(sys.prefix).resolve()
    assert Path(module).resolve() == Path(ragframe.__file__).resolve()
    assert Path(cwd).resolve() == tmp_path.resolve()


@pytest.mark.slow
def test_quickstart_runs(tmp_path):
    notebook = run("quickstart.ipynb", tmp_path)
    assert_ran_clean(notebook)
    assert_cell_asserts(notebook, "== 0.852", 'row["faithfulness"]["significant"]')
    # the four plots: distributions, slices, compare, calibration
    assert len(pictures(notebook)) == 4
    # wrong contexts: faithfulness fell from 0.588368 to 0.080305; answer_relevance did not move
    comparison = text(tagged(notebook, "comparison"))
    assert "0.588368" in comparison and "0.080305" in comparison
    # AUROC of faithfulness against the human labels (README: 0.852), 172 positives of 200
    agreement = text(tagged(notebook, "agreement"))
    assert "human_faithfulness" in agreement and "172" in agreement and "0.851848" in agreement
    report = tmp_path / "report.html"
    assert report.is_file(), (
        f"no report.html in the working folder; it holds {sorted(p.name for p in tmp_path.iterdir())}"
    )
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "faithfulness" in html
    assert "data:image/png;base64," in html
    assert str(report.resolve()) in text(tagged(notebook, "report")).replace("\n", "")


@pytest.mark.slow
def test_ranking_runs(tmp_path):
    notebook = run("ranking.ipynb", tmp_path)
    assert_ran_clean(notebook)
    assert_cell_asserts(notebook, "== 0.5058", "== 0.6868", 'ndcg10["significant"]')
    # the summary table: nDCG@10 of BM25 (published 0.5058) and of the rerank, 43 queries
    summary = text(tagged(notebook, "summary"))
    assert "0.505831" in summary and "0.686783" in summary and "43" in summary
    # two plots: the ranking curve and the forest plot
    assert len(pictures(notebook)) == 2
    assert list(tmp_path.iterdir()) == []  # it writes nothing


@pytest.mark.slow
def test_few_labels_runs(tmp_path):
    notebook = run("few_labels.ipynb", tmp_path)
    assert_ran_clean(notebook)
    assert_cell_asserts(
        notebook,
        "round(truth, 4) == 0.86",
        'round(ppi_pp["estimate"], 4) == 0.8264',
        '0.93 <= covered["ppi++"] <= 0.97',
        'widths["ppi++"] < widths["classical"]',
        'needed["ppi++"] < needed["classical"]',
    )
    # PPI++ from the 50 seeded labels, as the demo prints it (ppi_py's numbers, tests/test_demo.py)
    estimate = text(tagged(notebook, "estimate"))
    for value in ("0.826383", "0.726432", "0.926334", "0.380273", "0.713511", "0.926489"):
        assert value in estimate, value
    # 2,000 simulated draws of 50 labels: PPI++ covers 95.65%, classical 95.75%; PPI++ is narrower
    coverage = text(tagged(notebook, "coverage"))
    assert "0.9565" in coverage and "0.9575" in coverage and "0.171044" in coverage and "0.188782" in coverage
    # the calibrator fit on the 50 labels, checked on the 150 others: Brier 0.1788 -> 0.0843
    calibration = text(tagged(notebook, "calibration"))
    assert "0.178821" in calibration and "0.08426" in calibration
    plan = text(tagged(notebook, "plan"))
    assert "227" in plan and "191" in plan  # labels for a 0.1-wide interval: classical, PPI++
    # two pictures: the three intervals against the truth, the reliability diagram
    assert len(pictures(notebook)) == 2
    assert "0.8264  0.7264   0.9263         50          150  ppi++" in text(tagged(notebook, "cli"))
    report = tmp_path / "few_labels_report.html"
    assert '<h2 id="estimates">Estimates from few labels</h2>' in report.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["few_labels.parquet", "few_labels_report.html"]
