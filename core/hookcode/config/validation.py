"""Checking a merged config against the models that claim its sections: which plugin claims
what (:class:`Claims`), the problems found, and the :class:`~hookcode.errors.ConfigError` that
names the file and key of each."""

from __future__ import annotations

import difflib
import types
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from hookcode.config.models import ACTION_TAG, CORE_KEYS, TABLE_TAG, KeyPath
from hookcode.errors import ConfigError

__all__ = [
    "OWN_SECTIONS",
    "Claims",
    "Problem",
    "check_sections",
    "missing_owner",
    "possible_owners",
    "raise_problems",
    "section_paths",
    "source_for",
    "suggest",
    "unwrap",
    "validation_problems",
]


#: the config sections of hookcode's own distributions (what each one's ``config_schema``
#: claims, ``tests/test_workspace.py`` checks it), so that a section left behind when its
#: distribution is uninstalled (or was never installed) is a warning naming what to install,
#: not an unknown key
OWN_SECTIONS: dict[str, str] = {
    "audit": "hookcode-audit",
    "cache": "hookcode-cache",
    "hooks": "hookcode-shell-hooks",
    "lsp": "hookcode-tool-lsp",
    "mcp.*": "hookcode-mcp",
    "provider.*": "hookcode-provider-openai",
    "provider.anthropic": "hookcode-provider-anthropic",
    "skills": "hookcode-tool-skill",
    "shell_hooks": "hookcode-shell-hooks",
    "tool.bash": "hookcode-tool-bash",
}


@dataclass
class Problem:
    path: tuple[str | int, ...]
    message: str


def _dotted(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def suggest(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unwrap(annotation: Any) -> Any:
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
        current = unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def validation_problems(
    exc: ValidationError, model: type[BaseModel], prefix: KeyPath
) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(p for p in error["loc"] if p not in (ACTION_TAG, TABLE_TAG))
        message = error["msg"]
        if error["type"] == "extra_forbidden" and loc:
            owner = _model_at(model, loc[:-1])
            fields = list(owner.model_fields) if owner else []
            message = f"unknown key {loc[-1]!r}{suggest(str(loc[-1]), fields)}"
        elif error["type"] != "missing" and isinstance(error.get("input"), str | int | float):
            message += f" (got {error['input']!r})"
        problems.append(Problem((*prefix, *loc), message))
    return problems


def _is_root_model(model: type[BaseModel]) -> bool:
    # pydantic.root_model is imported only when a section needs it (it costs start-up time)
    from pydantic import RootModel

    return issubclass(model, RootModel)


def _validate(
    model: type[BaseModel], value: Any, path: KeyPath
) -> tuple[BaseModel | None, list[Problem]]:
    if not isinstance(value, dict) and not _is_root_model(model):
        return None, [Problem(path, f"expected a table, got {_type_name(value)}")]
    try:
        return model.model_validate(value), []
    except ValidationError as exc:
        return None, validation_problems(exc, model, path)


def _type_name(value: Any) -> str:
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        list: "an array",
    }.get(type(value), type(value).__name__)


@dataclass
class Claims:
    whole: dict[str, type[BaseModel]]  # "audit" -> model
    sub: dict[str, dict[str, type[BaseModel]]]  # "provider" -> {"*": model}, "tool" -> {"bash": ..}

    @classmethod
    def parse(cls, claimed: Mapping[str, type[BaseModel]]) -> Claims:
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


def check_sections(
    raw: Mapping[str, Any],
    claims: Claims,
    unloaded_plugins: Sequence[str] = (),
    installed: Collection[str] | None = None,
) -> tuple[dict[str, BaseModel], list[Problem], list[KeyPath]]:
    """Validate every non-core key: (sections, problems, unclaimed key paths). A sub-table a
    wildcard claims (``provider.*``) that does not fit the wildcard's model is left unclaimed,
    with the not-loaded warning instead of an error, when a plugin that is not loaded is named
    exactly after it (``provider_anthropic`` for ``[provider.anthropic]``), or when it is the
    section of one of hookcode's own distributions that is not ``installed``: that plugin
    would claim it literally."""
    owned_by_unloaded = {name.lower().replace("-", "_") for name in unloaded_plugins}

    def owned_elsewhere(key: str, sub: str) -> bool:
        if f"{key}_{sub}".lower() in owned_by_unloaded:
            return True
        return (
            installed is not None and missing_owner((key, sub), installed, exact=True) is not None
        )

    sections: dict[str, BaseModel] = {}
    problems: list[Problem] = []
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
                problems.append(Problem((key,), f"expected a table, got {_type_name(value)}"))
                continue
            patterns = claims.sub[key]
            for sub, subvalue in value.items():
                model = patterns.get(sub)
                if model is None and owned_elsewhere(key, sub):
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


def source_for(
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


def raise_problems(
    problems: list[Problem], provenance: Mapping[KeyPath, str], fallback: str | None
) -> None:
    located = [
        (source_for(p.path, provenance, fallback), _dotted(p.path), p.message) for p in problems
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


def section_paths(path: KeyPath, raw: Mapping[str, Any]) -> list[KeyPath]:
    """How to name an unclaimed key in a warning: a top-level table made only of tables
    (``[tool.bash]``, ``[mcp.github]``) is named by its sub-tables, anything else as is."""
    value = raw[path[0]] if len(path) == 1 else None
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        return [(*path, sub) for sub in value]
    return [path]


def possible_owners(path: KeyPath, unloaded_plugins: Sequence[str]) -> list[str]:
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


def missing_owner(path: KeyPath, installed: Collection[str], *, exact: bool = False) -> str | None:
    """The distribution of hookcode's own (:data:`OWN_SECTIONS`) that would claim the section
    at ``path`` (``("tool", "bash")``, or a whole top-level table such as ``("audit",)``) and
    is not among the ``installed`` distributions; None when there is none. With ``exact``, a
    wildcard claim (``provider.*``) does not count."""
    if len(path) > 2:
        return None
    patterns = [".".join(path)]
    if len(path) == 2 and not exact:
        patterns += [f"{path[0]}.*", str(path[0])]  # a wildcard's, or a whole table's
    for pattern in patterns:
        distribution = OWN_SECTIONS.get(pattern)
        if distribution is not None:
            return None if distribution in installed else distribution
    return None
