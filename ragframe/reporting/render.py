"""The report's HTML from its Jinja2 template (``ragframe/reporting/templates/``), autoescaped."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ragframe.extras import require

__all__ = ["TEMPLATE", "environment", "render"]

#: The page's template, in ``ragframe/reporting/templates/``.
TEMPLATE = "report.html.j2"


@lru_cache(maxsize=1)
def environment() -> Any:
    """The Jinja2 environment: templates of this package, every value HTML-escaped, undefined names an error.

    Examples
    --------
    >>> environment().from_string("{{ text }}").render(text="<script>")
    '&lt;script&gt;'
    """
    jinja2 = require("report", "jinja2")

    return jinja2.Environment(
        loader=jinja2.PackageLoader("ragframe.reporting", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(context: dict[str, Any]) -> str:
    """The page: :data:`TEMPLATE` rendered with ``context`` (see :func:`ragframe.reporting.build.page_context`).

    Parameters
    ----------
    context : dict
        The template's variables.

    Returns
    -------
    str
        The HTML document.
    """
    return environment().get_template(TEMPLATE).render(**context)
