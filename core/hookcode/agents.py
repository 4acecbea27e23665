"""Agents: a name, a prompt, a model, a step limit, a mode, and default permission rules.

Agents come from the ``agent`` hook (the ``policy_rules`` plugin ships build, plan, general
and explore); ``[agent.NAME]`` config is applied on top, and ``disable = true`` removes one.
Markdown files ``.hookcode/agents/NAME.md`` (and ``~/.config/hookcode/agents/NAME.md``) are
``[agent.NAME]`` tables too: YAML-style frontmatter with the same keys, the body as the prompt::

    ---
    description: Reviews diffs for bugs
    mode: subagent
    steps: 8
    permission:
      edit: deny
    ---
    You review code. Never edit files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hookcode.configfiles import project_dirs, user_config_dir

if TYPE_CHECKING:
    from hookcode.permission import Rule

__all__ = [
    "AgentSpec",
    "Mode",
    "agent_dirs",
    "load_agent_files",
    "parse_frontmatter",
    "project_dirs",
    "untrusted_agent_items",
    "user_config_dir",
]

Mode = Literal["primary", "subagent", "all", "hidden"]


@dataclass
class AgentSpec:
    """A named agent.

    ``permission`` holds the agent's DEFAULT rules; the user's ``[agent.NAME.permission]``
    rules are kept apart (they come after the plugin defaults and ``[permission]``).
    """

    name: str
    description: str = ""
    mode: Mode = "all"
    prompt: str | None = None
    model: str | None = None
    steps: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    permission: list[Rule] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    plugin: str | None = None

    def with_config(self, cfg: Any) -> AgentSpec:
        """This agent with the non-permission fields of an ``[agent.NAME]`` table applied."""
        changes = {
            key: getattr(cfg, key)
            for key in ("description", "mode", "model", "prompt", "steps", "temperature", "top_p")
            if getattr(cfg, key, None) is not None
        }
        return replace(self, **changes)


# ---------------------------------------------------------------------------------------------
# markdown agents: .hookcode/agents/*.md
# ---------------------------------------------------------------------------------------------

#: frontmatter keys of a markdown agent (the body is the prompt)
AGENT_FILE_KEYS = (
    "name",
    "description",
    "mode",
    "model",
    "prompt",
    "steps",
    "temperature",
    "top_p",
    "permission",
    "disable",
)


def agent_dirs(cwd: Path, worktree: Path, env: Mapping[str, str]) -> list[Path]:
    """Where agent files live, in order (a later file of the same name wins): the user's
    config directory, then ``.hookcode/agents`` from the git root down to the working
    directory."""
    return [user_config_dir(env) / "agents"] + [
        d / ".hookcode" / "agents" for d in project_dirs(cwd, worktree)
    ]


def load_agent_files(
    config: Any, cwd: Path, worktree: Path, env: Mapping[str, str], *, trusted: bool = False
) -> list[str]:
    """Add the agents of ``*.md`` files (YAML-style frontmatter + a prompt body) to
    ``config.core.agent``, as if each were an ``[agent.NAME]`` table; keys set in TOML config
    win over the file's. Returns warnings (a bad file is skipped, never fatal).

    Unless ``trusted``, the ``permission`` of a project's agent file is handled like that of
    its ``hookcode.toml``: allow rules are left out (listed in ``config.untrusted``), deny and
    ask rules go to ``config.tightening``."""
    from hookcode.config import AgentConfig, Tightening, split_permission
    from hookcode.configfiles import read_config_file
    from hookcode.errors import ConfigError
    from hookcode.trust import describe_path

    warnings: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    user = agent_dirs(cwd, worktree, env)[0]
    for directory in agent_dirs(cwd, worktree, env):
        if not directory.is_dir():
            continue
        untrusted = not trusted and directory != user
        for path in sorted(directory.glob("*.md")):
            try:
                # a FIFO or a dangling link named *.md is an error, never a hang
                data = read_config_file(path)
                if data is None:
                    continue
                meta, body = parse_frontmatter(data.decode("utf-8"))
            except ConfigError as exc:
                warnings.append(f"agent file {exc}; skipped")
                continue
            except (UnicodeDecodeError, ValueError) as exc:
                warnings.append(f"agent file {path}: {exc}; skipped")
                continue
            unknown = sorted(set(meta) - set(AGENT_FILE_KEYS))
            if unknown:
                warnings.append(
                    f"agent file {path}: unknown key(s) {', '.join(unknown)} (known: "
                    f"{', '.join(AGENT_FILE_KEYS)}); skipped"
                )
                continue
            name = str(meta.pop("name", None) or path.stem)
            if body.strip() and "prompt" not in meta:
                meta["prompt"] = body.strip()
            try:
                AgentConfig.model_validate(meta)
            except Exception as exc:  # pydantic's ValidationError: name the file
                first = str(exc).splitlines()
                warnings.append(f"agent file {path}: {' '.join(first[:3])}; skipped")
                continue
            if untrusted and "permission" in meta:
                kept, dropped = split_permission(meta.pop("permission"))
                if dropped:
                    config.untrusted.append(f"allow rules ({describe_path(path, worktree)})")
                if kept is not None:
                    rule_path = ("agent", name, "permission")
                    config.tightening.append(Tightening(rule_path, kept, str(path)))
            found[name] = meta
    if not found:
        return warnings
    agents = config.core.agent
    for name, meta in found.items():
        existing = agents.get(name)
        merged = dict(meta)
        if existing is not None:
            merged.update(existing.model_dump(exclude_unset=True))
        agents[name] = AgentConfig.model_validate(merged)
    return warnings


def untrusted_agent_items(cwd: Path, worktree: Path, env: Mapping[str, str]) -> list[str]:
    """The allow rules an untrusted folder's agent files would lose (for the trust prompt)."""
    from hookcode.config import Config, CoreConfig

    scratch = Config(core=CoreConfig())
    load_agent_files(scratch, cwd, worktree, env, trusted=False)
    return scratch.untrusted


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``---`` frontmatter from the body. The frontmatter is the YAML subset agent files
    use: ``key: value`` lines (strings, quoted strings, numbers, booleans, null, ``[a, b]``),
    nested mappings by indentation, and ``|`` / ``>`` block scalars. ValueError when invalid."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise ValueError("frontmatter is not closed by a '---' line")
    meta = _parse_block(lines[1:end], 0, len(lines[1:end]), 1, 1)
    return meta, "\n".join(lines[end + 1 :])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _parse_block(
    lines: list[str], start: int, stop: int, lineno: int, depth: int
) -> dict[str, Any]:
    from hookcode.configfiles import MAX_DEPTH

    if depth > MAX_DEPTH:  # a hostile file nested thousands of levels: an error, not a crash
        raise ValueError(
            f"frontmatter line {lineno + start}: nested deeper than {MAX_DEPTH} levels"
        )
    out: dict[str, Any] = {}
    i = start
    base: int | None = None
    while i < stop:
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        if "\t" in line[: _indent(line) + 1]:
            raise ValueError(f"frontmatter line {lineno + i}: tabs are not allowed for indentation")
        indent = _indent(line)
        if base is None:
            base = indent
        if indent != base:
            raise ValueError(f"frontmatter line {lineno + i}: unexpected indentation")
        key, sep, rest = line.strip().partition(":")
        if not sep or not key:
            raise ValueError(f"frontmatter line {lineno + i}: expected 'key: value'")
        key = _scalar(key.strip())
        rest = rest.strip()
        # the lines that belong to this key: more indented than it
        j = i + 1
        while j < stop and (not lines[j].strip() or _indent(lines[j]) > indent):
            j += 1
        if rest in ("|", ">", "|-", ">-"):
            block = [ln[indent + 2 :] if ln.strip() else "" for ln in lines[i + 1 : j]]
            text = "\n".join(block) if rest.startswith("|") else " ".join(b for b in block if b)
            out[str(key)] = text.strip("\n") if rest.endswith("-") else text.rstrip("\n") + "\n"
        elif rest == "":
            out[str(key)] = _parse_block(lines, i + 1, j, lineno, depth + 1) if j > i + 1 else None
        else:
            if j > i + 1 and any(lines[k].strip() for k in range(i + 1, j)):
                raise ValueError(f"frontmatter line {lineno + i + 1}: unexpected indentation")
            out[str(key)] = _scalar(rest)
        i = j
    return out


def _scalar(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else _unescape(inner)
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(x.strip()) for x in inner.split(",")] if inner else []
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("null", "~", ""):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _unescape(text: str) -> str:
    import json

    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text
