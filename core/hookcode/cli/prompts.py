"""The terminal's prompts: the permission prompt and the question prompt (stderr for the
prompt, stdin for the answer), and ``--yes``."""

from __future__ import annotations

import json
import sys
from typing import Any

from hookcode.cli.screen import prompt_active
from hookcode.permission import PermissionRequest, Reply
from hookcode.plugins import hookimpl

__all__ = ["PROMPT_CHOICES", "TERMINAL_PLUGIN", "YES_PLUGIN", "AutoApprove", "TerminalFrontend"]


class AutoApprove:
    """``--yes``: answer every ask with "once". Denies stay denies (they never reach a prompt),
    and a write of a protected path (``metadata["protected"]``) is not approved: it needs a
    person, or a rule naming the path."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        if request.metadata.get("protected"):
            return None
        return Reply("once")


PROMPT_CHOICES = (
    "\\[o] allow once  \\[a] always (this session)  \\[p] always (this project)  "
    "\\[r] reject  \\[f] reject with feedback"
)


#: the names the CLI registers its front ends under
TERMINAL_PLUGIN = "cli_terminal"
YES_PLUGIN = "cli_yes"


class TerminalFrontend:
    """Asks on the terminal (stderr for the prompt, stdin for the answer)."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        from rich.console import Console
        from rich.prompt import Prompt

        console = Console(stderr=True, highlight=False)
        with prompt_active():
            _show_request(console, request)
            try:
                answer = Prompt.ask(
                    PROMPT_CHOICES,
                    choices=["o", "a", "p", "r", "f"],
                    default="o",
                    console=console,
                    show_choices=False,
                )
                if answer == "f":
                    feedback = Prompt.ask(
                        "Feedback for the model", default="", console=console, show_default=False
                    )
                    return Reply("reject", feedback=feedback.strip() or None)
            except (EOFError, KeyboardInterrupt):
                console.print()
                return Reply("reject")
        if answer == "o":
            return Reply("once")
        if answer == "a":
            return Reply("always", scope="session")
        if answer == "p":
            return Reply("always", scope="project")
        return Reply("reject")

    @hookimpl
    def question_prompt(self, request: Any) -> list[list[str]] | None:
        from rich.console import Console
        from rich.markup import escape
        from rich.prompt import Prompt

        console = Console(stderr=True)
        answers: list[list[str]] = []
        with prompt_active():
            try:
                for question in request.questions:
                    # the model's words: escaped, never read as markup (`list[str]`, `[/x]`)
                    header = escape(question.header or "Question")
                    console.print(f"\n[bold]{header}[/]: {escape(question.question)}")
                    for i, option in enumerate(question.options, 1):
                        console.print(
                            f"  {i}. {escape(option.label)}  [dim]{escape(option.description)}[/]"
                        )
                    raw = Prompt.ask(
                        "Answer (numbers separated by commas, or text)", console=console
                    )
                    chosen: list[str] = []
                    for piece in raw.split(","):
                        piece = piece.strip()
                        if piece.isdigit() and 1 <= int(piece) <= len(question.options):
                            chosen.append(question.options[int(piece) - 1].label)
                        elif piece and question.custom:
                            chosen.append(piece)
                    answers.append(chosen)
            except (EOFError, KeyboardInterrupt):
                print(file=sys.stderr)
                return None
        return answers


def _show_request(console: Any, request: PermissionRequest) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax

    tool = request.tool.get("name") or "?"
    console.print(
        f"\n[bold yellow]Permission required:[/] [bold]{escape(request.permission)}[/]"
        f"  [dim](tool {escape(str(tool))}, agent {escape(request.agent)})[/]"
    )
    for pattern in request.patterns:
        console.print(f"  [cyan]{escape(pattern)}[/]")
    metadata = dict(request.metadata or {})
    diff = metadata.pop("diff", None)
    for key, value in metadata.items():
        if value in (None, "", [], {}):
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(text) > 300:
            text = text[:300] + "…"
        console.print(f"  [dim]{escape(str(key))}:[/] {escape(text)}")
    if diff:
        text = str(diff)
        lines = text.splitlines()
        if len(lines) > 200:
            text = "\n".join(lines[:200]) + f"\n… ({len(lines) - 200} more lines)"
        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
