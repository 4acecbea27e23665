"""The ``skill`` tool: SKILL.md discovery and loading (reference/tools.md §21, agent-loop.md §10).

Discovery, in this order (a later skill with the same name overrides an earlier one, with a
warning):

1. unless ``HOOKCODE_DISABLE_EXTERNAL_SKILLS``: ``~/.claude/skills`` and ``~/.agents/skills``,
   then ``.claude/skills`` and ``.agents/skills`` in every directory from the working directory
   up to the worktree;
2. the user config directory (``~/.config/hookcode``) and every ``.hookcode/`` from the git root
   down to the working directory: ``{skill,skills}/**/SKILL.md``;
3. ``[skills] paths = [...]`` (``~`` expanded, relative to the working directory):
   ``**/SKILL.md``; a missing directory is a warning;
4. ``[skills] urls = [...]`` (http or https): ``<url>/index.json`` lists skills as
   ``{"skills": [{"name", "description", "files": [...]}]}``; each file is fetched from
   ``<url>/<name>/<file>`` into ``<data dir>/cache/skills/<name>/<file>`` unless already there,
   then that directory is scanned for ``**/SKILL.md``. A bad URL, an unreachable server, an
   error status, a body over 5 MB, an index that is not JSON or not of that shape, or a name or
   file path that would leave the cache directory is a warning, never an error.

A SKILL.md has ``---`` frontmatter (YAML, read by :mod:`hookcode.frontmatter`) with string
``name`` and ``description`` (else the skill is skipped silently). A frontmatter error is retried once with unquoted values containing ``:``
turned into block scalars; still failing, the file is skipped with a warning and a
``session.error`` event.

In a folder the user has not trusted (``hookcode trust``), the project's own skill directories
(``.claude/skills``, ``.agents/skills`` and ``.hookcode/skill(s)`` inside the worktree) are not
read, and ``[skills] paths`` and ``urls`` from the project's config are ignored: a skill tells
the model to run the scripts it bundles, and its directory is allowed for reading.

Effects: every skill directory is allowed for ``external_directory`` (``permission_defaults``),
the system prompt lists the skills the agent may load (``<available_skills>``) unless the skill
tool is disabled for it, and the tool's description lists them too (``## Available Skills``).
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode import Tool, ToolContext, ToolError, ToolResult, hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    from hookcode.runtime import Runtime

    from hookcode_tool_skill._discovery import Skill

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


#: defined in ``_discovery``, imported from there when first used
_DISCOVERY = frozenset(
    {"Discovery", "Skill", "allowed_skills", "discover", "load_skill", "parse_skill_file"}
)


def __getattr__(name: str) -> Any:
    if name in _DISCOVERY:
        from hookcode_tool_skill import _discovery

        return getattr(_discovery, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode.trust import trusted_only
    from pydantic import BaseModel, ConfigDict, Field

    class SkillsConfig(BaseModel):
        """``[skills]``: where else to look for SKILL.md files (directories, remote indexes)."""

        model_config = ConfigDict(extra="forbid")
        paths: list[str] = Field(
            default_factory=list,
            description="Directories searched for **/SKILL.md (~ expanded, relative to the "
            "working directory).",
            json_schema_extra=trusted_only(),
        )
        urls: list[str] = Field(
            default_factory=list,
            json_schema_extra=trusted_only(),
            description="Remote skill indexes (http or https): ``<url>/index.json`` lists "
            '``{"skills": [{"name", "description", "files": [...]}]}``; each file is fetched '
            "from ``<url>/<name>/<file>`` into ``<data dir>/cache/skills/<name>/`` unless "
            "already there, then searched for ``**/SKILL.md``. Failures are warnings.",
        )

    return {"skills": SkillsConfig}


# ---------------------------------------------------------------------------------------------
# per agent
# ---------------------------------------------------------------------------------------------


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
    prunable = False  # the instructions a skill loaded stay in force: never pruned

    def __init__(self, runtime: Any = None) -> None:
        super().__init__()
        self.description = INTRO + "\n" + NO_SKILLS
        self._runtime_ref = weakref.ref(runtime) if runtime is not None else None

    def _runtime(self) -> Any:
        return self._runtime_ref() if self._runtime_ref is not None else None

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
        from hookcode_tool_skill._discovery import allowed_skills

        skills = allowed_skills(runtime, agent, session_id)
        definition["description"] = describe(skills)
        props = definition.get("parameters", {}).get("properties", {})
        if "name" in props:
            props["name"]["description"] = name_description(skills)
        return definition

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        from hookcode_tool_skill._discovery import discover

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
def register_tools(register: Callable[..., None], runtime: Runtime) -> None:
    register(SkillTool(runtime))


@hookimpl
def project_code(cwd: Path, worktree: Path, env: Any) -> list[str]:
    """The project's own skills, which an untrusted folder does not offer."""
    from hookcode.trust import describe_path

    from hookcode_tool_skill._discovery import project_skill_files

    return [
        f"skill {path.parent.name!r} ({describe_path(path, worktree)})"
        if path.name == "SKILL.md"
        else f"skill directory {describe_path(path, worktree)}"
        for path in project_skill_files(cwd, worktree, env)
    ]


@hookimpl
def permission_defaults(runtime: Runtime) -> list[Any]:
    """Every skill directory (as found and as resolved) may be read without asking."""
    from hookcode.permission import Rule

    from hookcode_tool_skill._discovery import discover

    dirs: dict[str, None] = {}
    for skill in discover(runtime).skills.values():
        dirs[skill.dir.as_posix()] = None
        dirs[Path(os.path.realpath(skill.dir)).as_posix()] = None
    return [Rule("external_directory", f"{d}/*", "allow", SOURCE) for d in dirs]


@hookimpl
def system_prompt(parts: list[str], session: Any, agent: Any, runtime: Runtime) -> None:
    session_id = getattr(session, "id", None)
    ruleset = runtime.ruleset(agent.name, session_id, approvals=False)
    if ruleset.disabled("skill"):
        return
    from hookcode_tool_skill._discovery import allowed_skills

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
