"""``python -m hookcode.cli``: the ``hookcode`` command line (``python -m hookcode`` pauses the
collector before importing typer as well: :mod:`hookcode.console`)."""

from hookcode.cli import main
from hookcode.startup import pausing

if __name__ == "__main__":
    with pausing():
        raise SystemExit(main())
