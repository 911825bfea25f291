"""Optional dependencies: pyproject.toml's extras, and the one guard that imports them.

Every optional import of the package goes through :func:`require`, so a missing module
is always the same :class:`~ragframe.exceptions.MissingDependencyError`: what needs it,
the package, and the extra that installs it (``pip install 'ragframe[report]'``).
:data:`EXTRAS` restates ``[project.optional-dependencies]`` (a test keeps the two equal).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ragframe.exceptions import MissingDependencyError

__all__ = ["EXTRAS", "require"]

#: The extras of pyproject.toml (``test`` aside) and the modules each one installs, by import name.
EXTRAS: dict[str, tuple[str, ...]] = {
    "pandas": ("pandas",),
    "judge": ("httpx",),
    "cli": ("tqdm", "tomli"),
    "plot": ("matplotlib",),
    "report": ("matplotlib", "jinja2"),
    "ray": ("ray", "aiohttp", "grpc"),
    "bench": ("pytrec_eval", "ranx"),
    "traces": ("opentelemetry", "google"),
}

#: How a message names a module's package where it differs from the import name.
_PACKAGES = {
    "ray": "ray[data]",
    "grpc": "grpcio",
    "pytrec_eval": "pytrec-eval-terrier",
    "opentelemetry": "opentelemetry-proto",
    "google": "protobuf",
}


def require(extra: str, module: str, *, what: str | None = None, note: str = "") -> ModuleType:
    """Import ``module``, or raise a MissingDependencyError naming the package, ``extra`` and what needs it.

    Parameters
    ----------
    extra : str
        The extra of pyproject.toml that installs ``module`` (a key of :data:`EXTRAS`).
    module : str
        The module to import (``"matplotlib.figure"``, ``"ray.data"``); its top-level
        package must be one the extra installs.
    what : str, optional
        What needs the module, where it is not the public function being called (that one
        the error names anyway, as every error's prefix): ``"reading an OTLP protobuf file"``.
    note : str, default ""
        Appended to the message (another way to do without the module).

    Returns
    -------
    module
        The imported ``module``.

    Raises
    ------
    MissingDependencyError
        The module cannot be imported (a subclass of ImportError); the message reads
        ``"{package} is not installed: pip install 'ragframe[{extra}]'"`` (``"{what} needs
        {package}: ..."`` with ``what``), after the name of the public function called.
    ValueError
        ``extra`` is not an extra, or does not install ``module`` (a mistake in ragframe).

    Examples
    --------
    >>> require("plot", "matplotlib.figure").__name__
    'matplotlib.figure'
    >>> from unittest import mock
    >>> with mock.patch.dict("sys.modules", {"jinja2": None}):  # as if jinja2 were not installed
    ...     require("report", "jinja2")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.MissingDependencyError: jinja2 is not installed: pip install 'ragframe[report]'
    """
    package = module.partition(".")[0]
    if package not in EXTRAS.get(extra, ()):
        raise ValueError(f"require: the extra {extra!r} does not install {package!r} (the extras: {EXTRAS})")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = _PACKAGES.get(package, package)
        need = f"{what} needs {name}" if what else f"{name} is not installed"
        message = f"{need}: pip install 'ragframe[{extra}]'"
        raise MissingDependencyError(f"{message} {note}" if note else message) from exc
