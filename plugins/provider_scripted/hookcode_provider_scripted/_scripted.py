"""The scripted provider itself (imported when the provider hook runs, not at start-up)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from hookcode.providers import ModelInfo, ModelRequest
from hookcode.testing import (
    ScriptedModel,
    ScriptError,
    ToolCallSpec,
    Turn,
    parse_script,
)

__all__ = ["SCRIPT_ENV", "ScriptedProvider"]

SCRIPT_ENV = "HOOKCODE_SCRIPT"
#: the listing tools the demo prefers, with the arguments it calls them with
LOOKS = (("list", {}), ("glob", {"pattern": "*"}), ("read", {"filePath": "."}))


class ScriptedProvider(ScriptedModel):
    """The ``scripted`` provider: replays the script file, else runs the demo."""

    name = "Scripted (offline)"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(id="scripted", per_session=True)
        self.env = os.environ if env is None else env
        self._loaded: tuple[str, float, int] | None = None  # path, mtime, size

    @property
    def script_path(self) -> Path | None:
        value = self.env.get(SCRIPT_ENV, "")
        return Path(value).expanduser() if value else None

    def models(self) -> list[ModelInfo]:
        return [
            ModelInfo(id="demo", name="Offline demo: looks around, then summarises"),
            ModelInfo(id="echo", name="Offline echo"),
        ]

    def _load(self, path: Path) -> None:
        try:
            stat = path.stat()
            key = (str(path), stat.st_mtime, stat.st_size)
            if self._loaded == key:
                return
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ScriptError(f"script {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptError(f"script {path}: cannot read it: {exc}") from None
        except ValueError as exc:
            raise ScriptError(f"script {path}: not valid JSON: {exc}") from None
        script = parse_script(data, where=f"script {path}")
        self.set_turns(script)
        self._loaded = key

    def next_turn(self, request: ModelRequest) -> Turn:
        path = self.script_path
        if path is not None:
            self._load(path)
            return super().next_turn(request)
        if request.model == "echo":
            return Turn(text=_last_user_text(request))
        if request.model != "demo":
            raise ScriptError(
                f"scripted/{request.model} needs a script: pass --script FILE or set "
                f"{SCRIPT_ENV} (scripted/demo and scripted/echo work without one)"
            )
        return _demo_turn(request)


def _demo_turn(request: ModelRequest) -> Turn:
    user = _last_user_text(request)
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
