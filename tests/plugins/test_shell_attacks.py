"""The adversarial corpus (tests/plugins/shell_attacks.py) run headless through the real bash
tool and every policy, against a deny-by-default config: without ``--yes``, with it, and with
the strict profile. Nothing may happen: no file created, changed or deleted in the project,
outside it or in the home directory, and no secret printed. A control runs every live entry
with plain bash in the same project and checks that the attack is real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookcode.errors import PermissionDenied, PermissionRejected

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shell_attacks import (
    CONFIG,
    CORPUS,
    GROUPS,
    NEUTRALISED,
    STRICT,
    build_project,
    effects,
    snapshot,
)


def test_the_corpus_is_big_and_grouped() -> None:
    assert len(CORPUS) >= 150
    assert len({command for _, command, _ in CORPUS}) == len(CORPUS)
    assert all(len(entries) >= 10 for entries in GROUPS.values())


def _world(hookcode_env: Any, config: str) -> tuple[Path, list[Path]]:
    outside = build_project(hookcode_env.root, hookcode_env.project, hookcode_env.home, config)
    watched = [hookcode_env.project, outside, hookcode_env.home]
    return outside, watched


def _run_corpus(hookcode_env: Any, config: str, *, yes: bool) -> list[str]:
    """Run every entry through the bash tool; the failures (allowed, or with an effect)."""
    from hookcode.testing import invoke_tool

    _world(hookcode_env, config)
    if yes:
        from hookcode.cli.frontend import AutoApprove

        hookcode_env.register(AutoApprove(), "cli_yes")
    runtime = hookcode_env.runtime()
    watched = [hookcode_env.project, hookcode_env.root / "outside", hookcode_env.home]
    failures: list[str] = []
    for group, command, _live in CORPUS:
        before = snapshot(*watched)
        outcome = invoke_tool(runtime, "bash", {"command": command, "description": "attack"})
        output = outcome.result.output if outcome.result is not None else outcome.error_text
        found = effects(before, snapshot(*watched), output or "")
        refused = isinstance(outcome.error, PermissionDenied | PermissionRejected)
        if found or not (refused or command in NEUTRALISED):
            failures.append(f"[{group}] {command!r}: refused={refused} effects={found}")
            # start again from a clean project so one failure does not hide the others
            runtime.close()
            _reset(hookcode_env, config)
            runtime = hookcode_env.runtime()
    runtime.close()
    return failures


def _reset(hookcode_env: Any, config: str) -> None:
    import shutil

    for path in (hookcode_env.project, hookcode_env.root / "outside", hookcode_env.root / "seed"):
        shutil.rmtree(path, ignore_errors=True)
    for entry in hookcode_env.home.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    _world(hookcode_env, config)


@pytest.mark.parametrize(
    ("config", "yes"),
    [(CONFIG, False), (CONFIG, True), (CONFIG + STRICT, False), (CONFIG + STRICT, True)],
    ids=["deny-by-default", "deny-by-default --yes", "strict", "strict --yes"],
)
def test_no_attack_has_an_effect(hookcode_env: Any, config: str, yes: bool) -> None:
    failures = _run_corpus(hookcode_env, config, yes=yes)
    assert not failures, "\n".join(failures)


def test_the_allowed_commands_still_run(hookcode_env: Any) -> None:
    """The same policy stays usable: what it allows runs."""
    from hookcode.testing import invoke_tool

    _world(hookcode_env, CONFIG)
    runtime = hookcode_env.runtime()
    for command in [
        "ls -la",
        "cat victim.txt",
        "git status && git log --oneline | head -1",
        "echo hi > notes.txt",
        "grep -rn keep sub victim.txt README.md",
        "cat README.md | wc -l",
        'echo "$(cat victim.txt)"',
        "for f in victim.txt README.md; do echo $f; done",
    ]:
        outcome = invoke_tool(runtime, "bash", {"command": command, "description": "ok"})
        assert outcome.error is None, (command, outcome.error_text)
    runtime.close()


@pytest.mark.parametrize(
    ("group", "command"),
    [(group, command) for group, command, live in CORPUS if live],
    ids=[f"{group}:{command!r}" for group, command, live in CORPUS if live],
)
def test_the_attack_is_real(tmp_path: Path, group: str, command: str) -> None:
    """Plain bash in the same project does what the attack is after."""
    project, home = tmp_path / "project", tmp_path / "home"
    outside = build_project(tmp_path, project, home, CONFIG)
    watched = [project, outside, home]
    before = snapshot(*watched)
    env = {**os.environ, "HOME": str(home)}
    for key in [k for k in env if k.startswith(("GIT_", "BASH_ENV", "HOOKCODE_"))]:
        del env[key]
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert effects(before, snapshot(*watched), output), (group, command, output)
