"""How ``--help`` names the values options and arguments take: ``--model MODEL``,
``--format [text|json|json-result]``, ``[MESSAGE]...``; a flag takes none. Typer would show the
Python annotation (``<str>``, ``<bool>``, ``<list[str]>``), which means nothing to a person.

:class:`HookcodeGroup` is the root command's class: before it runs it gives the parameters of
the commands its arguments name (core's and the plugins') a metavar in this style, unless they
declared one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

__all__ = ["HookcodeGroup", "tidy_params"]


class _Option(TyperOption):
    """An option whose help shows its metavar, and nothing for a flag."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return self.metavar


class _Argument(TyperArgument):
    """An argument whose help shows its metavar (the name column already does)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def _metavar(param: TyperOption | TyperArgument) -> str:
    """``[a|b]`` for a choice, else the parameter's name in capitals (``MODEL``, ``MESSAGE``;
    the usage line adds ``...`` to an argument that takes several)."""
    descriptor = getattr(param, "type_descriptor", None)
    choices = getattr(descriptor, "choices", None) if descriptor is not None else None
    if descriptor is not None and descriptor.is_choice and choices:
        values = [str(getattr(c, "value", c)) for c in choices]
        name = "[" + "|".join(values) + "]"
    else:
        name = (param.name or "value").upper()
    return name


def tidy_params(command: Any, help_names: list[str]) -> None:
    """Give ``command``'s parameters (its help option too, which click makes on first use)
    the help style above; once. ``help_names``: the help option's names (the root's
    ``context_settings``; a command's own settings win)."""
    if getattr(command, "_hookcode_tidied", False):
        return
    command._hookcode_tidied = True
    names = command.context_settings.get("help_option_names", help_names)
    help_option = command.get_help_option(typer.Context(command, help_option_names=names))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if type(param) is TyperOption:
            if param.metavar is None and not (param.is_flag or param.count):
                param.metavar = _metavar(param)
            param.__class__ = _Option
        elif type(param) is TyperArgument:
            if param.metavar is None:
                param.metavar = _metavar(param)
            param.__class__ = _Argument


class HookcodeGroup(TyperGroup):
    """The root command: before it runs, tidies its parameters and those of each command the
    arguments name (the one whose help or usage may be shown), not the dozens of others."""

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        names = self.context_settings.get("help_option_names", ["--help"])
        tidy_params(self, names)
        command: Any = self
        for token in sys.argv[1:] if args is None else args:
            sub = getattr(command, "commands", {}).get(token)
            if sub is not None:
                tidy_params(sub, names)
                command = sub
        return super().main(args, *rest, **kwargs)
