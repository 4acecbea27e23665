"""The ``skill`` tool: SKILL.md discovery and loading (reference/tools.md §21, agent-loop.md §10).

Discovery, in this order (a later skill with the same name overrides an earlier one, with a
warning):

1. unless ``HOOKCODE_DISABLE_EXTERNAL_SKILLS``: ``~/.claude/skills`` and ``~/.agents/skills``,
   then ``.claude/skills`` and ``.agents/skills`` in every directory from the working directory
   up to the worktree;
2. the user config directory (``~/.config/hookcode``) and every ``.hookcode/`` from the git root
   down to the working directory: ``{skill,skills}/**/SKILL.md``;
3. ``[skills] paths = [...]`` (``~`` expanded, relative to the working directory):
   ``**/SKILL.md``; a missing directory is a warning.

A SKILL.md has ``---`` frontmatter with string ``name`` and ``description`` (else the skill is
skipped silently). A frontmatter error is retried once with unquoted values containing ``:``
turned into block scalars; still failing, the file is skipped with a warning and a
``session.error`` event.

Effects: every skill directory is allowed for ``external_directory`` (``permission_defaults``),
the system prompt lists the skills the agent may load (``<available_skills>``) unless the skill
tool is disabled for it, and the tool's description lists them too (``## Available Skills``).
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookcode import Tool, ToolContext, ToolError, ToolResult, hookimpl

FILE_SAMPLE = 10
SOURCE = "plugin:tool_skill"

INTRO = """\
Load a specialized skill that provides domain-specific instructions and workflows.

When you recognize that a task matches one of the available skills listed below, use this tool \
to load the full skill instructions.

The skill will inject detailed instructions, workflows, and access to bundled resources \
(scripts, references, templates) into the conversation context.

Tool output includes a `<skill_content name="...">` block with the loaded content.

The following skills provide specialized sets of instructions for particular tasks
Invoke this tool to load a skill when a task matches one of the available skills listed below:
"""
NO_SKILLS = "No skills are currently available."


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


_cache: weakref.WeakKeyDictionary[Any, Discovery] = weakref.WeakKeyDictionary()


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, Any]:
    from pydantic import BaseModel, ConfigDict, Field

    class SkillsConfig(BaseModel):
        """``[skills]``: where else to look for SKILL.md files."""

        model_config = ConfigDict(extra="forbid")
        paths: list[str] = Field(
            default_factory=list,
            description="Directories searched for **/SKILL.md (~ expanded, relative to the "
            "working directory).",
        )

    return {"skills": SkillsConfig}


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def discover(runtime: Any) -> Discovery:
    """The runtime's skills (computed once per runtime)."""
    found = _cache.get(runtime)
    if found is None:
        found = _discover(runtime)
        _cache[runtime] = found
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


def _discover(runtime: Any) -> Discovery:
    from hookcode.agents import project_dirs, user_config_dir

    env = runtime.env
    cwd, worktree = Path(runtime.cwd), Path(runtime.worktree)
    home = _home(env)
    files: list[Path] = []
    warnings: list[str] = []
    if not env.get("HOOKCODE_DISABLE_EXTERNAL_SKILLS"):
        for base in (home / ".claude" / "skills", home / ".agents" / "skills"):
            files += _scan(base, ("**/SKILL.md",))
        for directory in _up(cwd, worktree):
            for base in (directory / ".claude" / "skills", directory / ".agents" / "skills"):
                files += _scan(base, ("**/SKILL.md",))
    config_dirs = [user_config_dir(env)] + [d / ".hookcode" for d in project_dirs(cwd, worktree)]
    for base in config_dirs:
        files += _scan(base, ("skill/**/SKILL.md", "skills/**/SKILL.md"))
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
    from hookcode.agents import parse_frontmatter

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


def describe(skills: list[Skill]) -> str:
    if not skills:
        return INTRO + "\n" + NO_SKILLS
    lines = ["## Available Skills"] + [f"- **{s.name}**: {s.description}" for s in skills]
    return INTRO + "\n" + "\n".join(lines)


def name_description(skills: list[Skill]) -> str:
    examples = ", ".join(f"'{s.name}'" for s in skills[:3])
    hint = f" (e.g., {examples}, ...)" if examples else ""
    return f"The name of the skill from available_skills{hint}"


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def sample_files(directory: Path, limit: int = FILE_SAMPLE) -> list[str]:
    """Up to ``limit`` files of the skill's directory (hidden included, SKILL.md excluded)."""
    out: list[str] = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        for name in sorted(names):
            if "SKILL.md" in name:
                continue
            out.append(os.path.join(root, name))
            if len(out) >= limit:
                return out
    return out


