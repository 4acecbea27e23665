"""hookcode: a plugin-first framework for AI coding agents.

The public API. Names are imported on first use, so ``import hookcode`` (which every plugin
does) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "AbortSignal",
    "AgentSpec",
    "Attachment",
    "ConfigError",
    "HookcodeError",
    "Host",
    "Outcome",
    "PermissionDenied",
    "PermissionRejected",
    "PermissionRequest",
    "PluginError",
    "Reply",
    "Rule",
    "RunResult",
    "Runtime",
    "SessionLoop",
    "ShellAnalysis",
    "Stash",
    "StashKey",
    "Tool",
    "ToolBlocked",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Vote",
    "__version__",
    "hookimpl",
    "invoke",
    "tool",
]

_WHERE = {
    "AbortSignal": "hookcode.tools",
    "AgentSpec": "hookcode.agents",
    "Attachment": "hookcode.tools",
    "ConfigError": "hookcode.errors",
    "HookcodeError": "hookcode.errors",
    "Host": "hookcode.tools",
    "Outcome": "hookcode.pipeline",
    "PermissionDenied": "hookcode.errors",
    "PermissionRejected": "hookcode.errors",
    "PermissionRequest": "hookcode.permission",
    "PluginError": "hookcode.errors",
    "Reply": "hookcode.permission",
    "Rule": "hookcode.permission",
    "RunResult": "hookcode.session",
    "Runtime": "hookcode.runtime",
    "SessionLoop": "hookcode.session",
    "ShellAnalysis": "hookcode.permission",
    "Stash": "hookcode.stash",
    "StashKey": "hookcode.stash",
    "Tool": "hookcode.tools",
    "ToolBlocked": "hookcode.errors",
    "ToolCall": "hookcode.tools",
    "ToolContext": "hookcode.tools",
    "ToolError": "hookcode.errors",
    "ToolResult": "hookcode.tools",
    "Vote": "hookcode.permission",
    "hookimpl": "hookcode.plugins",
    "invoke": "hookcode.pipeline",
    "__version__": "hookcode.version",
    "tool": "hookcode.tools",
}

if TYPE_CHECKING:
    from hookcode.agents import AgentSpec
    from hookcode.errors import (
        ConfigError,
        HookcodeError,
        PermissionDenied,
        PermissionRejected,
        PluginError,
        ToolBlocked,
        ToolError,
    )
    from hookcode.permission import PermissionRequest, Reply, Rule, ShellAnalysis, Vote
    from hookcode.pipeline import Outcome, invoke
    from hookcode.plugins import hookimpl
    from hookcode.runtime import Runtime
    from hookcode.session import RunResult, SessionLoop
    from hookcode.stash import Stash, StashKey
    from hookcode.tools import (
        AbortSignal,
        Attachment,
        Host,
        Tool,
        ToolCall,
        ToolContext,
        ToolResult,
        tool,
    )
    from hookcode.version import __version__


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'hookcode' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
