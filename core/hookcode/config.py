"""Layered TOML config, validated into pydantic models.

Layers, in order (later wins, deep merge):

1. the global file ``$HOOKCODE_CONFIG_DIR/config.toml``, else
   ``$XDG_CONFIG_HOME/hookcode/config.toml`` (default ``~/.config/hookcode/config.toml``);
2. for every directory from the worktree (git root) down to the working directory:
   ``hookcode.toml`` then ``.hookcode/config.toml``;
3. ``HOOKCODE_CONFIG``: a file (it must exist);
4. ``HOOKCODE_CONFIG_CONTENT``: inline TOML, or JSON when it starts with ``{``;
5. ``HOOKCODE_PERMISSION``: JSON, merged over the ``permission`` key.

A project file (layer 2) of a folder the user has not trusted (:mod:`hookcode.trust`) may only
tighten: its allow rules, ``[plugins]``, ``[experimental]`` and every plugin setting declared
with :func:`hookcode.trust.trusted_only` are left out before the merge (and listed in
``Config.untrusted``); its deny and ask rules are kept apart as ``Config.tightening``, rules
that can make a decision stricter but never looser (:class:`hookcode.permission.Ruleset`).

A key overridden by a later layer keeps the position it had in the earliest layer that set
it; new keys are appended (key order is meaning for permission rules).

Core validates the keys it owns (:class:`CoreConfig`); plugins claim the other sections
through ``config_schema()`` -> ``{dotted pattern: model}``. A pattern has one segment
(``audit``: the whole top-level value) or two (``tool.bash``, ``provider.*``: sub-tables of a
top-level table; ``*`` matches one segment). A key nobody claims is an error naming the file
that set it, or a warning when some plugin is not loaded (it may be that plugin's section).
"""

from __future__ import annotations

import difflib
import os
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
)
from pydantic.json_schema import models_json_schema

# the config files are found and read by a light module (it runs before plugins load); the
# names below stay importable from here
from hookcode.configfiles import (
    CONFIG_ENV,  # noqa: F401
    CONTENT_ENV,  # noqa: F401
    PERMISSION_ENV,  # noqa: F401
    Layer,
    _merge_into,
    _read_layers,
    config_paths,
    deep_merge,
    plugin_selection,  # noqa: F401
    project_dirs,  # noqa: F401
    user_config_dir,  # noqa: F401
)
from hookcode.errors import ConfigError
from hookcode.trust import TRUSTED_ONLY, describe_path, trusted_only

if TYPE_CHECKING:
    from hookcode.plugins import Plugins

__all__ = [
    "Action",
    "AgentConfig",
    "Config",
    "CoreConfig",
    "Layer",
    "PermissionConfig",
    "PermissionValue",
    "PluginsConfig",
    "Tightening",
    "ToolLimits",
    "TruncationConfig",
    "claimed_sections",
    "config_paths",
    "deep_merge",
    "json_schema",
    "load_config",
    "split_permission",
    "untrusted_config_items",
]

Action = Literal["allow", "deny", "ask"]

# Tagged unions (one branch chosen by the value's shape) give one clean error per bad value
# instead of one per union branch. The tags appear in pydantic's error locations and are
# removed from the key paths we report.
_ACTION_TAG = "@action"
_TABLE_TAG = "@table"


def _shape(value: Any) -> str:
    return _TABLE_TAG if isinstance(value, dict) else _ACTION_TAG


PermissionValue = Annotated[
    Union[Annotated[Action, Tag(_ACTION_TAG)], Annotated[dict[str, Action], Tag(_TABLE_TAG)]],  # noqa: UP007
    Discriminator(_shape),
]
"""A permission's value: a bare action, or ``{pattern: action}`` in order."""

PermissionConfig = Annotated[
    Union[  # noqa: UP007
        Annotated[Action, Tag(_ACTION_TAG)],
        Annotated[dict[str, PermissionValue], Tag(_TABLE_TAG)],
    ],
    Discriminator(_shape),
]
"""A ``[permission]`` table (``{permission: value}`` in order), or a bare action (= ``{"*": action}``)."""


