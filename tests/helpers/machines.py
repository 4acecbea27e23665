"""Two machines for the tests: each its own home, data and config directories and its own
``git clone`` of one repository, both using one PostgreSQL database as their store
(``HOOKCODE_STORE``). Machine "a" is this machine (its real host name); machine "b" runs its
processes under the host name ``machine-b`` (helpers.hosts), so each records and sees the other
as another host."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookcode.testing import HookcodeEnv

from helpers.fakedist import cli_command
from helpers.hosts import on_host

#: git without the user's or the system's configuration, with an author
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Ann",
    "GIT_AUTHOR_EMAIL": "ann@example.com",
    "GIT_COMMITTER_NAME": "Ann",
    "GIT_COMMITTER_EMAIL": "ann@example.com",
}


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def repository(path: Path) -> str:
    """A repository with one commit at ``path``; its root commit's sha."""
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README.md").write_text("# the team's project\n")
    git("add", "README.md", cwd=path)
    git("commit", "-q", "-m", "first", cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


@dataclass
class Machine:
    """One machine: ``host`` its name, ``world`` its directories and environment, ``project``
    its clone."""

    host: str
    world: HookcodeEnv
    #: this machine's processes run under another host name
    renamed: bool

    @property
    def project(self) -> Path:
        return self.world.project

    @property
    def env(self) -> dict[str, str]:
        return self.world.env

    def argv(self, *args: str) -> list[str]:
        """``hookcode ARGS`` as this machine runs it."""
        command = [*cli_command(), *args]
        return on_host(self.host, command) if self.renamed else command

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``hookcode ARGS`` in this machine's clone, headless; waits for the end."""
        return subprocess.run(
            self.argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``hookcode ARGS`` in this machine's clone, headless, in the background."""
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def sessions(self, *flags: str) -> list[dict[str, Any]]:
        """``hookcode sessions list --json FLAGS`` on this machine."""
        done = self.run("sessions", "list", "--json", *flags)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def two_machines(root: Path, store_url: str) -> tuple[Machine, Machine, str]:
    """Machines a and b sharing the store at ``store_url``, each with a clone of one new
    repository (under ``root``); and the repository's root commit."""
    root_commit = repository(root / "upstream")
    machines = []
    for name, host, renamed in (("a", socket.gethostname(), False), ("b", "machine-b", True)):
        world = HookcodeEnv(root / name)
        world.project.rmdir()
        git("clone", "-q", str(root / "upstream"), str(world.project), cwd=root)
        world.trust(True)  # the clone's own path
        world.env["HOOKCODE_STORE"] = store_url
        machines.append(Machine(host, world, renamed))
    a, b = machines
    return a, b, root_commit


def write_script(machine: Machine, turns: list[Any]) -> Path:
    """The scripted model's turns on ``machine`` (``HOOKCODE_SCRIPT``): each machine has its
    own copy; a session's position in it is kept in the store."""
    path = machine.world.root / "script.json"
    path.write_text(json.dumps(turns))
    machine.env["HOOKCODE_SCRIPT"] = str(path)
    return path


def bash(command: str) -> dict[str, Any]:
    """A turn calling the bash tool."""
    return {"tool_calls": [{"name": "bash", "args": {"command": command, "description": command}}]}
