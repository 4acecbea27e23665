"""The displays of a run: text as it streams with a spinner per running tool
(:class:`TextDisplay`), JSON lines (:class:`JsonDisplay`) or the result object alone
(:class:`ResultDisplay`).

Output discipline: the model's text goes to stdout; tool activity, usage and errors go to
stderr.
"""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any

from hookcode.cli import screen
from hookcode.cli.live import LiveStatus
from hookcode.cli.markdown import MarkdownStream
from hookcode.cli.screen import write as _write

if TYPE_CHECKING:
    from hookcode.session import RunResult

__all__ = ["JSON_SCHEMA", "JsonDisplay", "ResultDisplay", "TextDisplay", "json_line"]


def _summary(tool: str, args: Any) -> str:
    """``read a.txt``: the tool and its first string argument, shortened."""
    if isinstance(args, dict):
        for key in ("command", "filePath", "file_path", "path", "pattern", "url", "query"):
            value = args.get(key)
            if isinstance(value, str) and value:
                break
        else:
            value = next((v for v in args.values() if isinstance(v, str) and v), "")
        value = " ".join(str(value).split())
        if len(value) > 70:
            value = value[:69] + "…"
        return f"{tool} {value}".rstrip()
    return tool


class TextDisplay:
    """Text on stdout as it streams; tool calls on stderr; usage and cost at the end. When
    stderr is a terminal, a spinner with the elapsed time shows while the model is asked and
    while tools run, with the last lines of a running tool's output (:mod:`hookcode.cli.live`;
    :meth:`bus_event` receives the ``tool.updated`` events)."""

    def __init__(self, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> None:
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        self.tty = self.err.isatty()
        self.at_line_start = True
        self.running: dict[str, str] = {}
        self.console: Any = None
        self.live: LiveStatus | None = None
        if self.tty:
            from rich.console import Console

            self.console = Console(file=self.err, highlight=False)
            self.live = LiveStatus(self.console)
        #: the model's text as Markdown, when stdout is a terminal (else as it comes)
        self.markdown: MarkdownStream | None = None
        if self.out.isatty():
            from rich.console import Console

            self.markdown = MarkdownStream(Console(file=self.out, highlight=False))
        screen.set_display(self)

    # the event callback of the loop
    def event(self, kind: str, data: dict[str, Any]) -> None:
        handler = getattr(self, f"on_{kind}", None)
        if handler is not None:
            handler(data)

    def _end_text(self) -> None:
        """The model's message is over (a tool starts, a line of ours follows): its Markdown is
        rendered for good."""
        if self.markdown is not None:
            self.markdown.end()

    def _line(self, text: str, style: str | None = None) -> None:
        self._end_text()
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if self.console is not None and not screen.prompting.is_set():
            from rich.markup import escape

            self.console.print(f"[{style}]{escape(text)}[/]" if style else escape(text))
        else:
            _write(self.err, text + "\n")

    def on_session(self, data: dict[str, Any]) -> None:
        if data.get("resumed"):
            self._line(f"session {data['session_id']} (continued)", "dim")

    def on_recovered(self, data: dict[str, Any]) -> None:
        self._line(
            f"{data['parts']} tool call(s) left running by an earlier process were marked aborted",
            "yellow",
        )

    def on_step_start(self, data: dict[str, Any]) -> None:
        if self.live is not None:
            self.live.waiting(True)
            self._spin()

    def on_text(self, data: dict[str, Any]) -> None:
        text = data["text"]
        if self.live is not None:
            self.live.waiting(False)
        self._stop_spinner()
        if self.markdown is not None and not screen.prompting.is_set():
            self.markdown.feed(text)
            return
        _write(self.out, text)
        self.at_line_start = text.endswith("\n")

    def on_step(self, data: dict[str, Any]) -> None:
        self._end_text()

    def on_reasoning(self, data: dict[str, Any]) -> None:
        return  # reasoning is stored, not shown

    def on_tool(self, data: dict[str, Any]) -> None:
        if data["status"] != "running":
            return
        label = _summary(data["tool"], data.get("input"))
        self.running[data["call_id"]] = label
        self._end_text()
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if self.live is not None:
            self.live.waiting(False)
            self.live.tool_started(data["call_id"], label)
            self._spin()
        else:
            self._line(f"-> {label}")

    def on_tool_result(self, data: dict[str, Any]) -> None:
        label = self.running.pop(data["call_id"], data["tool"])
        if self.live is not None:
            self.live.tool_ended(data["call_id"])
            if not self.running:
                self.live.waiting(True)  # the tools' results go back to the model
            self._stop_spinner()  # the line below goes above the spinner
        if data["ok"]:
            title = data.get("title") or ""
            text = f"✓ {label}" + (f"  ({title})" if title and title not in label else "")
            self._line(text, "green")
        else:
            error = (data.get("error") or "").strip().splitlines()
            # the model reads "The user rejected ..."; the person may be the one who said no,
            # or nobody was there to ask (the run's end says how to approve)
            reason = "not approved" if data.get("refused") else (error[0] if error else "failed")
            self._line(f"✗ {label}: {reason}", "red")
        self._spin()

    def bus_event(self, event: Any) -> None:
        """An event of the runtime's bus: ``tool.updated`` carries a running tool's output so
        far, whose last lines show under the spinner: its newest text (bash's
        ``metadata["tail"]``) or else what it has of its output (``metadata["output"]``, the
        first 30,000 characters for bash)."""
        if event.type != "tool.updated" or self.live is None:
            return
        metadata = event.properties.get("metadata") or {}
        output = metadata.get("tail") or metadata.get("output")
        if isinstance(output, str) and output:
            self.live.tool_output(str(event.properties.get("call_id")), output)

    def on_retry(self, data: dict[str, Any]) -> None:
        self._line(
            f"model error ({data['error']}); retry {data['attempt']} in {data['delay']:g} s",
            "yellow",
        )

    def on_stop_refused(self, data: dict[str, Any]) -> None:
        first = (data.get("text") or "").strip().splitlines()
        self._line(f"a stop hook kept the agent going: {first[0] if first else ''}", "yellow")

    def on_compaction(self, data: dict[str, Any]) -> None:
        if data["status"] == "started":
            self._line("compacting the conversation (it nears the model's context window)", "dim")

    def _spin(self) -> None:
        if self.live is None:
            return
        if screen.prompting.is_set():
            self._stop_spinner()
            return
        self.live.show()

    def pause(self) -> None:
        """A prompt is on the terminal: the spinner stops."""
        self._end_text()
        self._stop_spinner()

    def resume(self) -> None:
        """The prompt is answered: the spinner comes back for the tools still running."""
        self._spin()

    def _stop_spinner(self) -> None:
        if self.live is not None:
            self.live.hide()

    def close(self) -> None:
        self._stop_spinner()
        self._end_text()
        if screen.current_display() is self:
            screen.set_display(None)

    def finish(self, result: RunResult | None) -> None:
        if self.live is not None:
            self.live.waiting(False)
        self._stop_spinner()
        self._end_text()
        if not self.at_line_start:
            _write(self.out, "\n")
            self.at_line_start = True
        if result is None:
            return
        u = result.usage
        cost = f" · cost ${u.cost:.4f}" if u.cost else ""
        self._line(
            f"tokens in {u.input:,} out {u.output:,}{cost} · {result.steps} step(s) · "
            f"session {result.session_id}",
            "dim",
        )


#: the version of the objects ``hookcode run --format json`` / ``json-result`` prints (each
#: carries it as ``"schema"``); raised when a field is removed or changes meaning, not when
#: one is added. docs/reference/json-output.md lists every event type and its fields.
JSON_SCHEMA = 1


def json_line(kind: str, data: dict[str, Any]) -> str:
    """One object of the JSON output: ``{"type": kind, "schema": JSON_SCHEMA, **data}``."""
    return json.dumps(
        {"type": kind, "schema": JSON_SCHEMA, **data}, default=str, ensure_ascii=False
    )


class JsonDisplay:
    """``--format json``: one JSON object per line per event, ending with the ``result``
    object."""

    def __init__(self, stdout: IO[str] | None = None) -> None:
        self.out = stdout or sys.stdout

    def event(self, kind: str, data: dict[str, Any]) -> None:
        _write(self.out, json_line(kind, data) + "\n")

    def close(self) -> None:
        pass

    def finish(self, result: RunResult | None) -> None:
        if result is not None:
            self.event("result", {k: v for k, v in result.to_dict().items() if k != "type"})


class ResultDisplay(JsonDisplay):
    """``--format json-result``: nothing while the run goes, then the ``result`` object alone
    (as Claude Code's ``--output-format json``)."""

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "result":
            super().event(kind, data)
