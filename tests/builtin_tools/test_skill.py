"""The skill tool (reference/tools.md §21) and skill discovery (agent-loop.md §10)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookcode import hookimpl
from hookcode.session import run_session
from hookcode.testing import ReplyWith, ScriptedModel, invoke_tool
from hookcode_tool_skill import INTRO, NO_SKILLS, discover
from http_fakes import FakeServer, Handler, reply

PLUGINS = "policy_rules,tool_skill,tool_read"
JSON = "application/json"


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


def test_frontmatter_nested_thousands_of_levels_is_skipped_with_a_warning(hookcode_env, capsys):
    base = hookcode_env.project / ".hookcode" / "skills"
    skill(base, "good")
    deep = base / "deep"
    deep.mkdir()
    nested = [" " * i + f"k{i}:" for i in range(5000)]
    (deep / "SKILL.md").write_text("\n".join(["---", "name: deep", *nested, "---", "body"]))
    rt = runtime(hookcode_env)
    assert sorted(discover(rt).skills) == ["good"]
    assert "nested deeper than 64 levels" in capsys.readouterr().err


def test_skill_frontmatter_is_yaml(hookcode_env):
    base = hookcode_env.project / ".hookcode" / "skills" / "yaml"
    base.mkdir(parents=True)
    (base / "SKILL.md").write_text(
        "---\nname: &n yaml\ndescription: >-\n  Folded over\n  two lines\n"
        "metadata: {tags: [a, b], owner: *n}\nallowed-tools:\n  - read\n  - grep\n---\nBody\n"
    )
    rt = runtime(hookcode_env)
    assert "- **yaml**: Folded over two lines" in description(rt)


#: a billion laughs: ten levels of ten aliases each
BOMB = "\n".join(
    ["---", "name: bomb", "description: boom", "l0: &l0 lol"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    + ["---", "body"]
).encode()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"---\nname: junk\ndescription: \x00\x01\xff\xfe\n---\n", "unacceptable character"),
        (b"---\n- name\n- description\n---\n", "expected 'key: value' lines, found a list"),
        (BOMB, "its aliases expand it"),
    ],
)
def test_skill_junk_is_skipped_with_a_warning_naming_it(hookcode_env, capsys, content, why):
    base = hookcode_env.project / ".hookcode" / "skills"
    skill(base, "good")
    (base / "junk").mkdir()
    (base / "junk" / "SKILL.md").write_bytes(content)
    rt = runtime(hookcode_env)
    assert sorted(discover(rt).skills) == ["good"]
    err = capsys.readouterr().err
    assert f"skill {base / 'junk' / 'SKILL.md'} skipped: its frontmatter is invalid" in err
    assert why in err


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


# ---------------------------------------------------------------------------------------------
# [skills] urls: remote indexes, served by a real local HTTP server
# ---------------------------------------------------------------------------------------------

MB = 1024 * 1024


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def publish(server: FakeServer, prefix: str, skills: dict[str, dict[str, str]]) -> str:
    """Serve ``<prefix>/index.json`` listing ``skills`` ({name: {file: content}}) and each file
    under ``<prefix>/<name>/<file>``; returns the index's base URL (no trailing slash)."""
    index = {
        "skills": [
            {"name": name, "description": f"{name} from {prefix}", "files": list(files)}
            for name, files in skills.items()
        ]
    }
    server.route(f"{prefix}/index.json", reply(200, json.dumps(index), content_type=JSON))
    for name, files in skills.items():
        for file, content in files.items():
            server.route(f"{prefix}/{name}/{file}", reply(200, content))
    return server.url(prefix)


