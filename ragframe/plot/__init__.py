"""Plots of ragframe's frames, as matplotlib figures (the optional extra ``ragframe[plot]``).

Five functions, each taking the frames ragframe writes or returns and giving back a
:class:`matplotlib.figure.Figure` (built with the object API: never pyplot, never
``plt.show()``; show it in a notebook or ``fig.savefig(path)``):

- :func:`distributions`: histogram or ECDF per score column, threshold marked, nulls counted;
- :func:`slices`: heatmap of a statistic per metric and slice, with slice counts;
- :func:`compare`: forest plot of :func:`ragframe.compare`'s deltas and intervals;
- :func:`ranking_curve`: mean metric@k over k for one or more runs;
- :func:`calibration`: ROC curve of each score against a 0/1 human label, with its AUROC, or
  (``kind="reliability"``) its reliability diagram.

matplotlib is imported when a function is called, not when this module is imported; without
it the call raises :class:`ragframe.MissingDependencyError` naming the extra.

Examples
--------
>>> import ragframe as rf
>>> sorted(rf.plot.__all__)
['calibration', 'compare', 'distributions', 'ranking_curve', 'slices']
"""

from ragframe.plot.calibration import calibration
from ragframe.plot.compare import compare
from ragframe.plot.distributions import distributions
from ragframe.plot.ranking import ranking_curve
from ragframe.plot.slices import slices

__all__ = ["distributions", "slices", "compare", "ranking_curve", "calibration"]
