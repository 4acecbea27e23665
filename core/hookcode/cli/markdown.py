"""The model's text rendered as Markdown as it streams (stdout on a terminal): headings, lists,
tables, code blocks with highlighting. The text is only ever read as Markdown, never as Rich
markup (``[/etc/hosts]`` stays as written).

Finished blocks (up to the last blank line outside a code fence) are printed once and stay;
only the block still being written is re-rendered in a ``Live`` region, so a long answer costs
linear time and never scrolls a live region off the screen."""

from __future__ import annotations

from typing import Any

__all__ = ["CODE_THEME", "MarkdownStream"]

#: the Pygments theme of code blocks
CODE_THEME = "monokai"
#: how often the block being written is re-rendered
REFRESH_PER_SECOND = 12


def _markdown(text: str) -> Any:
    from rich.markdown import Markdown

    return Markdown(text, code_theme=CODE_THEME, hyperlinks=False)


def split_done(text: str) -> int:
    """Where the finished blocks of ``text`` end: after its last blank line outside a code
    fence (0: nothing is finished)."""
    done = 0
    fenced = False
    position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not stripped and not fenced and line.endswith("\n") and position < len(text):
            done = position
    return done


class MarkdownStream:
    """One message of the model, rendered as it arrives; :meth:`end` when it is complete.
    The live block is rendered by Live's refresh thread (:data:`REFRESH_PER_SECOND`), from
    the text at that moment: feeding text costs no rendering."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.pending = ""  # the text not yet printed for good
        self.live: Any = None

    def __rich__(self) -> Any:
        return _markdown(self.pending)

    def feed(self, text: str) -> None:
        self.pending += text
        done = split_done(self.pending)
        if done:
            finished, self.pending = self.pending[:done], self.pending[done:]
            if finished.strip():
                self.console.print(_markdown(finished))  # above the live block, for good
        if self.live is None and self.pending.strip():
            from rich.live import Live

            self.live = Live(
                self,
                console=self.console,
                refresh_per_second=REFRESH_PER_SECOND,
                vertical_overflow="visible",
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start(refresh=True)

    def end(self) -> None:
        """Print what is left for good; the next text starts a new message."""
        live, self.live = self.live, None
        if live is not None:
            live.stop()  # its last rendering of the whole block stays
        elif self.pending.strip():
            self.console.print(_markdown(self.pending))
        self.pending = ""
