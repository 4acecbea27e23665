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


#: the permission prompt's keys: key -> (label, reply kind, scope)
PROMPT_KEYS: dict[str, tuple[str, str, str | None]] = {
    "y": ("yes, once", "once", None),
    "a": ("always, this session", "always", "session"),
    "p": ("always, this project", "always", "project"),
    "n": ("no", "reject", None),
    "f": ("no, and tell the model why", "reject", None),
}
PROMPT_CHOICES = "  ".join(f"[{key}] {label}" for key, (label, _, _) in PROMPT_KEYS.items())

#: request metadata for the policies (``shell_analyze``'s), not for the person asked
POLICY_FIELDS = frozenset({"opaque", "reasons", "read_only"})
#: metadata shown in their own way
SHOWN_APART = frozenset({"command", "description", "diff", "protected"})

#: the names the CLI registers its front ends under
TERMINAL_PLUGIN = "cli_terminal"
YES_PLUGIN = "cli_yes"


class TerminalFrontend:
    """Asks on the terminal (stderr for the prompt, stdin for the answer): a single key of
    :data:`PROMPT_KEYS`; Enter alone answers nothing, Ctrl-C or Ctrl-D is "no"."""

    @hookimpl
    def permission_prompt(self, request: PermissionRequest) -> Reply | None:
        from rich.console import Console
        from rich.prompt import Prompt

        console = Console(stderr=True, highlight=False)
        with prompt_active():
            _show_request(console, request)
            console.print(PROMPT_CHOICES, style="bold", markup=False)
            key = read_key(console, "Allow? ", set(PROMPT_KEYS))
            if key is None:
                console.print("no", markup=False)
                return Reply("reject")
            label, kind, scope = PROMPT_KEYS[key]
            console.print(label, markup=False)
            if key == "f":
                try:
                    feedback = Prompt.ask(
                        "Feedback for the model", default="", console=console, show_default=False
                    )
                except (EOFError, KeyboardInterrupt):
                    console.print()
                    feedback = ""
                return Reply("reject", feedback=feedback.strip() or None)
        if scope == "project":
            return Reply("always", scope="project")
        if scope == "session":
            return Reply("always", scope="session")
        return Reply(kind)  # type: ignore[arg-type]

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


def read_key(console: Any, prompt: str, keys: set[str]) -> str | None:
    """One key of ``keys`` typed on the terminal (stdin), without Enter; other keys (Enter
    among them) are ignored with a reminder. None for Ctrl-C, Ctrl-D or a closed terminal.
    Without a terminal, a line is read and its first letter taken."""
    import os

    console.print(prompt, end="", markup=False)
    fd = sys.stdin.fileno()
    try:
        import termios

        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        line = sys.stdin.readline().strip().lower()
        return line[:1] if line[:1] in keys else None
    raw = list(saved)
    raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)  # lflags: a key at a time
    raw[6] = list(saved[6])
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
    termios.tcsetattr(fd, termios.TCSANOW, raw)
    try:
        while True:
            try:
                data = os.read(fd, 32)
            except OSError:
                return None
            if not data or data[:1] in (b"\x03", b"\x04"):  # gone, Ctrl-C, Ctrl-D
                return None
            key = data[:1].decode(errors="replace").lower()
            if key in keys:
                return key
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            console.print(
                f"(press {'/'.join(sorted(keys, key=list(PROMPT_KEYS).index))}) ",
                end="",
                markup=False,
            )
            termios.tcsetattr(fd, termios.TCSANOW, raw)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
        console.print()


def _show_request(console: Any, request: PermissionRequest) -> None:
    """What is asked, once: the command (or the patterns), its description, the diff, and what
    "always" would remember; the policies' fields (``opaque``...) are not shown."""
    from rich.syntax import Syntax
    from rich.text import Text

    metadata = dict(request.metadata or {})
    tool = str(request.tool.get("name") or "?")
    title = Text("\nPermission required: ", style="bold yellow")
    title.append(request.permission, style="bold")
    title.append(f"  (tool {tool}, agent {request.agent})", style="dim")
    console.print(title)
    command = metadata.get("command")
    if isinstance(command, str) and command:
        console.print(Text("  $ ") + Text(command, style="cyan"))
    else:
        for pattern in request.patterns:
            console.print(Text("  ") + Text(pattern, style="cyan"))
    description = metadata.get("description")
    if isinstance(description, str) and description.strip():
        console.print(Text("  " + " ".join(description.split()), style="dim"))
    if metadata.get("opaque") and metadata.get("reasons"):
        reasons = "; ".join(str(r) for r in metadata["reasons"])
        console.print(Text(f"  asked because: {reasons}", style="dim"))
    for key, value in metadata.items():
        if key in POLICY_FIELDS or key in SHOWN_APART or isinstance(value, bool):
            continue
        if value in (None, "", [], {}) or value in request.patterns:
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        if len(text) > 300:
            text = text[:300] + "…"
        console.print(Text(f"  {key}: ", style="dim") + Text(text))
    protected = metadata.get("protected")
    if protected:
        paths = ", ".join(protected) if isinstance(protected, dict) else str(protected)
        console.print(Text(f"  protected path: {paths}", style="yellow"))
    diff = metadata.get("diff")
    if diff:
        text = str(diff)
        lines = text.splitlines()
        if len(lines) > 200:
            text = "\n".join(lines[:200]) + f"\n… ({len(lines) - 200} more lines)"
        console.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
    console.print(Text("  " + always_note(request), style="dim"))


def always_note(request: PermissionRequest) -> str:
    """Which pattern(s) an "always" reply remembers (for ``request.permission``)."""
    remembered = "  ".join(request.always) or "*"
    return f'"always" remembers: {request.permission} {remembered}'
