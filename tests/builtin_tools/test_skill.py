"""The skill tool (reference/tools.md §21) and skill discovery (agent-loop.md §10)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hookcode import hookimpl
from hookcode.session import run_session
from hookcode.testing import ReplyWith, ScriptedModel, invoke_tool
from hookcode_tool_skill import INTRO, NO_SKILLS

PLUGINS = "policy_rules,tool_skill,tool_read"


def skill(root: Path, name: str, description: str = "does things", body: str = "Do it.") -> Path:
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"
    )
    return directory


def runtime(env, **extra):
    return env.runtime(HOOKCODE_LOAD_PLUGINS=PLUGINS, **extra)


def description(rt, agent="build") -> str:
    (definition,) = [d for d in rt.registry.definitions(agent) if d["name"] == "skill"]
    return definition["description"]


def test_loading_a_skill_gives_body_base_directory_and_files(hookcode_env):
    directory = skill(
        hookcode_env.project / ".hookcode" / "skills", "deploy", "Ship it", "# Steps\n\nRun make."
    )
    (directory / "scripts").mkdir()
    (directory / "scripts" / "run.sh").write_text("echo")
    (directory / ".hidden").write_text("x")
    rt = runtime(hookcode_env)

    outcome = invoke_tool(rt, "skill", {"name": "deploy"})

    assert outcome.error is None, outcome.error_text
    assert outcome.result.output == "\n".join(
        [
            '<skill_content name="deploy">',
            "# Skill: deploy",
            "",
            "# Steps\n\nRun make.",
            "",
            f"Base directory for this skill: {directory.as_uri()}",
            "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
            "base directory.",
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            f"<file>{directory / '.hidden'}</file>",
            f"<file>{directory / 'scripts' / 'run.sh'}</file>",
            "</skill_files>",
            "</skill_content>",
        ]
    )
    assert outcome.result.title == "Loaded skill: deploy"
    assert outcome.result.metadata["name"] == "deploy"
    assert outcome.result.metadata["dir"] == str(directory)


def test_at_most_ten_files_are_listed(hookcode_env):
    directory = skill(hookcode_env.project / ".hookcode" / "skill", "many")
    for i in range(15):
        (directory / f"f{i:02}.txt").write_text("x")
    rt = runtime(hookcode_env)
    output = invoke_tool(rt, "skill", {"name": "many"}).result.output
    assert output.count("<file>") == 10
    assert "SKILL.md</file>" not in output


def test_unknown_skill_names_the_available_ones(hookcode_env):
    skill(hookcode_env.project / ".hookcode" / "skills", "alpha")
    skill(hookcode_env.project / ".hookcode" / "skills", "beta")
    rt = runtime(hookcode_env)
    outcome = invoke_tool(rt, "skill", {"name": "gamma"})
    assert outcome.error_text == 'Skill "gamma" not found. Available skills: alpha, beta'


def test_unknown_skill_with_none_available(hookcode_env):
    rt = runtime(hookcode_env)
    outcome = invoke_tool(rt, "skill", {"name": "x"})
    assert outcome.error_text == 'Skill "x" not found. Available skills: none'
    assert description(rt) == INTRO + "\n" + NO_SKILLS


def test_description_lists_skills_the_agent_may_load(hookcode_env):
    base = hookcode_env.project / ".hookcode" / "skills"
    skill(base, "alpha", "First one")
    skill(base, "secret", "Hidden one")
    hookcode_env.write_config('[permission.skill]\n"*" = "allow"\n"secret" = "deny"\n')
    rt = runtime(hookcode_env)

    text = description(rt)

    assert text.endswith("## Available Skills\n- **alpha**: First one")
    assert "secret" not in text
    (definition,) = [d for d in rt.registry.definitions("build") if d["name"] == "skill"]
    assert definition["parameters"]["properties"]["name"]["description"] == (
        "The name of the skill from available_skills (e.g., 'alpha', ...)"
    )
    denied = invoke_tool(rt, "skill", {"name": "secret"})
    assert denied.error is not None and "prevents you from using" in denied.error_text


def test_loading_asks_skill_with_the_name(hookcode_env):
    skill(hookcode_env.project / ".hookcode" / "skills", "alpha")
    hookcode_env.write_config('[permission]\nskill = "ask"\n')
    front = ReplyWith("once")
    hookcode_env.register(front, "front")
    rt = runtime(hookcode_env)
    outcome = invoke_tool(rt, "skill", {"name": "alpha"})
    assert outcome.error is None, outcome.error_text
    (request,) = front.requests
    assert (request.permission, request.patterns, request.always) == ("skill", ["alpha"], ["alpha"])


def test_broken_frontmatter_is_skipped_with_a_warning_event(hookcode_env, capsys):
    base = hookcode_env.project / ".hookcode" / "skills"
    skill(base, "good")
    bad = base / "bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: bad\ndescription: never closed\n\nbody\n")
    rt = runtime(hookcode_env)
    events = []
    rt.events.subscribe(events.append)

    outcome = invoke_tool(rt, "skill", {"name": "bad"})

    assert outcome.error_text == 'Skill "bad" not found. Available skills: good'
    errors = [e for e in events if e.type == "session.error"]
    assert len(errors) == 1
    assert "frontmatter is invalid" in errors[0].properties["error"]
    assert str(bad / "SKILL.md") in errors[0].properties["error"]
    assert "frontmatter is invalid" in capsys.readouterr().err


def test_colon_values_are_retried_as_block_scalars(hookcode_env):
    base = hookcode_env.project / ".hookcode" / "skills" / "colon"
    base.mkdir(parents=True)
    # the continuation line makes the first parse fail; the retry reads a block scalar
    (base / "SKILL.md").write_text(
        "---\nname: colon\ndescription: Use when: deploying\n  to production\n---\nBody\n"
    )
    rt = runtime(hookcode_env)
    assert "- **colon**: Use when: deploying\nto production" in description(rt)


def test_name_and_description_must_be_strings_else_skipped_silently(hookcode_env, capsys):
    base = hookcode_env.project / ".hookcode" / "skills" / "num"
    base.mkdir(parents=True)
    (base / "SKILL.md").write_text("---\nname: 42\ndescription: number name\n---\nBody\n")
    nodesc = hookcode_env.project / ".hookcode" / "skills" / "nodesc"
    nodesc.mkdir()
    (nodesc / "SKILL.md").write_text("---\nname: nodesc\n---\nBody\n")
    rt = runtime(hookcode_env)
    assert description(rt) == INTRO + "\n" + NO_SKILLS
    assert "skill" not in capsys.readouterr().err


def test_discovery_order_and_overrides(hookcode_env, capsys):
    home, project = hookcode_env.home, hookcode_env.project
    skill(home / ".claude" / "skills", "shared", "from claude home")
    skill(home / ".agents" / "skills", "agents-home", "from agents home")
    skill(project / ".claude" / "skills", "claude-proj", "from project claude")
    skill(hookcode_env.config_dir / "hookcode" / "skills", "user", "from user config")
    skill(project / ".hookcode" / "skills", "shared", "from project hookcode")
    extra = hookcode_env.root / "extra"
    skill(extra, "configured", "from paths")
    hookcode_env.write_config(f'[skills]\npaths = ["{extra}", "missing-dir"]\n')
    rt = runtime(hookcode_env)

    text = description(rt)

    listed = [line for line in text.splitlines() if line.startswith("- **")]
    assert listed == [
        "- **agents-home**: from agents home",
        "- **claude-proj**: from project claude",
        "- **user**: from user config",
        "- **shared**: from project hookcode",
        "- **configured**: from paths",
    ]
    err = capsys.readouterr().err
    assert "skill 'shared'" in err and "overrides" in err
    assert "missing-dir" in err and "not a directory" in err


def test_external_skills_can_be_disabled(hookcode_env):
    skill(hookcode_env.home / ".claude" / "skills", "ext")
    skill(hookcode_env.project / ".agents" / "skills", "ext2")
    skill(hookcode_env.project / ".hookcode" / "skills", "own")
    rt = runtime(hookcode_env, HOOKCODE_DISABLE_EXTERNAL_SKILLS="1")
    listed = [line for line in description(rt).splitlines() if line.startswith("- **")]
    assert listed == ["- **own**: does things"]


def test_claude_skills_from_cwd_up_to_the_worktree(hookcode_env):
    import subprocess

    project = hookcode_env.project
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    sub = project / "pkg" / "sub"
    sub.mkdir(parents=True)
    skill(project / ".claude" / "skills", "top")
    skill(project / "pkg" / ".claude" / "skills", "middle")
    skill(project / "pkg" / "sub" / ".agents" / "skills", "deep")
    skill(project / "pkg" / "sub" / ".hookcode" / "skills", "deep-config")
    rt = hookcode_env.runtime(cwd=sub, HOOKCODE_LOAD_PLUGINS=PLUGINS)
    listed = [line.split("**")[1] for line in description(rt).splitlines() if "- **" in line]
    assert listed == ["deep", "middle", "top", "deep-config"]


def test_skill_directory_outside_the_project_is_readable_without_asking(hookcode_env):
    directory = skill(hookcode_env.home / ".claude" / "skills", "outside")
    (directory / "ref.md").write_text("reference text\n")
    elsewhere = hookcode_env.root / "elsewhere.txt"
    elsewhere.write_text("no\n")
    rt = runtime(hookcode_env)  # headless: an ask would be rejected

    loaded = invoke_tool(rt, "skill", {"name": "outside"})
    read = invoke_tool(rt, "read", {"filePath": str(directory / "ref.md")})
    other = invoke_tool(rt, "read", {"filePath": str(elsewhere)})

    assert loaded.error is None, loaded.error_text
    assert read.error is None, read.error_text
    assert "reference text" in read.result.output
    assert other.error is not None  # other outside paths still ask (and headless rejects)
    rules = [r for r in rt.ruleset("build").rules if r.source == "plugin:tool_skill"]
    assert any(r.pattern == f"{directory.as_posix()}/*" for r in rules)


def test_system_prompt_lists_the_skills_unless_the_tool_is_disabled(hookcode_env):
    directory = skill(hookcode_env.project / ".hookcode" / "skills", "alpha", "A & B")
    model = ScriptedModel(["ok", "ok"], id="script")

    class Pack:
        @hookimpl
        def provider(self):
            return [model]

    hookcode_env.register(Pack(), "pack")
    rt = runtime(hookcode_env)
    asyncio.run(run_session(rt, "hi", model="script/test"))
    system = "\n".join(model.requests[0].system)
    assert (
        "<available_skills>\n  <skill>\n    <name>alpha</name>\n"
        "    <description>A &amp; B</description>\n"
        f"    <location>{(directory / 'SKILL.md').as_uri()}</location>\n"
        "  </skill>\n</available_skills>"
    ) in system

    hookcode_env.write_config('[permission]\nskill = "deny"\n')
    rt2 = runtime(hookcode_env)
    asyncio.run(run_session(rt2, "hi", model="script/test"))
    assert "<available_skills>" not in "\n".join(model.requests[1].system)
    assert "skill" not in {t["name"] for t in model.requests[1].tools}
