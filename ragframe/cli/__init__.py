"""The ``ragframe`` command line: argument parsing and printing over the library's functions.

One module per command (``demo``, ``eval``, ``trec``, ``summary``, ``compare``, ``gate``),
each with ``add_parser(sub)`` and ``run(args)``; :mod:`ragframe.cli.main` builds the parser
and maps errors to exit codes; :mod:`ragframe.cli.args` holds the shared argument types and
flags; :mod:`ragframe.cli.format` renders result frames; :mod:`ragframe.cli.inputs` reads
the scored frames the commands take (:func:`ragframe.read_scores`).
"""

from ragframe.cli.main import main

__all__ = ["main"]
