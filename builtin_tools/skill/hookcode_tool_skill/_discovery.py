"""Skill discovery: the SKILL.md files a runtime sees, parsed (see the package's docstring).

Imported when the skills are first needed (the tool runs, a system prompt or the permission
defaults are built), so that loading the plugin at start-up defines no dataclass. Discovery
runs once per runtime, in this order:

1. ``~/.claude/skills``, ``~/.agents/skills``, then ``.claude/skills`` and ``.agents/skills``
   from the working directory up to the worktree (unless ``HOOKCODE_DISABLE_EXTERNAL_SKILLS``);
2. ``{skill,skills}/**/SKILL.md`` in the user config directory and every ``.hookcode/``;

(the project's own directories of 1. and 2. only when the folder is trusted: a skill tells
the model to run the scripts it bundles);
3. ``[skills] paths``;
4. ``[skills] urls``: each index's skills fetched into ``<data dir>/cache/skills/<name>/``
   (``_remote``, which imports httpx, is imported only then), then scanned like a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookcode.stash import StashKey


@dataclass
class Skill:
    name: str
    description: str
    location: Path  # the SKILL.md
    body: str

    @property
    def dir(self) -> Path:
        return self.location.parent


@dataclass
class Discovery:
    skills: dict[str, Skill]
    warnings: list[str]


#: the runtime's skills, found on first use
_DISCOVERY = StashKey[Discovery]()


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def discover(runtime: Any) -> Discovery:
    """The runtime's skills (computed once per runtime)."""
    found = runtime.stash.get(_DISCOVERY, None)
    if found is None:
        found = runtime.stash[_DISCOVERY] = _discover(runtime)
        for line in found.warnings:
            runtime.plugins.warn(line)
    return found


def _home(env: Any) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def _up(cwd: Path, worktree: Path) -> list[Path]:
    """The working directory, then its parents up to the worktree (just cwd if outside it)."""
    from hookcode.agents import project_dirs

    return list(reversed(project_dirs(cwd, worktree)))


