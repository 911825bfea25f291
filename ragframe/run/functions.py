"""The per-metric and per-family public functions, generated from the registry by :mod:`ragframe.run.factory`.

``score_retrieval``, ``score_faithfulness`` ... ``score_hallucination_rate`` and
``judge_faithfulness`` ... ``judge_answer_correctness``: each takes a frame and only its family's
options (see its signature). ``functions.pyi`` beside this file gives IDEs the same signatures.

Examples
--------
>>> import polars as pl
>>> from ragframe.run.functions import score_faithfulness
>>> score_faithfulness(pl.DataFrame({"answer": ["a"], "contexts": [["b"]]}), k=3)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ragframe.exceptions.InvalidParameterError: score_faithfulness: unexpected option 'k': ...
"""

from __future__ import annotations

from ragframe.run.factory import public_functions

_FUNCTIONS = public_functions()
globals().update(_FUNCTIONS)
__all__ = sorted(_FUNCTIONS)
#: The generated functions' docstrings run as doctests (their code lives in the factory).
__test__ = {name: function.__doc__ for name, function in _FUNCTIONS.items()}