def skill_md(name: str, description: str = "does things", body: str = "Do it.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def with_urls(env, *urls: str, extra: str = "") -> None:
    env.write_config(f"[skills]\nurls = {json.dumps(list(urls))}\n{extra}")


def cache_of(env) -> Path:
    return env.data_dir / "cache" / "skills"


def listed(rt) -> list[str]:
    return [line for line in description(rt).splitlines() if line.startswith("- **")]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("slash", ["", "/"], ids=["no-trailing-slash", "trailing-slash"])
def test_skills_from_a_url_are_listed_and_loadable(hookcode_env, server, slash):
    base = publish(
        server,
        "/pack",
        {
            "deploy": {
                "SKILL.md": skill_md("deploy", "Ship it", "# Steps\n\nRun make."),
                "scripts/run.sh": "echo run\n",
            },
            "review": {"SKILL.md": skill_md("review", "Read the diff")},
        },
    )
    skill(hookcode_env.project / ".hookcode" / "skills", "local", "from the project")
    with_urls(hookcode_env, base + slash)
    rt = runtime(hookcode_env)

    assert listed(rt) == [
        "- **local**: from the project",
        "- **deploy**: Ship it",
        "- **review**: Read the diff",
    ]
    outcome = invoke_tool(rt, "skill", {"name": "deploy"})

    assert outcome.error is None, outcome.error_text
    directory = cache_of(hookcode_env) / "deploy"
    assert outcome.result.metadata["dir"] == str(directory)
    output = outcome.result.output
    assert "# Steps\n\nRun make." in output
    assert f"Base directory for this skill: {directory.as_uri()}" in output
    assert f"<file>{directory / 'scripts' / 'run.sh'}</file>" in output
    assert (directory / "scripts" / "run.sh").read_text() == "echo run\n"
    # a cache in the data directory: private like the rest of it
    assert (directory / "scripts" / "run.sh").stat().st_mode & 0o777 == 0o600
    assert (directory / "scripts").stat().st_mode & 0o777 == 0o700
    assert files_under(cache_of(hookcode_env)) == {
        "deploy/SKILL.md",
        "deploy/scripts/run.sh",
        "review/SKILL.md",
    }
    assert [r.path for r in server.seen("/pack/index.json")] == ["/pack/index.json"]
    assert discover(rt).warnings == []


def test_files_already_in_the_cache_are_not_downloaded_again(hookcode_env, server):
    base = publish(
        server,
        "/pack",
        {"deploy": {"SKILL.md": skill_md("deploy"), "ref.md": "reference\n"}},
    )
    with_urls(hookcode_env, base)

    assert "deploy" in discover(runtime(hookcode_env)).skills
    assert "deploy" in discover(runtime(hookcode_env)).skills  # a second run: cache hits
    (cache_of(hookcode_env) / "deploy" / "ref.md").unlink()
    assert "deploy" in discover(runtime(hookcode_env)).skills  # only the missing file again

    assert len(server.seen("/pack/index.json")) == 3  # the index is read by every runtime
    assert len(server.seen("/pack/deploy/SKILL.md")) == 1
    assert len(server.seen("/pack/deploy/ref.md")) == 2
    assert (cache_of(hookcode_env) / "deploy" / "ref.md").read_text() == "reference\n"


def _unreachable() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/skills"


BROKEN_INDEXES = {
    "404": (lambda s: s.url("/missing"), "the server answered 404"),
    "not-json": (
        lambda s: (s.route("/html/index.json", reply(200, "<html>no</html>")), s.url("/html"))[1],
        "it is not JSON",
    ),
    "a-list": (
        lambda s: (s.route("/list/index.json", reply(200, "[]")), s.url("/list"))[1],
        'expected an object {"skills": [{"name", "description", "files": [...]}]}',
    ),
    "skills-not-a-list": (
        lambda s: (
            s.route("/obj/index.json", reply(200, '{"skills": {"name": "x"}}')),
            s.url("/obj"),
        )[1],
        'expected an object {"skills": [{"name", "description", "files": [...]}]}',
    ),
    "too-deep": (
        lambda s: (
            s.route("/deep/index.json", reply(200, "[" * 100_000 + "]" * 100_000)),
            s.url("/deep"),
        )[1],
        "it is nested too deeply",
    ),
    "too-large": (
        lambda s: (
            s.route("/big/index.json", reply(200, b" " * (5 * MB + 1), content_type=JSON)),
            s.url("/big"),
        )[1],
        "larger than the 5 MB limit",
    ),
    "unreachable": (lambda s: _unreachable(), "request failed"),
    "not-http": (lambda s: "ftp://127.0.0.1/skills", "only http:// and https:// URLs"),
    "not-a-url": (lambda s: "skills.example.com", "only http:// and https:// URLs"),
    "bad-ipv6": (lambda s: "http://[::1/skills", "it is not a valid URL"),
}


@pytest.mark.parametrize("case", list(BROKEN_INDEXES))
def test_a_broken_index_is_a_warning_and_other_skills_are_still_found(
    hookcode_env, server, capsys, case
):
    make_url, cause = BROKEN_INDEXES[case]
    bad = make_url(server)
    good = publish(server, "/good", {"remote": {"SKILL.md": skill_md("remote", "from a url")}})
    skill(hookcode_env.project / ".hookcode" / "skills", "local", "from the project")
    with_urls(hookcode_env, bad, good)
    rt = runtime(hookcode_env)

    assert listed(rt) == ["- **local**: from the project", "- **remote**: from a url"]
    (warning,) = discover(rt).warnings
    assert bad in warning and cause in warning
    assert cause in capsys.readouterr().err
    assert invoke_tool(rt, "skill", {"name": "remote"}).error is None


def test_a_large_index_without_a_length_is_cut_off_while_streaming(hookcode_env, server):
    def endless(h: Handler) -> None:
        h.head(200, content_type=JSON)  # no Content-Length: the size shows only as it comes
        h.stream(b"[" + b" " * (64 * 1024 - 1) for _ in range(200))

    server.route("/stream/index.json", endless)
    with_urls(hookcode_env, server.url("/stream"))
    rt = runtime(hookcode_env)

    (warning,) = discover(rt).warnings
    assert "/stream/index.json" in warning and "larger than the 5 MB limit" in warning
    assert server.sent("/stream/index.json") < 200 * 64 * 1024


def test_wrongly_shaped_entries_are_skipped_with_a_warning(hookcode_env, server):
    index = {
        "skills": [
            42,
            {"name": 7, "files": ["SKILL.md"]},
            {"name": "nofiles", "files": "SKILL.md"},
            {"name": "nomd", "files": ["notes.txt"]},
            {"name": "good", "description": "fine", "files": ["SKILL.md", 3, None]},
        ]
    }
    server.route("/pack/index.json", reply(200, json.dumps(index), content_type=JSON))
    server.route("/pack/good/SKILL.md", reply(200, skill_md("good", "fine")))
    server.route("/pack/nomd/notes.txt", reply(200, "notes"))
    with_urls(hookcode_env, server.url("/pack"))
    rt = runtime(hookcode_env)

    assert listed(rt) == ["- **good**: fine"]
    index_url = server.url("/pack/index.json")
    shape = 'skipped: expected {"name": string, "files": [string, ...]}'
    assert discover(rt).warnings == [
        f"skills: index {index_url}, entry 0 {shape}",
        f"skills: index {index_url}, entry 1 {shape}",
        f"skills: index {index_url}, entry 2 {shape}",
        f"skills: index {index_url}, skill 'nomd' lists no SKILL.md",
        f"skills: index {index_url}, skill 'good': file entry 3 skipped: not a string",
        f"skills: index {index_url}, skill 'good': file entry None skipped: not a string",
    ]
    assert files_under(cache_of(hookcode_env)) == {"good/SKILL.md", "nomd/notes.txt"}


def test_unsafe_names_and_file_paths_are_refused_and_nothing_is_written_outside(
    hookcode_env, server
):
    outside = hookcode_env.root / "outside.txt"
    refused = [
        "../escaped.txt",
        "sub/../../escaped2.txt",
        "..",
        str(outside),
        "/etc/hookcode-test.txt",
        "sub\\..\\x.txt",
        "C:/x.txt",
        "a//b.txt",
    ]
    index = {
        "skills": [
            {"name": "../escape", "files": ["SKILL.md"]},
            {"name": "..", "files": ["SKILL.md"]},
            {"name": "a\\b", "files": ["SKILL.md"]},
            {"name": "/abs", "files": ["SKILL.md"]},
            {"name": "", "files": ["SKILL.md"]},
            {
                "name": "good",
                "files": ["SKILL.md", *refused, "docs/ok.md"],
            },
        ]
    }
    server.route("/pack/index.json", reply(200, json.dumps(index), content_type=JSON))
    server.route("/pack/good/SKILL.md", reply(200, skill_md("good", "fine")))
    server.route("/pack/good/docs/ok.md", reply(200, "ok"))
    with_urls(hookcode_env, server.url("/pack"))
    before = files_under(hookcode_env.root)
    rt = runtime(hookcode_env)

    assert listed(rt) == ["- **good**: fine"]
    warnings = discover(rt).warnings
    index_url = server.url("/pack/index.json")
    for position, name in enumerate(["../escape", "..", "a\\b", "/abs", ""]):
        assert (
            f"skills: index {index_url}, entry {position} skipped: unsafe skill name {name!r}"
            in warnings
        )
    for file in refused:
        assert (
            f"skills: index {index_url}, skill 'good': file {file!r} refused: unsafe path"
            in warnings
        )
    assert len(warnings) == 5 + len(refused)
    assert not outside.exists()
    new_files = files_under(hookcode_env.root) - before
    data = hookcode_env.data_dir.relative_to(hookcode_env.root).as_posix()
    assert {f for f in new_files if not f.endswith("hookcode.db")} == {
        f"{data}/cache/skills/good/SKILL.md",
        f"{data}/cache/skills/good/docs/ok.md",
    }
    # nothing refused was even asked for
    assert sorted(r.path for r in server.requests) == [
        "/pack/good/SKILL.md",
        "/pack/good/docs/ok.md",
        "/pack/index.json",
    ]


def test_a_failing_file_does_not_stop_the_others(hookcode_env, server):
    def huge(h: Handler) -> None:
        h.head(200, content_type="application/octet-stream")
        h.stream(b"x" * (64 * 1024) for _ in range(200))

    index = {
        "skills": [
            {
                "name": "deploy",
                "description": "d",
                "files": ["missing.txt", "huge.bin", "SKILL.md", "ref.md"],
            }
        ]
    }
    server.route("/pack/index.json", reply(200, json.dumps(index), content_type=JSON))
    server.route("/pack/deploy/huge.bin", huge)
    server.route("/pack/deploy/SKILL.md", reply(200, skill_md("deploy", "Ship it")))
    server.route("/pack/deploy/ref.md", reply(200, "reference\n"))
    with_urls(hookcode_env, server.url("/pack"))
    rt = runtime(hookcode_env)

    outcome = invoke_tool(rt, "skill", {"name": "deploy"})

    assert outcome.error is None, outcome.error_text
    where = f"skills: index {server.url('/pack/index.json')}, skill 'deploy'"
    assert discover(rt).warnings == [
        f"{where}: file {server.url('/pack/deploy/missing.txt')} skipped: the server answered 404",
        f"{where}: file {server.url('/pack/deploy/huge.bin')} skipped: larger than the 5 MB limit",
    ]
    # no torn or temporary file: the failed ones are simply absent, and fetched next time
    assert files_under(cache_of(hookcode_env)) == {"deploy/SKILL.md", "deploy/ref.md"}
    server.route("/pack/deploy/missing.txt", reply(200, "now here"))
    discover(runtime(hookcode_env))
    assert (cache_of(hookcode_env) / "deploy" / "missing.txt").read_text() == "now here"


def test_a_remote_skill_directory_is_readable_without_asking(hookcode_env, server):
    base = publish(
        server, "/pack", {"deploy": {"SKILL.md": skill_md("deploy"), "ref.md": "reference text\n"}}
    )
    with_urls(hookcode_env, base)
    directory = cache_of(hookcode_env) / "deploy"
    rt = runtime(hookcode_env)  # headless: an ask would be rejected

    read = invoke_tool(rt, "read", {"filePath": str(directory / "ref.md")})

    assert read.error is None, read.error_text
    assert "reference text" in read.result.output
    rules = [r for r in rt.ruleset("build").rules if r.source == "plugin:tool_skill"]
    assert any(r.pattern == f"{directory.as_posix()}/*" for r in rules)
    elsewhere = hookcode_env.data_dir / "cache" / "other.txt"
    elsewhere.write_text("no\n")
    assert invoke_tool(rt, "read", {"filePath": str(elsewhere)}).error is not None


def test_tools_show_shows_what_the_agent_is_sent(hookcode_env):
    """``tools show skill`` shows the discovered skills the agent may load, as the model sees
    them (the same definition), not the static description."""
    import subprocess
    import sys

    base = hookcode_env.project / ".hookcode" / "skills"
    skill(base, "alpha", "First one")
    skill(base, "secret", "Hidden one")
    hookcode_env.write_config(
        '[permission.skill]\n"*" = "allow"\n\n[agent.plan.permission.skill]\n"alpha" = "deny"\n'
    )

    def show(*args: str) -> dict:
        command = [sys.executable, "-m", "hookcode", "-C", str(hookcode_env.project)]
        proc = subprocess.run(
            [*command, "tools", "show", "skill", "--json", *args],
            capture_output=True,
            text=True,
            env={**hookcode_env.env, "HOOKCODE_LOAD_PLUGINS": PLUGINS},
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    shown = show()
    assert shown["agent"] == "build"
    assert shown["offered"] is True
    assert NO_SKILLS not in shown["description"]
    assert shown["description"] == description(runtime(hookcode_env))
    assert "- **alpha**: First one" in shown["description"]
    assert "- **secret**: Hidden one" in shown["description"]
    assert "'alpha'" in shown["parameters"]["properties"]["name"]["description"]
    plan = show("--agent", "plan")
    assert plan["agent"] == "plan"
    assert "alpha" not in plan["description"]
    assert "- **secret**: Hidden one" in plan["description"]
