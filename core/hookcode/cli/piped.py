"""Text piped into ``hookcode run``: ``git diff | hookcode run "review this"``.

- Only stdin (``hookcode run < prompt.txt``): the text is the message, as it is.
- A message and piped text: the message, then the text in a ``<stdin>`` block, so the model
  can tell the request from the material.
- Nothing arrives on a stdin that stays open (a script or CI job that never closes it): after
  :data:`WAIT_ENV` seconds (default 3) the run goes on without it and says so; once the first
  byte has come, it is read to the end however slow the writer.
- More than :data:`LIMIT` bytes, or bytes that are not UTF-8 text: an error naming the limit
  (the model could not take it whole anyway; the agent can read a file instead).
"""

from __future__ import annotations

import os
import select
from collections.abc import Mapping
from typing import IO

from hookcode.errors import HookcodeError

__all__ = ["LIMIT", "WAIT_ENV", "compose", "read_piped"]

#: the most piped bytes a run takes (about 128k tokens)
LIMIT = 512 * 1024
#: seconds to wait for the first piped byte when a message was given
WAIT_ENV = "HOOKCODE_STDIN_WAIT"
DEFAULT_WAIT = 3.0


def _wait(env: Mapping[str, str]) -> float:
    raw = env.get(WAIT_ENV, "")
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_WAIT
    except ValueError:
        raise HookcodeError(f"{WAIT_ENV}={raw!r}: expected a number of seconds") from None


def _fileno(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: an in-memory stream
        return None


def read_piped(
    stream: IO[str], *, wait: bool, env: Mapping[str, str] = os.environ
) -> tuple[str, bool]:
    """What was piped on ``stream`` (not a terminal): (text, whether the wait gave up). With
    ``wait``, gives up when no byte (nor the end of input) came within the configured wait."""
    fd = _fileno(stream)
    if wait and fd is not None:
        ready, _, _ = select.select([fd], [], [], _wait(env))
        if not ready:
            return "", True
    raw = getattr(stream, "buffer", None)
    if raw is None:  # a text stream of its own (tests, embedding): no bytes to check
        text = stream.read(LIMIT + 1)
        data = text.encode("utf-8", "surrogatepass")
    else:
        data = raw.read(LIMIT + 1)
    if len(data) > LIMIT:
        raise HookcodeError(
            f"stdin is larger than {LIMIT // 1024} KiB, too much to send to the model: write it "
            "to a file and ask the agent to read the part it needs"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookcodeError(
            f"stdin is not UTF-8 text (byte {exc.start}): pipe text, or save it to a file "
            "and name the file in the message"
        ) from None
    if "\x00" in text:
        raise HookcodeError("stdin is binary (it holds NUL bytes): pipe text")
    return text, False


def compose(message: str, piped: str) -> str:
    """The message the agent gets from MESSAGE and the piped text (either may be empty)."""
    if not piped.strip():
        return message
    if not message.strip():
        return piped
    body = piped if piped.endswith("\n") else piped + "\n"
    return f"{message}\n\n<stdin>\n{body}</stdin>"
