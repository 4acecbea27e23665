"""What a project file of a folder the user has not trusted may set: its allow rules,
``[plugins]``, ``[experimental]`` and every setting marked :func:`hookcode.trust.trusted_only`
are left out before the merge; its deny and ask rules are kept apart as :class:`Tightening`
(see :mod:`hookcode.config`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from hookcode.config.models import CORE_KEYS, CoreConfig, KeyPath
from hookcode.config.validation import Claims, unwrap
from hookcode.configfiles import Layer, _read_layers
from hookcode.errors import ConfigError
from hookcode.trust import TRUSTED_ONLY, describe_path

__all__ = ["Tightening", "apply_trust", "split_permission", "untrusted_config_items"]


@dataclass
class Tightening:
    """Deny and ask rules from a project file of an untrusted folder: ``path`` is where they
    were (``("permission",)``, ``("agent", NAME, "permission")`` or ``("tools",)``), ``value``
    what is left of them (allow rules removed), ``source`` the file."""

    path: KeyPath
    value: Any
    source: str


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
    inner = unwrap(annotation)
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
    inner = unwrap(annotation)
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
    layer: Layer, claims: Claims, worktree: Path
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


def apply_trust(
    layers: list[Layer], claims: Claims, worktree: Path
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
        claims = Claims.parse(claimed or {})
        _candidates, layers = _read_layers(cwd, worktree, env)
    except ConfigError:
        return []
    return apply_trust(layers, claims, worktree)[1]
