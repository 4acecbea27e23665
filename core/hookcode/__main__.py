"""``python -m hookcode``: the ``hookcode`` command line."""

from hookcode.console import main

if __name__ == "__main__":
    raise SystemExit(main())
