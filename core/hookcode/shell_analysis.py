"""What a shell command runs, as the ``shell_analyze`` hook reports it (policy_shell fills it;
:mod:`hookcode.shell` plans the permission requests from it). Re-exported by
:mod:`hookcode.permission`, where plugins import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ShellAnalysis"]


@dataclass
class ShellAnalysis:
    """What a shell command runs, as ``shell_analyze`` reports it."""

    commands: list[str] = field(default_factory=list)  # the simple commands' texts
    always: list[str] = field(default_factory=list)  # "always" prefixes (``git log *``)
    outside_dirs: list[str] = field(default_factory=list)  # directories outside the project
    opaque: bool = False  # something could not be seen through
    reasons: list[str] = field(default_factory=list)  # why it is opaque
    #: files whose contents a command shows or copies (``DIR/**``: read recursively)
    reads: list[str] = field(default_factory=list)
    #: files a command creates, changes or deletes (``DIR/**``: recursively)
    writes: list[str] = field(default_factory=list)
    #: the patterns of ``commands`` proven read-only (the default rules allow only those)
    read_only: list[str] = field(default_factory=list)

    def request_metadata(self) -> dict[str, Any]:
        """What the ``bash`` permission request carries for the policies: whether the command
        is opaque and why, and which of its patterns are read-only."""
        return {
            "opaque": self.opaque,
            "reasons": list(self.reasons),
            "read_only": list(self.read_only),
        }
