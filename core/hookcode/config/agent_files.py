"""Markdown agent files: ``.hookcode/agents/NAME.md`` (and ``~/.config/hookcode/agents/NAME.md``)
are ``[agent.NAME]`` tables too, read into the config's ``agent`` tables (keys set in TOML
config win). YAML frontmatter (:mod:`hookcode.frontmatter`) holds the same keys, the body is
the prompt::

    ---
    description: Reviews diffs for bugs
    mode: subagent
    steps: 8
    permission:
      edit: deny
    ---
    You review code. Never edit files.

The agents themselves (:class:`hookcode.agents.AgentSpec`) sit below the config and see only
the tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookcode.config.loading import Config
from hookcode.config.models import AgentConfig, CoreConfig
from hookcode.config.tightening import Tightening, split_permission
from hookcode.configfiles import project_dirs, read_config_file, user_config_dir
from hookcode.errors import ConfigError
from hookcode.frontmatter import parse_frontmatter
from hookcode.trust import describe_path

__all__ = ["AGENT_FILE_KEYS", "agent_dirs", "load_agent_files", "untrusted_agent_items"]


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
    config: Config, cwd: Path, worktree: Path, env: Mapping[str, str], *, trusted: bool = False
) -> list[str]:
    """Add the agents of ``*.md`` files (YAML frontmatter + a prompt body) to
    ``config.core.agent``, as if each were an ``[agent.NAME]`` table; keys set in TOML config
    win over the file's. Returns warnings (a bad file is skipped, never fatal).

    Unless ``trusted``, the ``permission`` of a project's agent file is handled like that of
    its ``hookcode.toml``: allow rules are left out (listed in ``config.untrusted``), deny and
    ask rules go to ``config.tightening``."""
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
    scratch = Config(core=CoreConfig())
    load_agent_files(scratch, cwd, worktree, env, trusted=False)
    return scratch.untrusted
