"""The ``hookcode`` console script (and ``python -m hookcode``): :func:`hookcode.cli.main`,
started with Python's cyclic garbage collector paused (:mod:`hookcode.startup`).

It lives outside :mod:`hookcode.cli` because importing that package imports typer: the pause
begins before anything but the standard library is imported.
"""

from __future__ import annotations

from hookcode.startup import pausing

__all__ = ["main"]


def main() -> int:
    """Run the command line; returns its exit code."""
    with pausing():
        from hookcode.cli import main as cli_main

        return cli_main()
