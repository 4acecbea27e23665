"""provider_scripted: an offline model for demos, scripts and tests (``scripted/<name>``).

With a script — ``hookcode run --script FILE`` or ``HOOKCODE_SCRIPT=FILE`` — every
``scripted/<name>`` model replays it: a JSON list of assistant turns, each with optional
``text``, ``reasoning`` and ``tool_calls`` (``[{"name": "read", "args": {...}}]``), or a JSON
object mapping agent names to such lists (``"*"`` for any other agent), so that a sub-agent's
child session replays its own turns. Turns stream like a real provider's (text and reasoning
deltas, tool input fragments, usage). One turn is consumed per model request of a session, and
each session keeps its own position, stored with the session (``--continue`` resumes where it
stopped). When the list is exhausted the model answers with a final text and stops. A turn may
also carry ``finish``, ``error`` (+ ``retryable``), ``usage`` and ``delay``: see
:mod:`hookcode.testing.scripted`.

Without a script, ``scripted/demo`` looks around the project with whichever listing tool it is
offered (``list``, ``glob`` or ``read`` of the working directory) and summarises what it saw;
``scripted/echo`` answers with the user's message.
"""

from __future__ import annotations

from typing import Any

from hookcode import hookimpl

__all__ = ["ScriptedProvider"]


def __getattr__(name: str) -> Any:
    # the provider class lives in a submodule so that start-up (`hookcode --help`) does not
    # import the test kit and the provider protocol
    if name == "ScriptedProvider":
        from hookcode_provider_scripted._scripted import ScriptedProvider

        return ScriptedProvider
    raise AttributeError(name)


@hookimpl
def provider(credentials: Any) -> list[Any]:
    from collections.abc import Mapping

    from hookcode_provider_scripted._scripted import ScriptedProvider

    env = getattr(credentials, "env", None)
    return [ScriptedProvider(env if isinstance(env, Mapping) else None)]
