"""The ``ragframe`` command line: argument parsing and printing over the library's functions."""

from ragframe.cli.main import main

__all__ = ["main"]
