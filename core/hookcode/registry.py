"""The tool registry: which tools exist, who registered them, and which an agent is offered.

Tools come from every plugin's ``register_tools`` hook (and the deprecated ``tool`` hook) in
registration order; for a name clash the later registration wins and the loser is kept as
*shadowed* (``tools list`` shows it). Tools may be registered at run time too
(:meth:`Registry.register`), replacing a tool of the same name.

What core needs to know about a tool it reads from the tool's declarations, never from its
name: the permission that hides it (``Tool.permission_name``), which tools a model is offered
(the ``model_tools`` hook, over ``Tool.edits_files``), what a legacy ``[tools]`` switch governs
(:meth:`Registry.permission_of`), whose outputs pruning keeps (``Tool.prunable``) and the
advice after a cut output (``Tool.truncation_hint``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hookcode.errors import UnknownTool
from hookcode.tooldef import Tool, valid_tool_name

if TYPE_CHECKING:
    from hookcode.config import Config
    from hookcode.permission.rules import Ruleset
    from hookcode.plugin_manager import PluginsBase

__all__ = ["Registry", "RegistryHost", "ToolEntry"]


class RegistryHost(Protocol):
    """The part of the runtime (:class:`hookcode.runtime.Runtime`) the registry uses; it is
    handed on to the ``register_tools`` hook as the ``runtime``."""

    @property
    def plugins(self) -> PluginsBase: ...
    @property
    def config(self) -> Config: ...
    def ruleset(
        self, agent: str, session_id: str | None = None, *, approvals: bool = True
    ) -> Ruleset: ...


@dataclass
class ToolEntry:
    tool: Tool
    plugin: str
    distribution: str | None = None
    shadows: list[ToolEntry] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def permission(self) -> str:
        """The permission that hides this tool (every tool that edits files: ``edit``)."""
        return self.tool.permission_name

    def to_dict(self, *, schema: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.tool.name,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "description": self.tool.description,
            "permission": self.permission,
            "shadows": [{"plugin": s.plugin, "distribution": s.distribution} for s in self.shadows],
        }
        if schema:
            data["parameters"] = self.tool.parameters
        return data


class Registry:
    def __init__(self, runtime: RegistryHost) -> None:
        self.runtime = runtime
        self._entries: dict[str, ToolEntry] | None = None

    # -- building -----------------------------------------------------------------------------
    def _build(self) -> dict[str, ToolEntry]:
        plugins = self.runtime.plugins
        entries: dict[str, ToolEntry] = {}
        registered: list[Any] = []

        def register(*tools: Tool) -> None:
            registered.extend(tools)

        calls = {"register_tools": {"register": register, "runtime": self.runtime}, "tool": {}}
        for plugin, hook, value, error in plugins.collect_outcomes(calls):
            tools, registered[:] = list(registered), []
            if error is not None:
                plugins.report(plugin, hook, error)
                continue
            if hook == "tool" and value is not None:  # the deprecated hook returns its tools
                tools = list(value) if isinstance(value, list | tuple) else [value]
            info = plugins.infos.get(plugin)
            for tool in tools:
                if not isinstance(tool, Tool):
                    plugins.warn(
                        f"plugin {plugin!r} registered {tool!r} from its {hook} hook, which is "
                        "not a Tool (decorate the function with @hookcode.tool); skipped"
                    )
                    continue
                if not valid_tool_name(tool.name or ""):
                    plugins.warn(
                        f"plugin {plugin!r} registered a tool named {tool.name!r}, which is not "
                        "a valid tool name (letters, digits, '_' and '-', at most 64); skipped"
                    )
                    continue
                self._add(entries, ToolEntry(tool, plugin, info.distribution if info else None))
        return entries

    def _add(self, entries: dict[str, ToolEntry], entry: ToolEntry) -> ToolEntry:
        entry.tool.plugin = entry.plugin
        entry.tool.distribution = entry.distribution
        previous = entries.get(entry.name)
        if previous is not None and (entry.tool.never_replaces or previous.tool.never_replaces):
            # a never_replaces tool (MCP) is skipped whichever registers first
            skipped, kept = (entry, previous) if entry.tool.never_replaces else (previous, entry)
            self.runtime.plugins.warn(
                f"tool {entry.name!r} from plugin {skipped.plugin!r} skipped: the name is "
                f"taken by the tool from plugin {kept.plugin!r}, which it never replaces"
            )
            entries[entry.name] = kept
            return kept
        if previous is not None:
            entry.shadows = [
                *previous.shadows,
                ToolEntry(previous.tool, previous.plugin, previous.distribution),
            ]
            self.runtime.plugins.warn(
                f"tool {entry.name!r} from plugin {entry.plugin!r} shadows the one from "
                f"plugin {previous.plugin!r}"
            )
        entries[entry.name] = entry
        return entry

    @property
    def entries(self) -> dict[str, ToolEntry]:
        if self._entries is None:
            self._entries = self._build()
        return self._entries

    def register(self, tool: Tool, plugin: str = "runtime") -> ToolEntry:
        """Add a tool at run time, replacing (and shadowing) one of the same name; returns
        the entry that holds the name (not the new tool's when it is ``never_replaces``
        and the name is taken)."""
        if not valid_tool_name(tool.name or ""):
            raise ValueError(
                f"tool name {tool.name!r} is invalid: use letters, digits, '_' and '-' "
                "(at most 64 characters)"
            )
        info = self.runtime.plugins.infos.get(plugin)
        entry = ToolEntry(tool, plugin, info.distribution if info else None)
        return self._add(self.entries, entry)

    def unregister(self, name: str) -> None:
        self.entries.pop(name, None)

    def get(self, name: str) -> ToolEntry | None:
        return self.entries.get(name)

    # -- per agent ----------------------------------------------------------------------------
    def available(
        self, agent: str, session_id: str | None = None, model: str | None = None
    ) -> list[ToolEntry]:
        """The tools offered to ``agent``: hidden when its rules deny the tool's permission
        for ``*``, and filtered for the model family (apply_patch vs edit/write/multiedit)."""
        offered = self._offered(agent, session_id, model)
        return [entry for entry in self.entries.values() if offered(entry)]

    def _offered(
        self, agent: str, session_id: str | None, model: str | None
    ) -> Callable[[ToolEntry], bool]:
        """Whether an entry is among :meth:`available` (one ruleset for every entry asked)."""
        ruleset = self.runtime.ruleset(agent, session_id, approvals=False)
        withheld = self._withheld(model) if model is not None else ()

        def offered(entry: ToolEntry) -> bool:
            if ruleset.disabled(entry.permission):
                return False
            return not withheld or id(entry.tool) not in withheld

        return offered

    def _withheld(self, model: str) -> set[int]:
        """The ids of the tools the ``model_tools`` hooks take away from ``model``."""
        plugins = self.runtime.plugins
        if not plugins.has_impls("model_tools"):
            return set()
        everything = [entry.tool for entry in self.entries.values()]
        offered = list(everything)
        plugins.call_each("model_tools", model=model, tools=offered, config=self.runtime.config)
        kept = {id(tool) for tool in offered}
        return {id(tool) for tool in everything if id(tool) not in kept}

    def resolve(
        self, name: str, agent: str, session_id: str | None = None, model: str | None = None
    ) -> ToolEntry:
        """The tool ``name`` as ``agent`` may call it; a case-insensitive match is accepted;
        otherwise UnknownTool naming the available tools."""
        offered = self._offered(agent, session_id, model)
        entry = self.entries.get(name)
        if entry is not None and offered(entry):
            return entry  # the common case: only this entry's rules are looked at
        folded = [
            e for e in self.entries.values() if e.name.lower() == str(name).lower() and offered(e)
        ]
        if len(folded) == 1:
            return folded[0]
        available = tuple(sorted(e.name for e in self.available(agent, session_id, model)))
        names = ", ".join(available) or "none"
        raise UnknownTool(
            f"Model tried to call unavailable tool '{name}'. Available tools: {names}.",
            name=str(name),
            available=available,
        )

    def definitions(
        self, agent: str, session_id: str | None = None, model: str | None = None
    ) -> list[dict[str, Any]]:
        """Tool definitions as the model sees them, after the ``tool_definition`` hook."""
        return [
            self.definition(entry, agent, session_id, model)
            for entry in self.available(agent, session_id, model)
        ]

    def definition(
        self,
        entry: ToolEntry,
        agent: str,
        session_id: str | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        """The definition of one tool as ``agent`` is sent it (``{"name", "description",
        "parameters"}``), after the ``tool_definition`` hook: what the model sees, and what
        ``tools show`` shows."""
        # a tool with ``definition_for`` tailors its definition to the calling agent
        # (task lists the sub-agents that agent may start, skill the skills it may load)
        scoped = getattr(entry.tool, "definition_for", None)
        raw = scoped(agent, session_id, model) if scoped is not None else entry.tool.definition()
        definition = copy.deepcopy(raw)
        self.runtime.plugins.call_each("tool_definition", tool_id=entry.name, definition=definition)
        return definition

    # -- what core asks of the tools' declarations -------------------------------------------
    def permission_of(self, name: str) -> str:
        """The permission a legacy ``[tools] NAME = true|false`` switch governs: the permission
        of the tool called ``name``, else that of the tools that edit files by the kind
        ``name`` (``patch``: the tools that take patches), else ``name`` itself."""
        entry = self.entries.get(name)
        if entry is not None:
            return entry.permission
        for entry in self.entries.values():
            if entry.tool.edits_files == name:
                return entry.permission
        return name

    def kept_outputs(self) -> frozenset[str]:
        """The tools whose old outputs pruning never clears (``Tool.prunable`` False)."""
        return frozenset(name for name, entry in self.entries.items() if not entry.tool.prunable)

    def truncation_hint(self, agent: str, session_id: str | None = None) -> str | None:
        """The advice after a cut output for ``agent``: the ``truncation_hint`` lines of the
        tools it is offered, in registration order; None when none has one (the default
        advice then)."""
        hinted = [entry for entry in self.entries.values() if entry.tool.truncation_hint]
        if not hinted:
            return None
        ruleset = self.runtime.ruleset(agent, session_id, approvals=False)
        lines = [
            entry.tool.truncation_hint or ""
            for entry in hinted
            if not ruleset.disabled(entry.permission)
        ]
        return "\n".join(lines) or None
