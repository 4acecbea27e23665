"""Text that did not come from hookcode's own source is never read as Rich markup: a tool
input, the model's question, plugins' help and descriptions, config values. Each surface is fed
``[/etc/hosts]`` (a closing tag Rich cannot match: a MarkupError) and ``list[str]`` (an
unknown style Rich would drop), through a real terminal where the surface needs one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.fakedist import run_cli
from helpers.terminal import in_pty
from hookcode.testing import HookcodeEnv

BRACKETED = "[/etc/hosts] as list[str]"


def script(env: HookcodeEnv, *turns: Any) -> Path:
    path = env.root / "script.json"
    path.write_text(json.dumps(list(turns)))
    return path


def test_a_bracketed_tool_input_runs_under_the_spinner(hookcode_env: HookcodeEnv) -> None:
    command = f"echo '{BRACKETED}'"
    turns = script(
        hookcode_env,
        {"tool_calls": [{"name": "bash", "args": {"command": command, "description": "x"}}]},
        "all done",
    )
    args = ["run", "--yes", "--model", "scripted/x", "--script", str(turns), "go"]
    # a real terminal that animates (the spinner renders its text)
    code, out = in_pty(args, hookcode_env.env, hookcode_env.project, term="xterm-256color")
    assert code == 0, out
    assert "MarkupError" not in out
    assert "all done" in out
    assert f"bash {command}" in out  # the tool's line, as written


def test_the_question_prompt_shows_the_models_words_as_written(hookcode_env: HookcodeEnv) -> None:
    question = {
        "question": "Return list[str] or read [/etc/hosts]?",
        "header": "Type [/x]",
        "options": [
            {"label": "list[str]", "description": "a [bold]list[/bold] of str"},
            {"label": "[/etc/hosts]", "description": "the file"},
        ],
    }
    turns = script(
        hookcode_env,
        {"tool_calls": [{"name": "question", "args": {"questions": [question]}}]},
        "answered",
    )
    args = ["run", "--model", "scripted/x", "--script", str(turns), "ask me"]
    code, out = in_pty(
        args, hookcode_env.env, hookcode_env.project, [("numbers separated by commas", "1")]
    )
    assert code == 0, out
    assert "Type [/x]: Return list[str] or read [/etc/hosts]?" in out
    assert "1. list[str]  a [bold]list[/bold] of str" in out
    assert "2. [/etc/hosts]  the file" in out
    assert "answered" in out  # answered, not dismissed (a dismissal stops the run)
    assert "✓ question" in out and "dismissed" not in out


def test_help_texts_keep_their_brackets(hookcode_env: HookcodeEnv) -> None:
    env = {**hookcode_env.env, "COLUMNS": "200"}
    proc = run_cli(["audit", "show", "--help"], env=env, cwd=hookcode_env.project)
    assert proc.returncode == 0, proc.stderr
    assert "[audit] path, else <data dir>/audit.jsonl; the store's with [audit] to" in proc.stdout


def test_tables_show_plugins_text_as_written(hookcode_env: HookcodeEnv) -> None:
    """``tools list`` on a terminal (a rich table) with a local tool whose description is
    bracketed."""
    tools = hookcode_env.project / ".hookcode" / "tools"
    tools.mkdir(parents=True)
    (tools / "brackets.py").write_text(
        "from hookcode import tool\n\n\n"
        "@tool\n"
        "def brackets() -> str:\n"
        f'    """Reads {BRACKETED}."""\n'
        '    return "ok"\n'
    )
    hookcode_env.trust()
    code, out = in_pty(["tools", "list"], hookcode_env.env, hookcode_env.project)
    assert code == 0, out
    assert f"Reads {BRACKETED}." in out


def test_the_chat_header_shows_the_model_as_given(hookcode_env: HookcodeEnv) -> None:
    proc = run_cli(
        ["chat", "--model", "scripted/[/x]"],
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        input="/exit\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert "model scripted/[/x]" in proc.stderr