def _scan(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    if not root.is_dir():
        return []
    out: list[Path] = []
    for pattern in patterns:
        out += sorted(p for p in root.glob(pattern) if p.is_file())
    return out


_EXTERNAL = ("**/SKILL.md",)
_CONFIG = ("skill/**/SKILL.md", "skills/**/SKILL.md")


def _bases(cwd: Path, worktree: Path, env: Any) -> list[tuple[Path, tuple[str, ...], bool]]:
    """Every skill root in discovery order: (directory, glob patterns, whether it is the
    project's own)."""
    from hookcode.agents import project_dirs, user_config_dir

    home = _home(env)
    bases: list[tuple[Path, tuple[str, ...], bool]] = []
    if not env.get("HOOKCODE_DISABLE_EXTERNAL_SKILLS"):
        bases += [(home / ".claude" / "skills", _EXTERNAL, False)]
        bases += [(home / ".agents" / "skills", _EXTERNAL, False)]
        for directory in _up(cwd, worktree):
            for name in (".claude", ".agents"):
                bases.append((directory / name / "skills", _EXTERNAL, True))
    bases.append((user_config_dir(env), _CONFIG, False))
    bases += [(d / ".hookcode", _CONFIG, True) for d in project_dirs(cwd, worktree)]
    # a project directory that is also the user's (hookcode run in ~) is the user's
    mine = {base for base, _, project in bases if not project}
    return [(b, patterns, project and b not in mine) for b, patterns, project in bases]


#: how far the untrusted listing looks (it runs before the user is asked anything: a hostile
#: repository's ``.claude/skills -> /`` must not walk the whole disk)
LISTING_DEPTH = 4
LISTING_DIRS = 2000


def project_skill_files(cwd: Path, worktree: Path, env: Any) -> list[Path]:
    """The project's own skill directories and SKILL.md files, for an untrusted folder: a
    skill root that leads outside the worktree is named itself, never walked; inside, the
    walk follows no link and stops at :data:`LISTING_DEPTH` levels and :data:`LISTING_DIRS`
    directories."""
    found: list[Path] = []
    real_worktree = Path(os.path.realpath(worktree))
    for base, patterns, project in _bases(cwd, worktree, env):
        if not project or not base.is_dir():
            continue
        real = Path(os.path.realpath(base))
        if real != real_worktree and real_worktree not in real.parents:
            found.append(base)  # a link out of the project: named, not walked
            continue
        subdirs = ("",) if patterns == _EXTERNAL else ("skill", "skills")
        for sub in subdirs:
            found += _bounded_walk(base / sub if sub else base)
    return found


def _bounded_walk(root: Path) -> list[Path]:
    out: list[Path] = []
    if root.is_symlink() or not root.is_dir():
        return out
    # os.walk follows no link by default
    for visited, (directory, dirs, names) in enumerate(os.walk(root), 1):
        depth = len(Path(directory).relative_to(root).parts)
        if depth >= LISTING_DEPTH or visited >= LISTING_DIRS:
            dirs.clear()
        dirs.sort()
        if "SKILL.md" in names:
            out.append(Path(directory) / "SKILL.md")
    return sorted(out)


def _discover(runtime: Any) -> Discovery:
    env = runtime.env
    cwd = Path(runtime.cwd)
    home = _home(env)
    files: list[Path] = []
    warnings: list[str] = []
    for base, patterns, project in _bases(cwd, Path(runtime.worktree), env):
        # the project's skills (instructions to run its scripts) only in a trusted folder
        if not project or runtime.trusted:
            files += _scan(base, patterns)
    section = runtime.config.section("skills")
    for raw in getattr(section, "paths", None) or []:
        path = Path(raw[2:] if raw.startswith("~/") else raw)
        path = (
            home / path
            if raw.startswith("~/")
            else (cwd / path if not path.is_absolute() else path)
        )
        if not path.is_dir():
            warnings.append(f"skills: configured path {raw} ({path}) is not a directory")
            continue
        files += _scan(path, ("**/SKILL.md",))
    urls = getattr(section, "urls", None) or []
    if urls:
        from hookcode_tool_skill._remote import pull

        cache = Path(runtime.data_dir) / "cache" / "skills"
        for url in urls:
            for directory in pull(url, cache, warnings):
                files += _scan(directory, ("**/SKILL.md",))

    skills: dict[str, Skill] = {}
    seen: set[Path] = set()
    for location in files:
        location = Path(os.path.abspath(location))
        if location in seen:
            continue
        seen.add(location)
        skill = load_skill(location, runtime, warnings)
        if skill is None:
            continue
        previous = skills.pop(skill.name, None)
        if previous is not None:
            warnings.append(
                f"skill {skill.name!r} of {location} overrides the one of {previous.location}"
            )
        skills[skill.name] = skill
    return Discovery(skills, warnings)


_COLON_VALUE = re.compile(r"^(\s*)([^\s:#][^:]*?):[ \t]+(.*:.*)$")


def _block_scalars(text: str) -> str:
    """The frontmatter with unquoted values that contain ``:`` turned into block scalars."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return text
    out = [lines[0]]
    i = 1
    while i < len(lines) and lines[i].strip() != "---":
        match = _COLON_VALUE.match(lines[i])
        value = match.group(3).strip() if match else ""
        if match and value and value[0] not in "\"'|>[{":
            indent = match.group(1)
            out += [f"{indent}{match.group(2)}: |-", f"{indent}  {value}"]
        else:
            out.append(lines[i])
        i += 1
    return "\n".join(out + lines[i:])


def parse_skill_file(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body); ValueError when the frontmatter is broken even after the retry."""
    from hookcode.frontmatter import parse_frontmatter

    try:
        return parse_frontmatter(text)
    except ValueError as first:
        fixed = _block_scalars(text)
        if fixed != text:
            try:
                return parse_frontmatter(fixed)
            except ValueError:
                pass
        raise first from None


def load_skill(location: Path, runtime: Any, warnings: list[str]) -> Skill | None:
    try:
        text = location.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        warnings.append(f"skill {location} could not be read: {exc.strerror or exc}")
        return None
    try:
        meta, body = parse_skill_file(text)
    except ValueError as exc:
        message = f"skill {location} skipped: its frontmatter is invalid ({exc})"
        warnings.append(message)
        runtime.events.publish("session.error", error=message, source="skill", path=str(location))
        return None
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        return None  # the reference skips these silently
    return Skill(name=name, description=description, location=location, body=body)


# ---------------------------------------------------------------------------------------------
# per agent
# ---------------------------------------------------------------------------------------------


def allowed_skills(runtime: Any, agent: str, session_id: str | None = None) -> list[Skill]:
    """The skills whose ``skill`` rules do not deny them for ``agent``."""
    skills = list(discover(runtime).skills.values())
    if not skills:
        return []
    ruleset = runtime.ruleset(agent, session_id, approvals=False)
    return [s for s in skills if ruleset.evaluate("skill", [s.name]).action != "deny"]
