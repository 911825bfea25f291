"""matplotlib, imported on first use, and the one way every plot makes its figure.

``import ragframe.plot`` never imports matplotlib; each plotting function calls
:func:`new_figure`, which imports it then and raises
:class:`~ragframe.exceptions.MissingDependencyError` naming the ``plot`` extra when it is
absent. Figures are built with :class:`matplotlib.figure.Figure` (the object API): no
pyplot state, no open-figure registry, safe under any backend and in threads; a notebook
shows the returned figure, a script saves it with ``fig.savefig(path)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragframe.extras import require

__all__ = ["figure_module", "new_figure", "WIDTH"]

#: Default figure width in inches: fits the column of an HTML report at 100 dpi.
WIDTH = 9.0


def figure_module() -> Any:
    """The ``matplotlib.figure`` module, or a MissingDependencyError naming the ``plot`` extra.

    Parameters
    ----------

    Returns
    -------
    module
        ``matplotlib.figure``.

    Examples
    --------
    >>> figure_module().Figure.__name__
    'Figure'
    """
    return require("plot", "matplotlib.figure")


def new_figure(
    nrows: int = 1,
    ncols: int = 1,
    *,
    width: float = WIDTH,
    height: float = 4.0,
    n_axes: int | None = None,
) -> tuple[Any, list[Any]]:
    """A constrained-layout Figure of ``width`` x ``height`` inches and its axes, row-major.

    Parameters
    ----------
    nrows, ncols : int
        The grid of axes.
    width, height : float
        Figure size in inches.
    n_axes : int, optional
        Keep only the first ``n_axes`` cells of the grid (the rest are removed, so
        ``len(fig.axes) == n_axes``); default every cell.

    Returns
    -------
    (matplotlib.figure.Figure, list of matplotlib.axes.Axes)

    Examples
    --------
    >>> fig, axes = new_figure(2, 2, n_axes=3)
    >>> len(fig.axes), fig.get_size_inches().tolist()
    (3, [9.0, 4.0])
    """
    figure = figure_module()
    fig = figure.Figure(figsize=(width, height), layout="constrained")
    grid = np.asarray(fig.subplots(nrows, ncols, squeeze=False)).ravel().tolist()
    keep = len(grid) if n_axes is None else n_axes
    for ax in grid[keep:]:
        fig.delaxes(ax)
    return fig, grid[:keep]
