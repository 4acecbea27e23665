"""The CLI's front ends, gathered: the prompts (:mod:`hookcode.cli.prompts`), the displays of
a run (:mod:`hookcode.cli.display`), running a turn (:mod:`hookcode.cli.running`) and the chat
(:mod:`hookcode.cli.chat`). Plugins and tests import these names from here."""

from __future__ import annotations

from hookcode.cli.chat import chat
from hookcode.cli.display import JSON_SCHEMA, JsonDisplay, ResultDisplay, TextDisplay, json_line
from hookcode.cli.prompts import (
    PROMPT_CHOICES,
    TERMINAL_PLUGIN,
    YES_PLUGIN,
    AutoApprove,
    TerminalFrontend,
)
from hookcode.cli.running import approval_hint, exit_code, has_terminal, run_cli, run_turn
from hookcode.cli.screen import hung_up

__all__ = [
    "JSON_SCHEMA",
    "PROMPT_CHOICES",
    "TERMINAL_PLUGIN",
    "YES_PLUGIN",
    "AutoApprove",
    "JsonDisplay",
    "ResultDisplay",
    "TerminalFrontend",
    "TextDisplay",
    "approval_hint",
    "chat",
    "exit_code",
    "has_terminal",
    "hung_up",
    "json_line",
    "run_cli",
    "run_turn",
]
