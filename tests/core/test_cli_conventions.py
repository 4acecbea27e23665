"""What people expect of a command line: ``--version``, shell completion, help that names
values rather than Python types, piped stdin joined to the message, a documented and versioned
JSON output, errors said to a person, session id prefixes, a warning for a plugin selected but
not installed. Through the real CLI: a subprocess where stdin or the process matters, else
``main`` / typer's CliRunner in this process."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.fakedist import cli_command, run_cli

ROOT = Path(__file__).resolve().parents[2]
JSON_DOC = ROOT / "docs" / "reference" / "json-output.md"


def cli(env: dict[str, str], *args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    """``hookcode ARGS`` in this process with ``env`` as the environment and ``stdin`` (not a
    terminal) as stdin."""
    from hookcode.cli import main

    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["-C", str(cwd), *args])
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


@pytest.fixture
def env(hookcode_env: Any) -> dict[str, str]:
    env = dict(hookcode_env.env)
    env.pop("HOOKCODE_SCRIPT", None)
    return env


# ---------------------------------------------------------------------------------------------
# --version, completion, help
# ---------------------------------------------------------------------------------------------


def test_version(env: dict[str, str], hookcode_env: Any) -> None:
    from hookcode import __version__

    for flag in ("--version", "-V"):
        done = run_cli([flag], env=env, cwd=hookcode_env.project)
        assert (done.returncode, done.stdout) == (0, f"hookcode {__version__}\n"), done.stderr


def test_shell_completion(env: dict[str, str], hookcode_env: Any) -> None:
    def complete(words: str) -> list[str]:
        done = run_cli(
            [],
            env={
                **env,
                "_HOOKCODE_COMPLETE": "complete_bash",
                "COMP_WORDS": words,
                "COMP_CWORD": str(len(words.split()) - 1),
            },
            cwd=hookcode_env.project,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("hookcode sess") == ["sessions"]
    assert complete("hookcode sessions li") == ["list"]
    assert "--format" in complete("hookcode run --fo")
    # a shell named rather than detected (the tests run under no shell): typer's switch
    named = {**env, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = run_cli(["--show-completion", "bash"], env=named, cwd=hookcode_env.project)
    assert script.returncode == 0 and "_hookcode_completion" in script.stdout
    helped = run_cli(["--help"], env={**env, "COLUMNS": "200"}, cwd=hookcode_env.project)
    assert "--install-completion" in helped.stdout and "--show-completion" in helped.stdout


#: how typer shows a parameter's Python annotation in help: ``<bool>``, ``<list[str]>``, ...
PYTHON_TYPE = re.compile(r"<(?:bool|str|int|float|path|dict|list\[[^>]*\]|[a-z]+\|[a-z|]+)>")


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():
        paths += _command_paths(sub, (*path, name))
    return paths


def test_no_help_shows_python_types(hookcode_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command, core's and the installed plugins', in its ``--help``."""
    import typer.main
    from hookcode.cli.app import build_app
    from hookcode.cli.state import GlobalOptions
    from typer.testing import CliRunner

    for key, value in hookcode_env.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(hookcode_env.project)
    app = build_app(GlobalOptions())
    paths = _command_paths(typer.main.get_command(app))
    assert {("run",), ("sessions", "list"), ("tools", "call")} <= set(paths)
    runner = CliRunner()
    for path in paths:
        done = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert done.exit_code == 0, (path, done.output)
        assert not PYTHON_TYPE.findall(done.output), (path, done.output)
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--model\s+-m\s+MODEL\s", run_help), run_help
    assert re.search(r"--format\s+\[text\|json\|json-result\]", run_help), run_help
    assert re.search(r"--session\s+-s\s+ID\s", run_help), run_help
    assert re.search(r"--yes\s+-y\s+Approve", run_help), run_help  # a flag takes no value
    assert "[MESSAGE]..." in run_help


# ---------------------------------------------------------------------------------------------
# piped stdin
# ---------------------------------------------------------------------------------------------


def _run_piped(
    env: dict[str, str], cwd: Path, data: bytes, *args: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*cli_command(), "run", "-m", "scripted/echo", *args],
        env=env,
        cwd=cwd,
        input=data,
        capture_output=True,
        timeout=120,
    )


