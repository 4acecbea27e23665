"""The exceptions hookcode raises and understands.

::

    HookcodeError                    base of everything below
    ├── ConfigError                  a config file or value is invalid (names the file and key)
    ├── PluginError                  a plugin failed to load (with --strict-plugins) or clashes
    ├── PromptBlocked                a chat_message hook refused the user's message (the run stops)
    └── ToolError                    a tool call failed; its message is what the model reads
        ├── ToolBlocked              a tool_execute_before hook refused the call
        ├── InvalidArguments         the arguments did not validate
        ├── UnknownTool              no tool of that name is available
        ├── ToolTimeout              the call ran past its timeout
        ├── ToolAborted              the session's abort signal fired
        └── PermissionRefused        a permission check said no
            ├── PermissionDenied     a configured rule denies the call (the loop goes on)
            └── PermissionRejected   the user (or a headless run) rejected the call
                                     (the loop stops, unless feedback was given)

A tool body may raise any exception; the pipeline turns it into an error result whose text
is the exception's message. Raise :class:`ToolError` when the message is meant for the model.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "HookcodeError",
    "InvalidArguments",
    "PermissionDenied",
    "PermissionRefused",
    "PermissionRejected",
    "PluginError",
    "PromptBlocked",
    "ToolAborted",
    "ToolBlocked",
    "ToolError",
    "ToolTimeout",
    "UnknownTool",
]


class HookcodeError(Exception):
    """Base class of every hookcode exception."""


class ConfigError(HookcodeError):
    """A config file or value is invalid.

    ``file`` is the file (or environment variable) the bad value came from, ``key`` the dotted
    key path; both are part of the message.
    """

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None):
        self.file = file
        self.key = key
        where = ""
        if file and key:
            where = f"{file}: {key}: "
        elif file:
            where = f"{file}: "
        elif key:
            where = f"{key}: "
        super().__init__(f"{where}{message}")
        self.detail = message


class PluginError(HookcodeError):
    """A plugin failed to load or conflicts with another plugin."""


class PromptBlocked(HookcodeError):
    """Raised by a ``chat_message`` hook to refuse the user's message: it is not sent, and the
    run stops with the reason (a Claude Code ``UserPromptSubmit`` block)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ToolError(HookcodeError):
    """A tool call failed; ``str(error)`` is what the model reads."""


class ToolBlocked(ToolError):
    """Raised by a ``tool_execute_before`` hook to refuse a call; the reason reaches the model."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class InvalidArguments(ToolError):
    """The arguments of a call did not validate against the tool's schema. ``str(error)`` is
    what the model reads (how to fix its call); ``problem``, when given, is what was wrong,
    for a person (``hookcode tools call``)."""

    def __init__(self, message: str, *, problem: str | None = None):
        super().__init__(message)
        self.problem = problem


class UnknownTool(ToolError):
    """The model asked for a tool that is not available. ``name``: the name asked for;
    ``available``: the tools the caller could have called."""

    def __init__(self, message: str, *, name: str = "", available: tuple[str, ...] = ()):
        super().__init__(message)
        self.name = name
        self.available = available


class ToolTimeout(ToolError):
    """The call ran longer than its timeout."""


class ToolAborted(ToolError):
    """The call was aborted (Ctrl-C or the session's abort signal)."""

    def __init__(self, message: str = "Tool execution aborted"):
        super().__init__(message)


class PermissionRefused(ToolError):
    """A permission check refused the call."""


class PermissionDenied(PermissionRefused):
    """A configured rule (or a policy's deny vote) refuses the call. The loop goes on."""

    def __init__(self, message: str, *, rules: list | None = None):
        super().__init__(message)
        self.rules = rules or []


class PermissionRejected(PermissionRefused):
    """The user rejected the call, or nobody could be asked (headless).

    Without ``feedback`` the agent loop stops; with it, the model reads the feedback and goes on.
    """

    def __init__(self, message: str | None = None, *, feedback: str | None = None):
        if message is None:
            if feedback:
                message = (
                    "The user rejected permission to use this specific tool call with the "
                    f"following feedback: {feedback}"
                )
            else:
                message = "The user rejected permission to use this specific tool call."
        super().__init__(message)
        self.feedback = feedback
