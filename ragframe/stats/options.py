"""The comparison family's options, declared once: names, defaults, checks and order.

:func:`ragframe.compare`, :func:`ragframe.compare_runs`, :func:`ragframe.regressions`,
:func:`ragframe.gate` and :func:`ragframe.distributed.compare_datasets` speak one
vocabulary. Each takes its frames first and its options keyword-only; the options they
share are the fields of :class:`ComparisonOptions`, with its defaults (each signature reads
its defaults from :data:`DEFAULTS`), in its order (a function's own options come after the
shared ones), and checked by :meth:`ComparisonOptions.check`, whose errors name the
function called. The reference side comes first everywhere: ``a`` then ``b`` (``delta =
b - a``), ``baseline`` then ``current``.

``threshold`` is a pass mark (``score_*``, ``rf.evaluate``); the drop a regression check
tolerates is ``max_drop``. ``threshold=`` is still accepted by :func:`ragframe.regressions`
and :func:`ragframe.gate` for one release, with a :class:`DeprecationWarning`
(:func:`max_drop_from`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from typing import Any

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, with_caller
from ragframe.metrics.registry import check_options, option, option_defaults
from ragframe.public import user_stacklevel
from ragframe.stats.paired_tests import CORRECTIONS, TESTS

__all__ = ["ComparisonOptions", "DEFAULTS", "HOW", "max_drop_from"]

#: What to do with ids on one side only: an error naming them, or leave them out.
HOW = ("error", "inner")
#: The keywords of :func:`ragframe.compare` that the other functions pass through to it.
PAIRED_TEST_KEYWORDS = ("on", "test", "alpha", "correction", "how", "n_resamples", "seed")


def _columns(value: Any, name: str) -> tuple[str, ...]:
    return tuple(validate.column_list(value, name))


def _optional_columns(value: Any, name: str) -> tuple[str, ...] | None:
    return None if value is None else tuple(validate.column_list(value, name))


def _optional_slices(value: Any, name: str) -> tuple[str, ...] | None:
    return None if value is None else tuple(validate.column_list(value, name, allow_empty=True))


@dataclass(frozen=True)
class ComparisonOptions:
    """The options shared by the comparison functions: one default, one check, one order.

    Declared as every option of ragframe is (:func:`ragframe.metrics.registry.option`: the
    default, the check and the documentation at once; the families' and the run's options too).

    Parameters
    ----------
    on : str or tuple of str
        Sample id column(s) that pair the rows of the two frames.
    metrics : str or tuple of str, optional
        The metrics compared (score columns; ranking measures for ``compare_runs``);
        None: every score column of both sides.
    by : str or tuple of str, optional
        Slice columns (taken from the first frame).
    test : {"t", "wilcoxon", "permutation", "bootstrap"}
        The paired test.
    alpha : float
        Significance level, strictly between 0 and 1; the interval covers 1 - alpha.
    correction : {"holm", "bonferroni", "fdr_bh", None}
        Multiple-testing correction over every (metric, slice) row of the call.
    how : {"error", "inner"}
        Ids on one side only: an error naming them, or left out.
    n_resamples : int
        Resamples of the permutation and bootstrap tests (>= 1).
    seed : int or None
        Random seed of the permutation and bootstrap tests (>= 0, or None for a fresh one).
    max_drop : float
        The largest drop of a metric's mean that is not a regression (>= 0; a drop of
        more, ``delta < -max_drop``, exceeds it).
    significance : bool
        A regression of per-row frames must also be significant (True) or only exceed ``max_drop``.

    Examples
    --------
    >>> options = ComparisonOptions.check(on="query_id", alpha=0.01)
    >>> options.on, options.alpha, options.test
    (('query_id',), 0.01, 't')
    >>> try:
    ...     ComparisonOptions.check(test="anova")
    ... except InvalidParameterError as error:
    ...     print(error)
    test must be one of ['t', 'wilcoxon', 'permutation', 'bootstrap'], found 'anova'
    """

    on: str | tuple[str, ...] = option(
        "id", "Sample id column(s) that pair the rows of the two frames.", check=_columns
    )
    metrics: str | tuple[str, ...] | None = option(
        None, "The metrics compared; None: every score column of both sides.", check=_optional_columns
    )
    by: str | tuple[str, ...] | None = option(
        None, "Slice columns (taken from the first frame).", check=_optional_slices
    )
    test: str = option("t", "The paired test.", check=lambda value, name: validate.choice(value, name, TESTS))
    alpha: float = option(0.05, "Significance level, strictly between 0 and 1.", check=validate.confidence)
    correction: str | None = option(
        "holm",
        "Multiple-testing correction over every (metric, slice) row of the call.",
        check=lambda value, name: validate.choice(value, name, CORRECTIONS),
    )
    how: str = option(
        "error",
        "Ids on one side only: an error naming them, or left out.",
        check=lambda value, name: validate.choice(value, name, HOW),
    )
    n_resamples: int = option(9999, "Resamples of the permutation and bootstrap tests.", check=validate.resamples)
    seed: int | None = option(0, "Random seed of the permutation and bootstrap tests.", check=validate.seed)
    max_drop: float = option(
        0.05,
        "The largest drop of a metric's mean that is not a regression.",
        check=lambda value, name: validate.number(value, name, minimum=0.0),
    )
    significance: bool = option(True, "A regression of per-row frames must also be significant.", check=validate.flag)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in the order every signature lists them."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def check(cls, **values: Any) -> ComparisonOptions:
        """The options ``values`` (the others at their defaults), checked; errors name ``function``.

        ``on`` becomes a tuple, ``metrics`` and ``by`` a tuple or None; numbers their canonical type.
        """
        unknown = [name for name in values if name not in cls.names()]
        if unknown:
            raise InvalidParameterError(f"unknown comparison option(s) {unknown}")
        return cls(**check_options(cls, {**option_defaults(cls), **values}))

    def paired_test(self) -> dict[str, Any]:
        """The keywords of :func:`ragframe.compare` that choose the pairing and the test (not metrics, by)."""
        return {name: list(self.on) if name == "on" else getattr(self, name) for name in PAIRED_TEST_KEYWORDS}


#: The defaults of every comparison option; each function's signature reads its defaults here.
DEFAULTS = ComparisonOptions()


def max_drop_from(max_drop: Any, threshold: Any) -> Any:
    """``max_drop``, or the deprecated ``threshold=`` given for it (with a :class:`DeprecationWarning`).

    ``threshold`` named the drop size of :func:`ragframe.regressions` and :func:`ragframe.gate`
    until this release; it now means a pass mark only. Given, it is used (and warned about)
    when ``max_drop`` is left at its default; both given is an :class:`InvalidParameterError`.
    The value is checked later, with the other options.

    Examples
    --------
    >>> max_drop_from(0.1, None)
    0.1
    """
    if threshold is None:
        return max_drop
    if max_drop is not DEFAULTS.max_drop and max_drop != DEFAULTS.max_drop:
        raise InvalidParameterError(
            "pass {max_drop} only; {threshold} is its deprecated name (got both: {max_drop#2}, {threshold#2})",
            mentions={"max_drop": "", "threshold": "", "max_drop#2": f"{max_drop!r}", "threshold#2": f"{threshold!r}"},
        )
    warnings.warn(
        with_caller(
            "threshold= is deprecated for the drop a regression tolerates and will be removed in the "
            "next release; pass max_drop= (threshold now means a pass mark only, as in score_* and evaluate)"
        ),
        DeprecationWarning,
        stacklevel=user_stacklevel(),
    )
    return threshold