def test_piped_stdin_joins_the_message(env: dict[str, str], hookcode_env: Any) -> None:
    diff = "diff --git a/x b/x\n-old\n+new\n"
    done = _run_piped(env, hookcode_env.project, diff.encode(), "review", "this")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"review this\n\n<stdin>\n{diff}</stdin>\n"
    # only stdin: the message, as it is (no block)
    alone = _run_piped(env, hookcode_env.project, b"just this\n")
    assert (alone.returncode, alone.stdout) == (0, b"just this\n"), alone.stderr
    # an empty pipe and a message: the message alone
    empty = _run_piped(env, hookcode_env.project, b"", "hello")
    assert (empty.returncode, empty.stdout) == (0, b"hello\n"), empty.stderr


def test_a_stdin_nobody_writes_to_is_not_waited_for(
    env: dict[str, str], hookcode_env: Any, tmp_path: Path
) -> None:
    """A stdin left open (a CI job, a script): the run goes on without it, and says so."""
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [*cli_command(), "run", "-m", "scripted/echo", "hello"],
            env={**env, "HOOKCODE_STDIN_WAIT": "0.2"},
            cwd=hookcode_env.project,
            stdin=subprocess.PIPE,  # open, and never written to nor closed until the end
            stdout=stdout,
            stderr=stderr,
        )
        try:
            code = proc.wait(timeout=120)
        finally:
            proc.kill()
            proc.wait()
            assert proc.stdin is not None
            proc.stdin.close()
    assert code == 0, err.read_text()
    assert out.read_bytes() == b"hello\n"
    said = err.read_text()
    assert "nothing arrived on stdin" in said and "HOOKCODE_STDIN_WAIT" in said


def test_huge_or_binary_stdin_is_refused_with_the_reason(
    env: dict[str, str], hookcode_env: Any
) -> None:
    from hookcode.cli.piped import LIMIT

    huge = _run_piped(env, hookcode_env.project, b"x" * (LIMIT + 1), "summarise")
    assert huge.returncode == 1
    assert f"stdin is larger than {LIMIT // 1024} KiB" in huge.stderr.decode()
    fits = _run_piped(env, hookcode_env.project, b"y" * LIMIT, "summarise")
    assert fits.returncode == 0, fits.stderr
    binary = _run_piped(env, hookcode_env.project, b"\xff\xfe\x00\x01", "what is it")
    assert binary.returncode == 1 and "not UTF-8 text" in binary.stderr.decode()


# ---------------------------------------------------------------------------------------------
# JSON output
# ---------------------------------------------------------------------------------------------


