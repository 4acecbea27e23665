"""The chat's ``chat_command`` hook: a plugin turns ``/name arguments`` into the message sent,
or refuses it; a command no plugin takes is sent as typed (the MCP plugin's prompts use this,
see tests/plugins/test_mcp_everything.py)."""

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
        input="/shout hello there\n/shout\n/other thing\n/exit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "HELLO THERE" in done.stdout  # the echo model repeats what was sent
    assert "/shout: say what?" in done.stderr  # refused: nothing sent
    assert "/other thing" in done.stdout  # no plugin takes it: sent as typed
    assert done.stdout.count("HELLO THERE") == 1 and "/shout" not in done.stdout
