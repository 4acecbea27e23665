"""The ``hookcode`` command line (typer).

Global options go before the command: ``hookcode [-C DIR] [--strict-plugins] COMMAND ...``.
Plugins may add commands through the ``cli(app)`` hook; their commands end with :func:`fail`
(a one-line error, exit code 1) and print JSON with :func:`print_json`, as core's commands do.
Exit codes: 0 ok; 1 failed, refused, invalid input or invalid config; 2 for argument parsing
errors only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer.main

from hookcode.cli.app import build_app, parse_globals, plain_help
from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

__all__ = ["fail", "main", "print_json"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    options = parse_globals(args)
    app = build_app(options)
    try:
        # typer's own `app(...)` is get_command(app)(...): the same, with the help escaped
        command = plain_help(typer.main.get_command(app))
        command(args=args, prog_name="hookcode", standalone_mode=True)
    except HookcodeError as exc:  # one a command did not catch (the data directory, the store)
        print(f"hookcode: error: {exc}", file=sys.stderr)
        return 1
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