def emitted_events() -> dict[str, set[str]]:
    """Every event the agent loop emits (``self.emit("kind", {...})`` anywhere in core), with
    the fields of its object: read from the code, so a new event or field is seen."""
    events: dict[str, set[str]] = {}
    for path in sorted((ROOT / "core" / "hookcode").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "emit"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                continue
            kind, data = node.args[0].value, node.args[1] if len(node.args) > 1 else None
            assert isinstance(data, ast.Dict), f"{path}:{node.lineno}: emit a dict literal"
            keys = {str(k.value) for k in data.keys if isinstance(k, ast.Constant)}
            assert len(keys) == len(data.keys), f"{path}:{node.lineno}: literal keys only"
            events.setdefault(kind, set()).update(keys)
    return events


def documented_events() -> dict[str, set[str]]:
    """The events of docs/reference/json-output.md: each ``### `kind``` heading and the
    fields of the table under it."""
    events: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in JSON_DOC.read_text().splitlines():
        heading = re.fullmatch(r"### `([a-z_]+)`", line)
        if heading:
            current = events.setdefault(heading.group(1), set())
        elif line.startswith("## "):
            current = None
        elif current is not None and (field := re.match(r"\| `([a-z_]+)` \|", line)):
            current.add(field.group(1))
    return events


def test_every_event_and_field_the_code_emits_is_documented() -> None:
    from hookcode.session import RunResult

    emitted = emitted_events()
    assert {"session", "text", "tool", "tool_result", "step"} <= set(emitted)  # the scan works
    result = set(RunResult(session_id="x").to_dict()) - {"type"}
    expected = {**emitted, "result": result}
    documented = documented_events()
    assert set(documented) == set(expected), "docs/reference/json-output.md: events differ"
    for kind, fields in expected.items():
        assert documented[kind] == fields, (kind, "documented fields differ from the code's")


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    calls = [{"name": "list", "args": {}}]
    path.write_text(json.dumps([{"text": "listing", "tool_calls": calls}, {"text": "done"}]))
    return path


def test_json_stream_and_json_result_carry_the_schema_version(
    env: dict[str, str], hookcode_env: Any, tmp_path: Path
) -> None:
    from hookcode.cli.frontend import JSON_SCHEMA

    script = _script(tmp_path)
    project = hookcode_env.project
    args = ["run", "-m", "scripted/x", "--script", str(script)]
    stream = cli(env, *args, "--format", "json", "go", cwd=project)
    assert stream.returncode == 0, stream.stderr
    events = [json.loads(line) for line in stream.stdout.splitlines()]
    assert all(e["schema"] == JSON_SCHEMA for e in events)
    documented = documented_events()
    for event in events:  # what runs is what the page says
        assert set(event) - {"type", "schema"} == documented[event["type"]], event

    single = cli(env, *args, "--format", "json-result", "go", cwd=project)
    assert single.returncode == 0, single.stderr
    [line] = single.stdout.splitlines()
    result = json.loads(line)
    assert (result["type"], result["schema"], result["text"]) == ("result", JSON_SCHEMA, "done")
    assert set(result) == set(events[-1])

    failed = cli(env, "run", "-m", "nope/x", "--format", "json-result", "hi", cwd=project)
    assert failed.returncode == 1
    [line] = failed.stdout.splitlines()
    error = json.loads(line)
    assert (error["type"], error["schema"], error["session_id"]) == ("result", JSON_SCHEMA, None)
    assert "unknown model provider 'nope'" in error["error"]
    assert set(error) == set(result)


def test_a_headless_run_says_a_call_was_not_approved_not_that_the_user_rejected_it(
    env: dict[str, str], hookcode_env: Any, tmp_path: Path
) -> None:
    """Nobody could be asked: the text display says the call was not approved (the model
    still reads its own wording), the JSON event marks it ``refused``, and the run's end says
    how to approve."""
    script = _script(tmp_path)
    project = hookcode_env.project
    hookcode_env.write_config('[permission]\nlist = "ask"\n')
    args = ["run", "-m", "scripted/x", "--script", str(script), "go"]
    text = cli(env, *args, cwd=project)
    assert text.returncode == 1
    said = text.stdout + text.stderr
    assert "✗ list" in said and ": not approved" in said, said
    assert "The user rejected" not in said
    assert "hookcode: refused tool calls (nobody to approve them: " in said
    stream = cli(env, *args, "--format", "json", cwd=project)
    [ended] = [e for e in map(json.loads, stream.stdout.splitlines()) if e["type"] == "tool_result"]
    assert ended["refused"] is True
    assert ended["error"].startswith("The user rejected permission")  # what the model read


# ---------------------------------------------------------------------------------------------
# tools call errors, sessions
# ---------------------------------------------------------------------------------------------


def test_tools_call_errors_speak_to_a_person(env: dict[str, str], hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / "x.txt").write_text("x\n")
    typo = cli(env, "tools", "call", "raed", '{"filePath": "x.txt"}', cwd=project)
    assert typo.returncode == 1
    assert typo.stderr.strip() == "hookcode: unknown tool 'raed' (did you mean 'read'?)"
    nothing_close = cli(env, "tools", "call", "zzzzzz", cwd=project)
    assert "unknown tool 'zzzzzz'; available tools: " in nothing_close.stderr
    assert "read" in nothing_close.stderr

    bad = cli(env, "tools", "call", "read", '{"file_path": "x.txt"}', cwd=project)
    assert bad.returncode == 1
    assert bad.stderr.startswith("hookcode: read: invalid arguments: "), bad.stderr
    assert "file_path: unknown argument" in bad.stderr
    malformed = cli(env, "tools", "call", "read", '{"filePath": ', cwd=project)
    assert "read: invalid arguments: the arguments are not valid JSON" in malformed.stderr

    hookcode_env.write_config('[permission]\nread = "ask"\n')
    refused = cli(env, "tools", "call", "read", '{"filePath": "x.txt"}', cwd=project)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"hookcode: read: refused, nobody to approve read {project / 'x.txt'}: run in a "
        "terminal, or pass --yes or a rule in hookcode.toml"
    ), refused.stderr

    hookcode_env.write_config('[permission]\nread = "deny"\n')
    denied = cli(env, "tools", "call", "read", '{"filePath": "x.txt"}', cwd=project)
    assert "tool 'read' is not available to agent 'build'" in denied.stderr

    hookcode_env.write_config('[permission]\nread = "ask"\n')
    as_json = cli(env, "tools", "call", "read", '{"filePath": "x.txt"}', "--json", cwd=project)
    assert json.loads(as_json.stdout)["error"]  # the error as recorded, for programs
    assert as_json.stderr == refused.stderr  # and the person's words beside it

    said = typo.stderr + bad.stderr + malformed.stderr + refused.stderr + denied.stderr
    for model_facing in ("Model tried to call", "Please rewrite the input", "The user rejected"):
        assert model_facing not in said


