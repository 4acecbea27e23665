"""The chat's ``/commands``: its own (``/help``, ``/model``, ``/agent``, ``/clear``,
``/sessions``), and the ``chat_command`` hook: a plugin turns ``/name arguments`` into the
message sent, or refuses it; a command nobody takes is an error, never sent to the model (the
MCP plugin's prompts use the hook, see tests/plugins/test_mcp_everything.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

#: ``hookcode`` with one more plugin: ``/shout WORDS`` sends WORDS in capitals
DRIVER = """
import sys
from hookcode import hookimpl
from hookcode.errors import HookcodeError
import hookcode.cli.app as app_mod

class Commands:
    @hookimpl
    def chat_commands(self):
        return [("shout", "WORDS  say WORDS in capitals")]

    @hookimpl
    def chat_command(self, name, arguments):
        if name != "shout":
            return None
        if not arguments:
            raise HookcodeError("say what?")
        return arguments.upper()

original = app_mod.create_plugins
def create_plugins(**kwargs):
    kwargs["extra"] = {**(kwargs.get("extra") or {}), "commands": Commands()}
    return original(**kwargs)
app_mod.create_plugins = create_plugins

from hookcode.cli import main
sys.exit(main())
"""


def test_plugins_expand_or_refuse_chat_commands(hookcode_env: Any, tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(hookcode_env.env)
    env["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    env.pop("HOOKCODE_SCRIPT", None)
    done = subprocess.run(
        [sys.executable, str(driver), "chat"],
        cwd=hookcode_env.project,
        env=env,
        input="/shout hello there\n/shout\n/other thing\n/help\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "HELLO THERE" in done.stdout  # the echo model repeats what was sent
    assert "/shout: say what?" in done.stderr  # refused: nothing sent
    assert "/other" not in done.stdout  # nobody takes it: an error, never sent
    assert "unknown command /other (known: /help /model" in done.stderr
    assert "/shout" in done.stderr and "say WORDS in capitals" in done.stderr  # /help lists it
    assert done.stdout.count("HELLO THERE") == 1 and "/shout" not in done.stdout


def chat(env: Any, cwd: Path, typed: str) -> subprocess.CompletedProcess[str]:
    """``hookcode chat`` with ``typed`` as its stdin (a line per message or command)."""
    return subprocess.run(
        [sys.executable, "-m", "hookcode.cli", "chat"],
        cwd=cwd,
        env=env,
        input=typed,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_model_agent_clear_and_sessions(hookcode_env: Any) -> None:
    env = dict(hookcode_env.env)
    env["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    env.pop("HOOKCODE_SCRIPT", None)
    project = hookcode_env.project
    first = chat(env, project, "first message\n/session\n/exit\n")
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.strip().splitlines()[-1]
    assert len(session_id) > 8 and " " not in session_id, first.stderr

    typed = (
        "/model\n/model nosuch/thing\n/model scripted/other\n"
        "/agent\n/agent nosuchagent\n/agent plan\n"
        "/sessions\n"
        f"/sessions {session_id[:-3]}\n/session\n"
        "/clear\n/session\n"
        "/sessions zzzz-nothing\n/exit\n"
    )
    done = chat(env, project, typed)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "model scripted/echo" in err
    assert "/model: " in err and "nosuch" in err  # refused: the model stays
    assert "model scripted/other" in err
    assert "* build" in err and "plan" in err  # the agents, the current one marked
    assert "/agent: " in err and "nosuchagent" in err
    assert "agent plan · model scripted/other" in err
    assert f"  {session_id}  " in err  # listed
    assert f"continuing session {session_id}" in err
    assert err.count(session_id) >= 3  # /session after switching names it
    assert "new session" in err and "(no session yet)" in err  # /clear
    assert "/sessions: no session 'zzzz-nothing'" in err
    assert done.stdout == ""  # nothing was sent to the model


def test_a_path_is_a_message_not_a_command(hookcode_env: Any) -> None:
    env = dict(hookcode_env.env)
    env["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    env.pop("HOOKCODE_SCRIPT", None)
    done = chat(env, hookcode_env.project, "/etc/hosts has what?\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert "/etc/hosts has what?" in done.stdout
