"""The self-contained HTML report of scored rows: :func:`report` (``rf.report``, ``ragframe report``).

Modules: :mod:`~ragframe.reporting.inputs` (open the scores lazily),
:mod:`~ragframe.reporting.content` (the tables, on every row),
:mod:`~ragframe.reporting.tables` (frames as template data),
:mod:`~ragframe.reporting.figures` (the :mod:`ragframe.plot` pictures, from a sample),
:mod:`~ragframe.reporting.images` (figures as PNG data URIs),
:mod:`~ragframe.reporting.render` (the Jinja2 template, autoescaped),
:mod:`~ragframe.reporting.build` (:func:`report` itself). Needs the ``report`` extra
(jinja2, matplotlib), imported only when a report is written.
"""

from ragframe.reporting.build import report

__all__ = ["report"]