class _Strict(BaseModel):
    # descriptions are given with Field(description=...): pydantic's attribute-docstring
    # reading walks stack frames and costs start-up time
    model_config = ConfigDict(extra="forbid", defer_build=True)


class AgentConfig(_Strict):
    """``[agent.NAME]``: overrides for a built-in agent, or a new agent."""

    description: str | None = Field(
        default=None,
        examples=["Reviews diffs for bugs"],
        description="What the agent is for (shown to the model when it may call it as a sub-agent).",
    )
    mode: Literal["primary", "subagent", "all"] | None = Field(
        default=None,
        description="``primary`` (you talk to it), ``subagent`` (the task tool calls it) or ``all``.",
    )
    model: str | None = Field(
        default=None,
        examples=["anthropic/claude-haiku-5-5"],
        description="The agent's model, ``provider/model``; default: the session's.",
    )
    prompt: str | None = Field(
        default=None,
        examples=["You review code. Never edit files."],
        description="The agent's system prompt (replaces the default prompt).",
    )
    steps: int | None = Field(
        default=None,
        ge=1,
        examples=[20],
        description="Step limit: requests 1..N offer tools, request N+1 offers none.",
    )
    temperature: float | None = Field(
        default=None, examples=[0.2], description="Sampling temperature for this agent's requests."
    )
    top_p: float | None = Field(
        default=None, examples=[0.9], description="Nucleus sampling for this agent's requests."
    )
    permission: PermissionConfig | None = Field(
        default=None,
        examples=[{"edit": "deny"}],
        description="Rules for this agent, after ``[permission]`` (same shape).",
    )
    disable: bool = Field(default=False, description="Remove this agent.")


class ToolLimits(_Strict):
    """Per-tool output budget (``[truncation.tools.NAME]``); unset = the global budget."""

    max_lines: int | None = Field(
        default=None, gt=0, examples=[400], description="Lines kept of this tool's output."
    )
    max_bytes: int | None = Field(
        default=None, gt=0, examples=[20000], description="Bytes kept of this tool's output."
    )


class TruncationConfig(_Strict):
    """``[truncation]``: the output budget of tool results."""

    max_lines: int = Field(
        default=2000,
        gt=0,
        description="Lines of a tool's output the model sees; the rest is spilled to a file.",
    )
    max_bytes: int = Field(
        default=51200, gt=0, description="Bytes of a tool's output the model sees (50 KB)."
    )
    tools: dict[str, ToolLimits] = Field(
        default={},
        examples=[{"bash": {"max_lines": 400}}],
        description="Per-tool budgets, ``[truncation.tools.NAME]``.",
    )


class PluginsConfig(_Strict):
    """``[plugins]``: which entry points to load (None = all) and which to block."""

    load: list[str] | None = Field(
        default=None,
        examples=[["policy_rules", "tool_read"]],
        description="Entry points to load (unset: all); ``HOOKCODE_LOAD_PLUGINS`` replaces it.",
    )
    block: list[str] = Field(
        default=[],
        examples=[["tool_bash"]],
        description="Entry points never to load; ``HOOKCODE_BLOCK_PLUGINS`` adds to it.",
    )


