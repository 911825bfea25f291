"""The small real example bundled with the package (see ``ragframe/data/README.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["example_paths"]


def example_paths() -> dict[str, Path]:
    """Paths of the bundled TREC DL 2019 example: ``qrels`` and the runs ``bm25`` and ``bm25+gpt3.5-rerank``.

    Examples
    --------
    >>> sorted(example_paths())
    ['bm25', 'bm25+gpt3.5-rerank', 'qrels']
    """
    root = resources.files("ragframe") / "data"
    return {
        "qrels": Path(str(root / "qrels.dl19-passage.txt")),
        "bm25": Path(str(root / "run.dl19.bm25.txt")),
        "bm25+gpt3.5-rerank": Path(str(root / "run.dl19.bm25-rerank-gpt35.txt")),
    }
