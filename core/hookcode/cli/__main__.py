"""``python -m hookcode.cli``: the ``hookcode`` command line."""

from hookcode.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