class CoreConfig(_Strict):
    """The sections core owns."""

    model: str | None = Field(
        default=None,
        examples=["anthropic/claude-sonnet-5-5"],
        description="The default model, ``provider/model`` (e.g. ``anthropic/claude-sonnet-5-5``).",
    )
    small_model: str | None = Field(
        default=None,
        examples=["anthropic/claude-haiku-5-5"],
        description="A cheaper model for internal work such as compaction summaries.",
    )
    default_agent: str | None = Field(
        default=None,
        examples=["plan"],
        description="The agent ``hookcode run`` uses when none is named (default: ``build``).",
    )
    edit_tools: Literal["auto", "edit", "apply_patch", "both"] = Field(
        default="auto",
        description="Which file-editing tools a model is offered (the ``model_tools`` hook of policy_rules applies it): ``auto`` follows the model rule (GPT-style models get the tools that take patches, apply_patch; others edit/write/multiedit), or force one family, or ``both``.",
    )
    permission: PermissionConfig = Field(
        default={},
        # (JSON schema output sorts keys: keep the example's order alphabetical too)
        examples=[{"*": "allow", "bash": {"*": "ask", "git status *": "allow"}, "edit": "ask"}],
        description="Permission rules: ``permission = action`` or ``{pattern = action}``; "
        "last match wins. In an untrusted project's files, allow rules are ignored and deny "
        "and ask rules can only make a decision stricter.",
    )
    agent: dict[str, AgentConfig] = Field(
        default={},
        examples=[{"review": {"mode": "subagent", "description": "Reviews diffs"}}],
        description="Agents: overrides of built-in agents and new ones, ``[agent.NAME]``.",
    )
    tools: dict[str, bool] = Field(
        default={},
        examples=[{"webfetch": False}],
        description="Legacy switches ``name = true|false``, turned into allow/deny rules (an "
        "untrusted project's ``true`` is ignored).",
    )
    plugins: PluginsConfig = Field(
        default_factory=PluginsConfig,
        description="Which plugins load.",
        # blocking a policy plugin loosens as surely as loading one
        json_schema_extra=trusted_only(),
    )
    truncation: TruncationConfig = Field(
        default_factory=TruncationConfig, description="The output budget of tool results."
    )
    experimental: dict[str, Any] = Field(
        default={},
        examples=[{"some_flag": True}],
        description="Experimental switches (unstable).",
        # any switch could turn anything on (``exa`` sends queries to a third party)
        json_schema_extra=trusted_only(),
    )


CORE_KEYS: tuple[str, ...] = tuple(CoreConfig.model_fields)

KeyPath = tuple[str, ...]


@dataclass
class Tightening:
    """Deny and ask rules from a project file of an untrusted folder: ``path`` is where they
    were (``("permission",)``, ``("agent", NAME, "permission")`` or ``("tools",)``), ``value``
    what is left of them (allow rules removed), ``source`` the file."""

    path: KeyPath
    value: Any
    source: str


