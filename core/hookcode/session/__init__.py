"""The agent loop, in parts by what each owns.

- :mod:`hookcode.session.loop`: :class:`SessionLoop` and :func:`run_session`: the run, the
  steps, the retries and the tool calls;
- :mod:`hookcode.session.context`: the system prompt, the request parameters, compaction and
  pruning;
- :mod:`hookcode.session.stream`: one reply streamed into a message;
- :mod:`hookcode.session.history`: the messages, in memory and in the store;
- :mod:`hookcode.session.model_choice`: which model a session runs on;
- :mod:`hookcode.session.result`: what a run reports (:class:`RunResult`).

Import the names from here (``from hookcode.session import SessionLoop``); the submodules
import each other directly, never this package.
"""

from __future__ import annotations

from hookcode.session.context import DEFAULT_PROMPT, INSTRUCTION_FILES
from hookcode.session.history import ABORTED, UserMessage, load_messages
from hookcode.session.loop import (
    CUT_OFF,
    RETRY_ATTEMPTS,
    RETRY_BASE,
    RETRY_MAX_DELAY,
    SessionLoop,
    run_session,
)
from hookcode.session.model_choice import NO_MODEL_HINT, resolve_model
from hookcode.session.result import EventCallback, RunResult
from hookcode.session.stream import SAVE_INTERVAL

__all__ = [
    "ABORTED",
    "CUT_OFF",
    "DEFAULT_PROMPT",
    "INSTRUCTION_FILES",
    "NO_MODEL_HINT",
    "RETRY_ATTEMPTS",
    "RETRY_BASE",
    "RETRY_MAX_DELAY",
    "SAVE_INTERVAL",
    "EventCallback",
    "RunResult",
    "SessionLoop",
    "UserMessage",
    "load_messages",
    "resolve_model",
    "run_session",
]
