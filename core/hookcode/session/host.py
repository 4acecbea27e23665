"""The runtime as the session loop sees it (:class:`SessionHost`).

:class:`hookcode.runtime.Runtime` is one, structurally (pyright checks it where a runtime is
handed to :class:`~hookcode.session.SessionLoop` or :func:`~hookcode.session.run_session`).
Naming this instead of the runtime keeps the session beside the runtime rather than above
it: the runtime builds the tool side and the plugins, the session only drives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from hookcode.tools import Host

if TYPE_CHECKING:
    from hookcode.agents import AgentSpec
    from hookcode.permission import PermissionRequest
    from hookcode.providers import Provider
    from hookcode.store import ToolPartRecord

__all__ = ["SessionHost"]


class SessionHost(Host, Protocol):
    """What the session uses of the runtime: the tool side's :class:`~hookcode.tools.Host`,
    plus the agents by name, the providers, the requests refused during a run and the
    recording of tool parts."""

    @property
    def refusals(self) -> list[PermissionRequest]: ...

    def agent(self, name: str | None = None) -> AgentSpec: ...
    def providers(self) -> dict[str, Provider]: ...
    def record_part(self, part: ToolPartRecord) -> None: ...
