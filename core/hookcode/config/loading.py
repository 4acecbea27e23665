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
that set it, or a warning when some plugin is not loaded (it may be that plugin's section) or
when it is the section of one of hookcode's own distributions that is not installed.

The parts, by what each owns: :mod:`hookcode.configfiles` finds, reads and merges the files
(light: it runs before plugins load); :mod:`hookcode.config.models` holds core's models;
:mod:`hookcode.config.tightening` what an untrusted project may set;
:mod:`hookcode.config.validation` the claims and the problems; this module loads them into a
:class:`Config`; :mod:`hookcode.config.agent_files` adds the Markdown agent files. Import the
names from :mod:`hookcode.config`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.json_schema import models_json_schema

from hookcode.config.models import (
    CORE_KEYS,
    Action,
    AgentConfig,
    CoreConfig,
    KeyPath,
    PermissionConfig,
    PermissionValue,
    PluginsConfig,
    ToolLimits,
    TruncationConfig,
)
from hookcode.config.tightening import (
    Tightening,
    apply_trust,
    split_permission,
    untrusted_config_items,
)
from hookcode.config.validation import (
    OWN_SECTIONS,
    Claims,
    Problem,
    check_sections,
    missing_owner,
    possible_owners,
    raise_problems,
    section_paths,
    source_for,
    suggest,
    validation_problems,
)

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

if TYPE_CHECKING:
    from hookcode.plugin_manager import HookCaller

__all__ = [
    "OWN_SECTIONS",
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


def claimed_sections(
    plugins: HookCaller,
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
    installed: Collection[str] | None = None,
    trusted: bool = False,
) -> Config:
    """Read, merge and validate every layer. Raises :class:`ConfigError` naming the file and
    key of each problem (all problems at once). Unless ``trusted``, the project's own files
    may only tighten (see the module's docstring).

    ``unloaded_plugins`` names the plugins installed but not loaded, ``installed`` the
    distributions installed (None: not known): a section one of them may own, or one of
    hookcode's own distributions that is not installed would own
    (:data:`~hookcode.config.validation.OWN_SECTIONS`), is a warning naming it, not an
    error."""
    claims = Claims.parse(claimed or {})
    candidates, layers = _read_layers(cwd, worktree, env)
    layers, warnings = _without_project_store(layers)
    untrusted: list[str] = []
    tightening: list[Tightening] = []
    if not trusted:
        layers, untrusted, tightening = apply_trust(layers, claims, worktree)

    raw: dict[str, Any] = {}
    provenance: dict[KeyPath, str] = {}
    for layer in layers:
        _record_provenance(provenance, raw, layer.data, layer.source)
        _merge_into(raw, layer.data)
    fallback = layers[-1].source if layers else None

    problems: list[Problem] = []
    core: CoreConfig | None = None
    core_raw = {key: value for key, value in raw.items() if key in CORE_KEYS}
    try:
        core = CoreConfig.model_validate(core_raw)
    except ValidationError as exc:
        problems += validation_problems(exc, CoreConfig, ())

    sections, section_problems, unclaimed = check_sections(raw, claims, unloaded_plugins, installed)
    problems += section_problems
    for path in unclaimed:
        owners = possible_owners(path, unloaded_plugins)
        if owners:
            not_loaded = ", ".join(owners)
            warnings += [
                f"config key {'.'.join(section)!r} in {source_for(section, provenance, fallback)}"
                f" is not used by any loaded plugin (not loaded: {not_loaded})"
                for section in section_paths(path, raw)
            ]
            continue
        unknown: list[KeyPath] = []
        for section in section_paths(path, raw):
            missing = missing_owner(section, installed) if installed is not None else None
            if missing is None:
                unknown.append(section)
                continue
            warnings.append(
                f"config key {'.'.join(section)!r} in {source_for(section, provenance, fallback)}"
                f" is not used: {missing}, whose plugin reads it, is not installed (install "
                f"it, or remove the section)"
            )
        if len(unknown) == len(section_paths(path, raw)):
            unknown = [path]  # nothing known in it: the key itself is unknown
        for key in unknown:
            names = claims.top_names() if len(key) == 1 else claims.sub_names(key[0])
            hint = suggest(key[-1], names)
            problems.append(Problem(key, f"unknown key {'.'.join(key)!r}{hint}"))

    if problems:
        raise_problems(problems, provenance, fallback)
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


def _without_project_store(layers: list[Layer]) -> tuple[list[Layer], list[str]]:
    """The layers without the ``store`` key of the project's own files, and a warning for
    each file that set it: where your sessions and approvals live is yours to choose, never
    a repository's (trusted or not: it could send them to its own database, or hand you
    approvals it wrote)."""
    kept: list[Layer] = []
    warnings: list[str] = []
    for layer in layers:
        if layer.project and "store" in layer.data:
            warnings.append(
                f"config key 'store' in {layer.source} is ignored: a project's config cannot "
                "choose where sessions and approvals are stored (set it in your own "
                "config.toml, or HOOKCODE_STORE)"
            )
            data = {key: value for key, value in layer.data.items() if key != "store"}
            layer = Layer(layer.source, data, project=True)
        kept.append(layer)
    return kept, warnings


# ----------------------------------------------------------------------------- schema


def json_schema(claimed: Mapping[str, type[BaseModel]] | None = None) -> dict[str, Any]:
    """The JSON schema of the whole config file: core's model plus every claimed section."""
    claims = Claims.parse(claimed or {})
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
