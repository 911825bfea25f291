"""A run's configuration, checked once: the typed :class:`RunPlan` an :class:`~ragframe.Evaluator` holds.

Every option of a run (the run's own, :class:`~ragframe.run.options.RunOptions`, and each
family's) is validated here, once, when the evaluator is made; the plan keeps the canonical
values. What a scoring call keeps while it runs (the judge's memo of replies, a budget's draw)
is a :class:`~ragframe.metrics.registry.RunState`, made per call and passed explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ragframe.judges.budget import Budget
from ragframe.metrics import registry
from ragframe.run.options import RunOptions

__all__ = ["RunPlan", "FamilyOptions", "family_option_names", "all_options", "GENERAL_OPTIONS"]

#: Options of the run itself (the families add theirs: column names, k, explain, ...), from :class:`RunOptions`.
GENERAL_OPTIONS: dict[str, Any] = registry.option_defaults(RunOptions)


@dataclass(frozen=True)
class RunPlan:
    """The checked options of a run: the run's own as typed fields, each family's as checked by the family.

    Built once per :class:`~ragframe.Evaluator` (:attr:`ragframe.Evaluator.run_plan`), by
    :func:`ragframe.run.configure.build_plan`; every scoring call reads it and none re-checks it.

    Attributes
    ----------
    prefix : str
    composite : bool
    composite_threshold : float
    thresholds, weights : mapping of str to float
        Keyed by metric or output name.
    mode : str
        ``"heuristic"``, ``"llm"`` or ``"hybrid"``.
    metric_modes : mapping of str to str
    hybrid_band : object
        ``(lo, hi)``, a mapping of metric to band, or None.
    budget : Budget or None
        A judge budget (:mod:`ragframe.judges.budget`).
    families : mapping of str to FamilyOptions
        Each registered family's options as its ``check`` returned them: read-only, holding
        only the options the family declares or reads (:attr:`Family.reads`).

    Examples
    --------
    >>> from ragframe.run.configure import build_plan
    >>> plan = build_plan({"k": [5], "prefix": "v2_"})
    >>> plan.prefix, plan.families["retrieval"]["k"], plan.budget is None
    ('v2_', [5], True)
    """

    prefix: str
    composite: bool
    composite_threshold: float
    thresholds: Mapping[str, float]
    weights: Mapping[str, float]
    mode: str
    metric_modes: Mapping[str, str]
    hybrid_band: Any
    budget: Budget | None
    families: Mapping[str, Mapping[str, Any]]


def all_options() -> dict[str, Any]:
    """Every option name with its default: the run's and each registered family's.

    Examples
    --------
    >>> all_options()["composite_threshold"]
    0.6
    """
    merged = dict(GENERAL_OPTIONS)
    for name in registry.families():
        merged.update(registry.get_family(name).defaults)
    return merged


def family_option_names(family: registry.Family, known: Mapping[str, Any]) -> list[str]:
    """The options ``family`` sees: its declared ones and those it reads (:attr:`Family.reads`), in ``known``'s order.

    Examples
    --------
    >>> family_option_names(registry.get_family("retrieval"), all_options())[:3]
    ['contexts', 'k', 'relevance_level']
    """
    if family.reads is None:
        return list(known)
    wanted = set(family.defaults) | set(family.reads)
    return [name for name in known if name in wanted]


class FamilyOptions(Mapping[str, Any]):
    """A family's checked options in the plan: read-only, and only the names the family declares or reads.

    Reading any other name is a ``KeyError`` naming the family and :attr:`Family.reads`, ``get``
    included: a family cannot depend on an option it does not declare, and no default hides it.
    The options read as attributes too (``options.k``). ``get`` gives its default only for a
    name that is no option of the run at all (``others`` holds every option name): a column role
    that no option maps (a callback metric's ``"policy"``) reads as itself.

    Examples
    --------
    >>> options = FamilyOptions("toy", {"k": [5]}, others={"explain"})
    >>> options["k"], options.k, dict(options)
    ([5], [5], {'k': [5]})
    >>> options.get("policy", "policy")  # no option of the run: a column role named as itself
    'policy'
    >>> options.get("explain")
    Traceback (most recent call last):
    ...
    KeyError: "the toy family reads the option 'explain', which it neither declares nor lists in Family.reads"
    """

    __slots__ = ("_family", "_others", "_values")

    def __init__(self, family: str, values: Mapping[str, Any], others: Iterable[str] = ()) -> None:
        object.__setattr__(self, "_family", family)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_others", frozenset(others))

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(
                f"the {self._family} family reads the option {name!r}, which it neither declares nor lists "
                "in Family.reads"
            ) from None

    def get(self, name: str, default: Any = None) -> Any:  # a name it does not know is an error, not the default
        if name not in self._values and name not in self._others:
            return default
        return self[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as error:
            raise AttributeError(error.args[0]) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a plan's options are read-only")

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"FamilyOptions({self._family!r}, {self._values!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FamilyOptions, (self._family, self._values, self._others))

