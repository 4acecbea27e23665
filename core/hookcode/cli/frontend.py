"""The CLI's front ends for permission asks and questions: the terminal prompt, and ``--yes``."""

from __future__ import annotations

import sys
from typing import Any

from hookcode.permission import PermissionRequest, Reply
from hookcode.plugins import hookimpl

__all__ = ["AutoApprove", "TerminalFrontend"]


class AutoApprove:
    """``--yes``: answer every ask with "once". Denies stay denies (they never reach a prompt)."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply:
        return Reply("once")


class TerminalFrontend:
    """Asks on the terminal (stderr for the prompt, stdin for the answer)."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        from rich.console import Console
        from rich.prompt import Prompt

        console = Console(stderr=True)
        tool = request.tool.get("name") or "?"
        console.print(
            f"\n[bold yellow]Permission[/] [bold]{request.permission}[/] for tool "
            f"[bold]{tool}[/] (agent {request.agent})"
        )
        for pattern in request.patterns:
            console.print(f"  {pattern}")
        if request.metadata.get("diff"):
            console.print(str(request.metadata["diff"])[:4000])
        try:
            answer = Prompt.ask(
                "Allow? [o]nce, [a]lways (this session), [p]roject-always, [r]eject",
                choices=["o", "a", "p", "r"],
                default="o",
                console=console,
            )
        except (EOFError, KeyboardInterrupt):
            return Reply("reject")
        if answer == "o":
            return Reply("once")
        if answer == "a":
            return Reply("always", scope="session")
        if answer == "p":
            return Reply("always", scope="project")
        feedback = Prompt.ask(
            "Feedback for the model (empty for none)", default="", console=console
        )
        return Reply("reject", feedback=feedback or None)

    @hookimpl
    def question_prompt(self, request: Any) -> list[list[str]] | None:
        from rich.console import Console
        from rich.prompt import Prompt

        console = Console(stderr=True)
        answers: list[list[str]] = []
        try:
            for question in request.questions:
                console.print(f"\n[bold]{question.header or 'Question'}[/]: {question.question}")
                for i, option in enumerate(question.options, 1):
                    console.print(f"  {i}. {option.label}  [dim]{option.description}[/]")
                raw = Prompt.ask("Answer (numbers separated by commas, or text)", console=console)
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
