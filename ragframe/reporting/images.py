"""Matplotlib figures as PNG data URIs, so that the report's images live inside the HTML file."""

from __future__ import annotations

import base64
import io
from typing import Any

__all__ = ["PNG_PREFIX", "png_data_uri"]

#: How every image ``src`` of the report starts.
PNG_PREFIX = "data:image/png;base64,"
#: Resolution of the PNGs (pixels per inch of the figure's size).
DPI = 100


def png_data_uri(figure: Any, dpi: int = DPI) -> str:
    """A ``data:image/png;base64,...`` URI of a matplotlib Figure (``figure.savefig`` to memory).

    Nothing global is touched: the figure is not registered with pyplot, nothing is closed.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
        The figure to encode.
    dpi : int
        Pixels per inch.

    Returns
    -------
    str

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> figure = Figure(figsize=(2, 1))
    >>> _ = figure.add_subplot().plot([0, 1], [1, 0])
    >>> uri = png_data_uri(figure)
    >>> uri.startswith(PNG_PREFIX), base64.b64decode(uri[len(PNG_PREFIX):])[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    (True, True)
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return PNG_PREFIX + base64.b64encode(buffer.getvalue()).decode("ascii")