@dataclass
class Config:
    """The loaded config. Attributes of :class:`CoreConfig` are readable directly
    (``config.model``, ``config.permission``)."""

    core: CoreConfig
    sections: dict[str, BaseModel] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    layers: list[Layer] = field(default_factory=list)
    candidates: list[Path] = field(default_factory=list)
    provenance: dict[KeyPath, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: what the project files of an untrusted folder set and was left out, one item each
    #: (``mcp.fs (hookcode.toml)``, ``allow rules (hookcode.toml)``)
    untrusted: list[str] = field(default_factory=list)
    #: the deny and ask rules of those files, which may only tighten
    tightening: list[Tightening] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        # Only called for names not found normally; never recurse while `core` is unset.
        if name in CoreConfig.model_fields and "core" in self.__dict__:
            return getattr(self.core, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def section(self, key: str) -> BaseModel | None:
        """The validated model of a plugin section by its concrete key (``"tool.bash"``)."""
        return self.sections.get(key)

    def source_of(self, *key_path: str) -> str | None:
        """The source (file path or env var) that last set this exact key path."""
        return self.provenance.get(tuple(key_path))

    def to_dict(self) -> dict[str, Any]:
        """The effective config, JSON-compatible: core (defaults included, in field order),
        then the other sections in file order (validated ones dumped, unclaimed ones as is)."""
        out: dict[str, Any] = self.core.model_dump(mode="json")
        for key, value in self.raw.items():
            if key in CORE_KEYS:
                continue
            if key in self.sections:
                out[key] = _dump(self.sections[key])
            elif isinstance(value, dict):
                out[key] = {
                    sub: _dump(self.sections[f"{key}.{sub}"])
                    if f"{key}.{sub}" in self.sections
                    else _jsonable(subvalue)
                    for sub, subvalue in value.items()
                }
            else:
                out[key] = _jsonable(value)
        return out


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def _jsonable(value: Any) -> Any:
    return TypeAdapter(Any).dump_python(value, mode="json")


# ----------------------------------------------------------------------------- merging


def _record_provenance(
    provenance: dict[KeyPath, str],
    merged: Any,
    data: Mapping[str, Any],
    source: str,
    prefix: KeyPath = (),
) -> None:
    """Note ``source`` as the setter of every key path in ``data``, given the merge so far."""
    for key, value in data.items():
        path = (*prefix, key)
        old = merged.get(key) if isinstance(merged, dict) else None
        provenance[path] = source
        if isinstance(value, dict) and isinstance(old, dict):
            _record_provenance(provenance, old, value, source, path)
            continue
        for stale in [p for p in provenance if len(p) > len(path) and p[: len(path)] == path]:
            del provenance[stale]
        if isinstance(value, dict):
            _record_provenance(provenance, None, value, source, path)


# ----------------------------------------------------------------------------- validation


@dataclass
class _Problem:
    path: tuple[str | int, ...]
    message: str


def _dotted(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _suggest(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``| None`` around a type."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _model_at(model: type[BaseModel], path: Sequence[str | int]) -> type[BaseModel] | None:
    """The pydantic model that validates the table at ``path`` inside ``model``, if any."""
    current: Any = model
    for part in path:
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return None
            current = info.annotation
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return None
        current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _validation_problems(
    exc: ValidationError, model: type[BaseModel], prefix: KeyPath
) -> list[_Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(p for p in error["loc"] if p not in (_ACTION_TAG, _TABLE_TAG))
        message = error["msg"]
        if error["type"] == "extra_forbidden" and loc:
            owner = _model_at(model, loc[:-1])
            fields = list(owner.model_fields) if owner else []
            message = f"unknown key {loc[-1]!r}{_suggest(str(loc[-1]), fields)}"
        elif error["type"] != "missing" and isinstance(error.get("input"), str | int | float):
            message += f" (got {error['input']!r})"
        problems.append(_Problem((*prefix, *loc), message))
    return problems


def _is_root_model(model: type[BaseModel]) -> bool:
    # pydantic.root_model is imported only when a section needs it (it costs start-up time)
    from pydantic import RootModel

    return issubclass(model, RootModel)


def _validate(
    model: type[BaseModel], value: Any, path: KeyPath
) -> tuple[BaseModel | None, list[_Problem]]:
    if not isinstance(value, dict) and not _is_root_model(model):
        return None, [_Problem(path, f"expected a table, got {_type_name(value)}")]
    try:
        return model.model_validate(value), []
    except ValidationError as exc:
        return None, _validation_problems(exc, model, path)


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        list: "an array",
    }.get(type(value), type(value).__name__)


@dataclass
class _Claims:
    whole: dict[str, type[BaseModel]]  # "audit" -> model
    sub: dict[str, dict[str, type[BaseModel]]]  # "provider" -> {"*": model}, "tool" -> {"bash": ..}

    @classmethod
    def parse(cls, claimed: Mapping[str, type[BaseModel]]) -> _Claims:
        claims = cls({}, {})
        for pattern, model in claimed.items():
            parts = pattern.split(".")
            if len(parts) > 2 or not all(parts) or parts[0] == "*":
                raise ConfigError(
                    "a section pattern is 'name' or 'name.sub' ('*' = any)", key=pattern
                )
            if parts[0] in CORE_KEYS:
                raise ConfigError("this section is owned by core", key=pattern)
            if len(parts) == 1:
                claims.whole[parts[0]] = model
            else:
                claims.sub.setdefault(parts[0], {})[parts[1]] = model
        both = sorted(claims.whole.keys() & claims.sub.keys())
        if both:
            raise ConfigError("claimed both as a whole and by sub-table", key=both[0])
        return claims

    def top_names(self) -> list[str]:
        return [*CORE_KEYS, *self.whole, *self.sub]

    def sub_names(self, top: str) -> list[str]:
        return [name for name in self.sub.get(top, {}) if name != "*"]


def _check_sections(
    raw: Mapping[str, Any], claims: _Claims, unloaded_plugins: Sequence[str] = ()
) -> tuple[dict[str, BaseModel], list[_Problem], list[KeyPath]]:
    """Validate every non-core key: (sections, problems, unclaimed key paths). A sub-table a
    wildcard claims (``provider.*``) that does not fit the wildcard's model is left unclaimed,
    with the not-loaded warning instead of an error, when a plugin that is not loaded is named
    exactly after it (``provider_anthropic`` for ``[provider.anthropic]``): that plugin would
    claim it literally."""
    owned_by_unloaded = {name.lower().replace("-", "_") for name in unloaded_plugins}
    sections: dict[str, BaseModel] = {}
    problems: list[_Problem] = []
    unclaimed: list[KeyPath] = []

    def check(model: type[BaseModel], value: Any, path: KeyPath) -> None:
        section, found = _validate(model, value, path)
        problems.extend(found)
        if section is not None:
            sections[".".join(path)] = section

    for key, value in raw.items():
        if key in CORE_KEYS:
            continue
        if key in claims.whole:
            check(claims.whole[key], value, (key,))
        elif key in claims.sub:
            if not isinstance(value, dict):
                problems.append(_Problem((key,), f"expected a table, got {_type_name(value)}"))
                continue
            patterns = claims.sub[key]
            for sub, subvalue in value.items():
                model = patterns.get(sub)
                if model is None and f"{key}_{sub}".lower() in owned_by_unloaded:
                    wildcard = patterns.get("*")
                    if wildcard is not None:
                        section, found = _validate(wildcard, subvalue, (key, sub))
                        if not found and section is not None:
                            sections[f"{key}.{sub}"] = section
                            continue
                    unclaimed.append((key, sub))  # its own plugin would validate it
                    continue
                if model is None:
                    model = patterns.get("*")
                if model is None:
                    unclaimed.append((key, sub))
                else:
                    check(model, subvalue, (key, sub))
        else:
            unclaimed.append((key,))
    return sections, problems, unclaimed


def _source_for(
    path: Sequence[str | int], provenance: Mapping[KeyPath, str], fallback: str | None
) -> str | None:
    """The source that set the longest prefix of ``path`` (list indices end the lookup)."""
    keys: list[str] = []
    for part in path:
        if isinstance(part, int):
            break
        keys.append(part)
    for end in range(len(keys), 0, -1):
        source = provenance.get(tuple(keys[:end]))
        if source is not None:
            return source
    return fallback


def _raise_problems(
    problems: list[_Problem], provenance: Mapping[KeyPath, str], fallback: str | None
) -> None:
    located = [
        (_source_for(p.path, provenance, fallback), _dotted(p.path), p.message) for p in problems
    ]
    if len(located) == 1:
        file, key, message = located[0]
        raise ConfigError(message, file=file, key=key or None)
    files = {file for file, _, _ in located}
    lines = [
        ConfigError(message, file=file, key=key or None).args[0] for file, key, message in located
    ]
    raise ConfigError(
        f"{len(lines)} config errors:\n" + "\n".join(lines),
        file=files.pop() if len(files) == 1 else None,
    )


def _section_paths(path: KeyPath, raw: Mapping[str, Any]) -> list[KeyPath]:
    """How to name an unclaimed key in a warning: a top-level table made only of tables
    (``[tool.bash]``, ``[mcp.github]``) is named by its sub-tables, anything else as is."""
    value = raw[path[0]] if len(path) == 1 else None
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        return [(*path, sub) for sub in value]
    return [path]


# ----------------------------------------------------------------------------- untrusted


def split_permission(value: Any) -> tuple[Any, bool]:
    """A ``[permission]``-shaped value without its allow rules: (what is left, or None when
    nothing is; whether any allow was removed). A value of the wrong shape is returned as is
    (validation reports it)."""
    if isinstance(value, str):
        return (None, True) if value == "allow" else (value, False)
    if not isinstance(value, dict):
        return value, False
    kept: dict[str, Any] = {}
    dropped = False
    for key, entry in value.items():
        if isinstance(entry, dict):
            patterns = {pattern: action for pattern, action in entry.items() if action != "allow"}
            dropped |= len(patterns) != len(entry)
            if patterns:
                kept[key] = patterns
        elif entry == "allow":
            dropped = True
        else:
            kept[key] = entry
    return (kept or None), dropped


def _marker(extra: Any) -> list[Any] | None:
    """The values kept by a :func:`~hookcode.trust.trusted_only` marker, or None (no marker)."""
    if isinstance(extra, dict) and TRUSTED_ONLY in extra:
        keep = extra[TRUSTED_ONLY]
        return list(keep) if isinstance(keep, list | tuple) else []
    return None


def _is_kept(value: Any, keep: Sequence[Any]) -> bool:
    return any(type(value) is type(k) and value == k for k in keep)


def _field_named(model: type[BaseModel], key: str) -> Any:
    info = model.model_fields.get(key)
    if info is not None:
        return info
    for info in model.model_fields.values():
        if key in (info.alias, info.validation_alias):
            return info
    return None


def _model_type(annotation: Any) -> type[BaseModel] | None:
    inner = _unwrap(annotation)
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


_DROP = object()


def _strip_untrusted(
    model: type[BaseModel], value: Any, path: KeyPath, dropped: list[KeyPath]
) -> Any:
    """``value`` (a table of ``model``) without what an untrusted project may not set;
    :data:`_DROP` when nothing is left of a table whose whole model is trusted-only."""
    whole = _marker(model.model_config.get("json_schema_extra"))
    if not isinstance(value, dict):
        if whole is not None and not _is_kept(value, whole):
            dropped.append(path)
            return _DROP
        return value
    out: dict[str, Any] = {}
    lost = False
    for key, item in value.items():
        info = _field_named(model, key)
        keep = _marker(info.json_schema_extra) if info is not None else None
        if keep is None:
            keep = whole
        if keep is not None and not _is_kept(item, keep):
            lost = True
            if whole is None:
                dropped.append((*path, key))
            continue
        if info is not None:
            item = _strip_nested(info.annotation, item, (*path, key), dropped)
            if item is _DROP:
                continue
        out[key] = item
    if whole is not None:
        if lost:
            dropped.append(path)
        if not out:
            return _DROP
    return out


def _strip_nested(annotation: Any, item: Any, path: KeyPath, dropped: list[KeyPath]) -> Any:
    if not isinstance(item, dict):
        return item
    model = _model_type(annotation)
    if model is not None:
        return _strip_untrusted(model, item, path, dropped)
    inner = _unwrap(annotation)
    if get_origin(inner) is dict:
        values = _model_type(get_args(inner)[1])
        if values is not None:
            out = {}
            for key, sub in item.items():
                stripped = _strip_untrusted(values, sub, (*path, key), dropped)
                if stripped is not _DROP:
                    out[key] = stripped
            return out
    return item


def _untrusted_layer(
    layer: Layer, claims: _Claims, worktree: Path
) -> tuple[Layer, list[str], list[Tightening]]:
    """A project layer of an untrusted folder as it may be used: (the layer without what
    loosens, the items left out, the deny and ask rules kept apart)."""
    where = describe_path(layer.source, worktree)
    data = dict(layer.data)
    dropped: list[KeyPath] = []
    tightening: list[Tightening] = []
    allow_dropped = False

    def tighten(path: KeyPath, value: Any) -> None:
        nonlocal allow_dropped
        kept, lost = split_permission(value)
        allow_dropped |= lost
        if kept is not None:
            tightening.append(Tightening(path, kept, layer.source))

    # rules are taken apart only once they validate (as core reads them: "false" is false);
    # an invalid value stays in the layer, where validation reports it with its file
    tools = _validated("tools", data.get("tools"))
    if tools is not None:
        del data["tools"]
        denied = {name: on for name, on in tools.items() if not on}
        allow_dropped |= len(denied) != len(tools)
        if denied:
            tightening.append(Tightening(("tools",), denied, layer.source))
    if _validated("permission", data.get("permission")) is not None:
        tighten(("permission",), data.pop("permission"))
    agents = data.get("agent")
    if isinstance(agents, dict):
        data["agent"] = {}
        for name, table in agents.items():
            if isinstance(table, dict) and _validated("agent", {name: table}) is not None:
                if "permission" in table:
                    tighten(("agent", name, "permission"), table["permission"])
                table = {k: v for k, v in table.items() if k != "permission"}
            data["agent"][name] = table
    # core's own keys go through the same markers ([plugins], [experimental])
    core = _strip_untrusted(
        CoreConfig, {k: v for k, v in data.items() if k in CORE_KEYS}, (), dropped
    )
    data = {k: v for k, v in data.items() if k not in CORE_KEYS or k in core}
    data.update(core)
    for key in list(data):
        if key in CORE_KEYS:
            continue
        if key in claims.whole:
            stripped = _strip_untrusted(claims.whole[key], data[key], (key,), dropped)
        elif key in claims.sub and isinstance(data[key], dict):
            stripped = {}
            for sub, value in data[key].items():
                model = claims.sub[key].get(sub) or claims.sub[key].get("*")
                item = (
                    value if model is None else _strip_untrusted(model, value, (key, sub), dropped)
                )
                if item is not _DROP:
                    stripped[sub] = item
        else:
            continue
        if stripped is _DROP:
            del data[key]
        else:
            data[key] = stripped
    items = [f"{'.'.join(path)} ({where})" for path in dropped]
    if allow_dropped:
        items.insert(0, f"allow rules ({where})")
    return Layer(layer.source, data, project=True), items, tightening


def _validated(key: str, value: Any) -> Any:
    """``value`` as core's field ``key`` reads it, or None when it is absent or invalid."""
    if value is None:
        return None
    try:
        return getattr(CoreConfig.model_validate({key: value}), key)
    except ValidationError:
        return None


def _apply_trust(
    layers: list[Layer], claims: _Claims, worktree: Path
) -> tuple[list[Layer], list[str], list[Tightening]]:
    used: list[Layer] = []
    untrusted: list[str] = []
    tightening: list[Tightening] = []
    for layer in layers:
        if not layer.project:
            used.append(layer)
            continue
        kept, items, rules = _untrusted_layer(layer, claims, worktree)
        used.append(kept)
        untrusted += items
        tightening += rules
    # the legacy switches first, then [permission], then the agents' rules: core's order
    order = {"tools": 0, "permission": 1, "agent": 2}
    tightening.sort(key=lambda t: order[t.path[0]])
    return used, untrusted, tightening


def untrusted_config_items(
    cwd: Path,
    worktree: Path,
    claimed: Mapping[str, type[BaseModel]] | None = None,
    *,
    env: Mapping[str, str] = os.environ,
) -> list[str]:
    """What the project files would lose if the folder is not trusted (nothing validated; an
    unreadable file gives no items here, the full load reports it)."""
    try:
        claims = _Claims.parse(claimed or {})
        _candidates, layers = _read_layers(cwd, worktree, env)
    except ConfigError:
        return []
    return _apply_trust(layers, claims, worktree)[1]


def claimed_sections(
    plugins: Plugins,
) -> tuple[dict[str, type[BaseModel]], dict[str, str]]:
    """The config sections plugins claim (``config_schema``): ({pattern: model}, {pattern:
    plugin}). Two plugins claiming one pattern is a :class:`ConfigError` naming both."""
    claimed: dict[str, type[BaseModel]] = {}
    owners: dict[str, str] = {}
    for plugin, sections in plugins.collect("config_schema"):
        if not isinstance(sections, Mapping):
            plugins.warn(f"plugin {plugin!r}: config_schema must return a dict; ignored")
            continue
        for pattern, model in sections.items():
            if pattern in owners and owners[pattern] != plugin:
                raise ConfigError(
                    f"config section '{pattern}' is claimed by two plugins: "
                    f"{owners[pattern]!r} and {plugin!r}",
                    key=pattern,
                )
            owners[pattern] = plugin
            claimed[pattern] = model
    return claimed, owners


# ----------------------------------------------------------------------------- loading


def load_config(
    cwd: Path,
    worktree: Path,
    claimed: Mapping[str, type[BaseModel]] | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    unloaded_plugins: Sequence[str] = (),
    trusted: bool = False,
) -> Config:
    """Read, merge and validate every layer. Raises :class:`ConfigError` naming the file and
    key of each problem (all problems at once). Unless ``trusted``, the project's own files
    may only tighten (see the module's docstring)."""
    claims = _Claims.parse(claimed or {})
    candidates, layers = _read_layers(cwd, worktree, env)
    untrusted: list[str] = []
    tightening: list[Tightening] = []
    if not trusted:
        layers, untrusted, tightening = _apply_trust(layers, claims, worktree)

    raw: dict[str, Any] = {}
    provenance: dict[KeyPath, str] = {}
    for layer in layers:
        _record_provenance(provenance, raw, layer.data, layer.source)
        _merge_into(raw, layer.data)
    fallback = layers[-1].source if layers else None

    problems: list[_Problem] = []
    core: CoreConfig | None = None
    core_raw = {key: value for key, value in raw.items() if key in CORE_KEYS}
    try:
        core = CoreConfig.model_validate(core_raw)
    except ValidationError as exc:
        problems += _validation_problems(exc, CoreConfig, ())

    sections, section_problems, unclaimed = _check_sections(raw, claims, unloaded_plugins)
    problems += section_problems
    warnings: list[str] = []
    for path in unclaimed:
        owners = _possible_owners(path, unloaded_plugins)
        if owners:
            not_loaded = ", ".join(owners)
            warnings += [
                f"config key {'.'.join(section)!r} in {_source_for(section, provenance, fallback)}"
                f" is not used by any loaded plugin (not loaded: {not_loaded})"
                for section in _section_paths(path, raw)
            ]
        else:
            names = claims.top_names() if len(path) == 1 else claims.sub_names(path[0])
            hint = _suggest(path[-1], names)
            problems.append(_Problem(path, f"unknown key {'.'.join(path)!r}{hint}"))

    if problems:
        _raise_problems(problems, provenance, fallback)
    assert core is not None
    return Config(
        core=core,
        sections=sections,
        raw=raw,
        layers=layers,
        candidates=candidates,
        provenance=provenance,
        warnings=warnings,
        untrusted=untrusted,
        tightening=tightening,
    )


def _possible_owners(path: KeyPath, unloaded_plugins: Sequence[str]) -> list[str]:
    """The plugins that are not loaded and could own the section at ``path``: a plugin named
    ``tool_bash`` may own ``[tool.bash]`` or ``[tool]``; ``mcp`` may own ``[mcp]``; a plugin
    whose name contains the section's name (``shell_hooks`` for ``[hooks]``) may too. A key
    no unloaded plugin could own (a misspelled core key) stays an error."""
    top = path[0].lower()
    owners = []
    for name in unloaded_plugins:
        words = name.lower().replace("-", "_").split("_")
        if top in words or name.lower() == "_".join(p.lower() for p in path):
            owners.append(name)
    return owners


# ----------------------------------------------------------------------------- schema


def json_schema(claimed: Mapping[str, type[BaseModel]] | None = None) -> dict[str, Any]:
    """The JSON schema of the whole config file: core's model plus every claimed section."""
    claims = _Claims.parse(claimed or {})
    models: list[type[BaseModel]] = [CoreConfig, *claims.whole.values()]
    models += [model for patterns in claims.sub.values() for model in patterns.values()]
    refs, defs_schema = models_json_schema([(model, "validation") for model in models])
    defs: dict[str, Any] = dict(defs_schema.get("$defs", {}))

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        return dict(refs[(model, "validation")])

    core_name = ref(CoreConfig)["$ref"].rsplit("/", 1)[-1]
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **defs.pop(core_name),
        "title": "hookcode config",
        "description": "hookcode's config file: core's sections and every claimed plugin section.",
    }
    properties: dict[str, Any] = dict(schema.get("properties", {}))
    for name, model in claims.whole.items():
        properties[name] = ref(model)
    for name, patterns in claims.sub.items():
        table: dict[str, Any] = {"type": "object"}
        named = {sub: ref(model) for sub, model in patterns.items() if sub != "*"}
        if named:
            table["properties"] = named
        table["additionalProperties"] = ref(patterns["*"]) if "*" in patterns else False
        properties[name] = table
    schema["properties"] = properties
    schema["additionalProperties"] = False
    if defs:
        schema["$defs"] = defs
    return schema