def test_tools_call_sessions_are_hidden_from_sessions_list(
    env: dict[str, str], hookcode_env: Any
) -> None:
    project = hookcode_env.project
    (project / "x.txt").write_text("x\n")
    called = cli(env, "tools", "call", "read", '{"filePath": "x.txt"}', cwd=project)
    assert called.returncode == 0, called.stderr
    assert json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout) == []
    listed = cli(env, "sessions", "list", cwd=project)
    assert "No sessions yet" in listed.stdout
    assert (
        "no session to continue"
        in cli(env, "run", "-m", "scripted/echo", "-c", "hi", cwd=project).stderr
    )
    [shown] = json.loads(cli(env, "sessions", "list", "--json", "--tool-calls", cwd=project).stdout)
    assert (shown["title"], shown["origin"]) == ("tools call read", "tools call")
    text = cli(env, "sessions", "list", "--tool-calls", cwd=project).stdout
    assert "tools call read  [tools call]" in text

    ran = cli(env, "run", "-m", "scripted/echo", "hello", cwd=project)
    assert ran.returncode == 0, ran.stderr
    [conversation] = json.loads(cli(env, "sessions", "list", "--json", cwd=project).stdout)
    assert conversation["title"] == "hello" and "origin" not in conversation


def test_session_ids_take_unique_prefixes(env: dict[str, str], hookcode_env: Any) -> None:
    project = hookcode_env.project
    store = hookcode_env.runtime().store
    for sid, title in [("ses_abc1", "first"), ("ses_abc2", "second"), ("ses_xyz", "third")]:
        store.create_session(project=str(project), directory=str(project), title=title, id=sid)

    shown = cli(env, "sessions", "show", "ses_x", "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["session"]["id"] == "ses_xyz"
    exported = cli(env, "sessions", "export", "ses_abc2", cwd=project)
    assert json.loads(exported.stdout)["session"]["title"] == "second"

    ambiguous = cli(env, "sessions", "show", "ses_ab", cwd=project)
    assert ambiguous.returncode == 1
    assert ambiguous.stderr.strip() == (
        "hookcode: error: session id prefix 'ses_ab' is ambiguous: ses_abc1 (first), "
        "ses_abc2 (second); give more of the id"
    )
    missing = cli(env, "sessions", "delete", "ses_q", cwd=project)
    assert missing.returncode == 1 and "no session 'ses_q'" in missing.stderr

    resumed = cli(env, "run", "-m", "scripted/echo", "-s", "ses_abc1", "again", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert [m["role"] for m in store.messages("ses_abc1")] == ["user", "assistant"]
    chat = cli(env, "chat", "-m", "scripted/echo", "-s", "ses_ab", cwd=project, stdin="/exit\n")
    assert chat.returncode == 1 and "is ambiguous" in chat.stderr

    deleted = cli(env, "sessions", "delete", "ses_xy", cwd=project)
    assert (deleted.returncode, deleted.stdout) == (0, "deleted ses_xyz\n"), deleted.stderr
    assert store.get_session("ses_xyz") is None


# ---------------------------------------------------------------------------------------------
# plugin selection
# ---------------------------------------------------------------------------------------------


def test_a_selected_plugin_that_is_not_installed_is_named(
    env: dict[str, str], hookcode_env: Any
) -> None:
    done = cli(
        {**env, "HOOKCODE_LOAD_PLUGINS": "nope,tool_raed,tool_read"},
        "plugins",
        "list",
        "--json",
        cwd=hookcode_env.project,
    )
    assert done.returncode == 0, done.stderr
    assert "hookcode: HOOKCODE_LOAD_PLUGINS names 'nope', which is not installed" in done.stderr
    assert (
        "hookcode: HOOKCODE_LOAD_PLUGINS names 'tool_raed', which is not installed "
        "(did you mean 'tool_read'?)" in done.stderr
    )
    assert "'tool_read'," not in done.stderr.replace("did you mean 'tool_read'?", "")
    loaded = {p["name"] for p in json.loads(done.stdout) if p["status"] == "loaded"}
    assert loaded == {"core", "tool_read"}

    hookcode_env.write_config('[plugins]\nload = ["tool_read", "nope"]\n', where="global")
    from_config = cli(env, "plugins", "list", "--json", cwd=hookcode_env.project)
    assert "[plugins] load names 'nope', which is not installed" in from_config.stderr
