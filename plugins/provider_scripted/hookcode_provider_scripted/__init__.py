"""provider_scripted: an offline model for demos and smoke tests.

``scripted/demo`` looks around the project with whichever listing tool it is offered
(``list``, ``glob`` or ``read`` of the working directory), then summarises what it saw.
``scripted/echo`` answers with the user's message. Scripts for tests use
:class:`hookcode.testing.ScriptedModel` directly.
"""

from __future__ import annotations

from typing import Any

from hookcode import hookimpl
from hookcode.providers import ModelInfo, ModelRequest
from hookcode.testing.scripted import ScriptedModel, ToolCallSpec, Turn

#: the listing tools the demo prefers, with the arguments it calls them with
LOOKS = (("list", {}), ("glob", {"pattern": "*"}), ("read", {"filePath": "."}))


class ScriptedProvider(ScriptedModel):
    """The ``scripted`` provider: its turns are computed from the request, so it never runs out."""

    name = "Scripted (offline)"

    def __init__(self) -> None:
        super().__init__(id="scripted")

    def models(self) -> list[ModelInfo]:
        return [
            ModelInfo(id="demo", name="Offline demo: looks around, then summarises"),
            ModelInfo(id="echo", name="Offline echo"),
        ]

    def next_turn(self, request: ModelRequest) -> Turn:
        user = _last_user_text(request)
        if request.model == "echo":
            return Turn(text=user)
        results = [
            block
            for message in request.messages
            if message.role == "tool"
            for block in message.content
            if block.get("type") == "tool_result"
        ]
        if results:
            output = str(results[-1].get("output", ""))
            lines = [line for line in output.splitlines() if line.strip()]
            shown = "\n".join(f"  {line}" for line in lines[:20])
            more = f"\n  ... and {len(lines) - 20} more lines" if len(lines) > 20 else ""
            status = "failed" if results[-1].get("is_error") else "returned"
            return Turn(
                text=(
                    f"You asked: {user}\n\nI looked at the project; the tool {status}:\n{shown}{more}"
                    "\n\nThis is hookcode's offline demo model. Configure a real model with "
                    "--model anthropic/<model> (ANTHROPIC_API_KEY) to get real work done."
                )
            )
        offered = {tool["name"] for tool in request.tools}
        for name, args in LOOKS:
            if name in offered:
                return Turn(
                    text="Let me look around the project first.",
                    tool_calls=[ToolCallSpec(name, dict(args))],
                )
        return Turn(
            text=(
                f"You asked: {user}\n\nNo listing tool is installed, so I cannot look around. "
                "This is hookcode's offline demo model; install the built-in tools and configure a "
                "real model (--model anthropic/<model>)."
            )
        )


def _last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            texts = [b.get("text", "") for b in message.content if b.get("type") == "text"]
            return " ".join(texts).strip()
    return ""


@hookimpl
def provider() -> list[Any]:
    return [ScriptedProvider()]