class SkillTool(Tool):
    name = "skill"
    asks_permission = True  # asks `skill` with the skill's name

    def __init__(self, runtime: Any = None) -> None:
        super().__init__()
        self.description = INTRO + "\n" + NO_SKILLS
        self._runtime_ref = weakref.ref(runtime) if runtime is not None else None

    def _runtime(self) -> Any:
        from hookcode.plugins import current_runtime

        runtime = current_runtime()
        if runtime is None and self._runtime_ref is not None:
            runtime = self._runtime_ref()
        return runtime

    def _build_model(self) -> Any:
        from pydantic import BaseModel, ConfigDict, Field

        class SkillArgs(BaseModel):
            model_config = ConfigDict(extra="forbid")
            name: str = Field(description=name_description([]))

        self.Args = SkillArgs  # type: ignore[misc]
        return SkillArgs

    def definition_for(
        self, agent: str, session_id: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        """The definition as ``agent`` sees it: the skills its ``skill`` rules allow."""
        import copy

        definition = copy.deepcopy(self.definition())
        runtime = self._runtime()
        if runtime is None:
            return definition
        skills = allowed_skills(runtime, agent, session_id)
        definition["description"] = describe(skills)
        props = definition.get("parameters", {}).get("properties", {})
        if "name" in props:
            props["name"]["description"] = name_description(skills)
        return definition

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        skills = discover(ctx.runtime).skills
        skill = skills.get(args.name)
        if skill is None:
            available = ", ".join(skills) or "none"
            raise ToolError(f'Skill "{args.name}" not found. Available skills: {available}')
        await ctx.ask("skill", [skill.name], [skill.name], {"name": skill.name})
        directory = skill.dir
        files = "\n".join(f"<file>{f}</file>" for f in sample_files(directory))
        output = "\n".join(
            [
                f'<skill_content name="{skill.name}">',
                f"# Skill: {skill.name}",
                "",
                skill.body.strip(),
                "",
                f"Base directory for this skill: {directory.as_uri()}",
                "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
                "base directory.",
                "Note: file list is sampled.",
                "",
                "<skill_files>",
                files,
                "</skill_files>",
                "</skill_content>",
            ]
        )
        return ToolResult(
            title=f"Loaded skill: {skill.name}",
            output=output,
            metadata={"name": skill.name, "dir": str(directory)},
        )


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------


@hookimpl
def tool() -> list[Any]:
    from hookcode.plugins import current_runtime

    return [SkillTool(current_runtime())]


@hookimpl
def permission_defaults(agent: Any, config: Any) -> list[Any]:
    """Every skill directory (as found and as resolved) may be read without asking."""
    from hookcode.permission import Rule
    from hookcode.plugins import current_runtime

    runtime = current_runtime()
    if runtime is None:
        return []
    dirs: dict[str, None] = {}
    for skill in discover(runtime).skills.values():
        dirs[skill.dir.as_posix()] = None
        dirs[Path(os.path.realpath(skill.dir)).as_posix()] = None
    return [Rule("external_directory", f"{d}/*", "allow", SOURCE) for d in dirs]


@hookimpl
def system_prompt(parts: list[str], session: Any, agent: Any, model: str) -> None:
    from hookcode.plugins import current_runtime

    runtime = current_runtime()
    if runtime is None:
        return
    session_id = getattr(session, "id", None)
    ruleset = runtime.ruleset(agent.name, session_id, approvals=False)
    if ruleset.disabled("skill"):
        return
    skills = allowed_skills(runtime, agent.name, session_id)
    if not skills:
        return
    entries = "\n".join(
        "  <skill>\n"
        f"    <name>{_xml(s.name)}</name>\n"
        f"    <description>{_xml(s.description)}</description>\n"
        f"    <location>{s.location.as_uri()}</location>\n"
        "  </skill>"
        for s in skills
    )
    parts.append(
        "Skills provide specialized instructions and workflows for specific tasks.\n"
        "Use the skill tool to load a skill when a task matches its description.\n"
        f"<available_skills>\n{entries}\n</available_skills>"
    )
