"""policy_shell (plugins/policy_shell): the shell analysis behind the ``bash`` permission
(reference/permissions.md §9, ARCHITECTURE.md Settled points), the adversarial corpus
(issue 4) through a real runtime, outside-directory detection, and the strict profile (§11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookcode.errors import PermissionDenied, PermissionRejected
from hookcode.permission import PermissionRequest
from hookcode_policy_shell import STRICT_SOURCE
from hookcode_policy_shell.analyze import analyze
from hookcode_policy_shell.arity import prefix

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shell_corpus import ASK_CONTROLS, CONFIG, CONTROLS, CORPUS


@pytest.fixture(autouse=True)
def _only_policies(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules,policy_shell"


@pytest.fixture
def runtime(hookcode_env: Any) -> Any:
    hookcode_env.write_config(CONFIG)
    return hookcode_env.runtime()


def bash_request(rt: Any, command: str, agent: str = "build") -> PermissionRequest:
    """The ``bash`` request the bash tool builds for ``command``."""
    analysis = rt.plugins.call_first("shell_analyze", command=command, cwd=str(rt.cwd))
    assert analysis is not None
    return PermissionRequest(
        id="test",
        session_id="",
        permission="bash",
        patterns=list(analysis.commands) or [command],
        always=list(analysis.always),
        metadata=analysis.request_metadata(),
        agent=agent,
        tool={},
        ruleset=rt.ruleset(agent, None),
        cwd=str(rt.cwd),
        worktree=str(rt.worktree),
    )


def vote(rt: Any, command: str) -> str:
    return rt.permissions.vote(bash_request(rt, command)).action


# ---------------------------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------------------------


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 60
    assert len({c for c, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("command", "expected"), CORPUS, ids=[repr(c) for c, _ in CORPUS])
def test_corpus_never_allowed(runtime: Any, command: str, expected: str) -> None:
    got = vote(runtime, command)
    assert got != "allow"
    assert got == expected, analyze(command, str(runtime.cwd))


@pytest.mark.parametrize("command", CONTROLS)
def test_controls_are_allowed(runtime: Any, command: str) -> None:
    assert vote(runtime, command) == "allow", analyze(command, str(runtime.cwd))


@pytest.mark.parametrize("command", ASK_CONTROLS)
def test_controls_that_ask(runtime: Any, command: str) -> None:
    assert vote(runtime, command) == "ask"


def test_no_analyser_means_one_opaque_pattern(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"
    hookcode_env.write_config(CONFIG)
    rt = hookcode_env.runtime()
    assert rt.plugins.call_first("shell_analyze", command="ls", cwd=str(rt.cwd)) is None


# ---------------------------------------------------------------------------------------------
# patterns and "always" (reference §9)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "patterns", "always"),
    [
        ("echo hello", ["echo hello"], ["echo *"]),
        ("echo foo && echo bar", ["echo foo", "echo bar"], ["echo *"]),
        ("git log --oneline -5", ["git log --oneline -5"], ["git log *"]),
        ("ls -la", ["ls -la"], ["ls *"]),
        ("npm run dev", ["npm run dev"], ["npm run dev *"]),
        ("docker compose up web", ["docker compose up web"], ["docker compose up *"]),
        ("cat > ../out.txt", ["cat > ../out.txt"], ["cat *"]),
        ("cd .", [], []),
        ("echo $(cat list)", ["echo $(cat list)", "cat list"], ["echo *", "cat *"]),
        # ours: wrappers, quoting, absolute paths, strings given to shells
        ('sudo /bin/r""m -rf /x', ["rm -rf /x", "sudo rm -rf /x"], ["rm *", "sudo rm *"]),
        ("timeout 5 git status", ["git status"], ["git status *"]),
        ("FOO=1 make", ["make", "FOO=1 make"], ["make *", "FOO=1 make *"]),
        ("bash -c 'git status; ls'", ["git status", "ls"], ["git status *", "ls *"]),
        ("cd src && git stash pop", ["git stash pop"], ["git stash pop *"]),
        ("git 'log' \"--oneline\"", ["git log --oneline"], ["git log *"]),
        ('echo "a > b"', ['echo "a > b"'], ["echo *"]),
        ("ls -la 2>&1 | grep x", ["ls -la 2>&1", "grep x"], ["ls *", "grep *"]),
        ("{ ls; } > out", ["ls > out"], ["ls *"]),
        (
            "find . -exec grep -l x {} +",
            ["grep -l x {}", "find . -exec grep -l x {} +"],
            ["grep *", "find *"],
        ),
        ("xargs", ["xargs"], ["xargs *"]),
        ("command -v rm", ["command -v rm"], ["command *"]),
    ],
)
def test_patterns_and_always(
    tmp_path: Path, command: str, patterns: list[str], always: list[str]
) -> None:
    analysis = analyze(command, str(tmp_path))
    assert sorted(analysis.commands) == sorted(patterns)
    assert sorted(analysis.always) == sorted(always)
    assert not analysis.opaque, analysis.reasons


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ("touch foo.txt", "touch"),
        ("git checkout main", "git checkout"),
        ("aws s3 ls b", "aws s3 ls"),
        ("npm run dev script", "npm run dev"),
        ("consul kv get x", "consul kv get"),
        ("git", "git"),
        ("git log", "git log"),
        ("docker compose", "docker compose"),
        ("unknown-tool a b", "unknown-tool"),
        ("cargo build --release", "cargo build"),
        ("cargo run --bin x", "cargo run --bin"),
        ("ip addr show dev", "ip addr show"),
        ("kubectl rollout status x", "kubectl rollout status"),
        ("yarn dlx create-app x", "yarn dlx create-app"),
        ("python -m pytest", "python -m"),
        ("rm -rf x", "rm"),
    ],
)
def test_arity_table(tokens: str, expected: str) -> None:
    assert " ".join(prefix(tokens.split())) == expected
    assert prefix([]) == []


# ---------------------------------------------------------------------------------------------
# opaque constructs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'echo "unterminated',
        "ls )",
        "if then fi",
        "$X",
        "$(echo rm) x",
        "f() { ls; }",
        "alias x=ls",
        "rm $X",
        "cat > $OUT",
        "git $(echo push)",
        "docker $X up",
        "curl x | sh",
        "cd $DIR && rm y",
        "cd - && rm y",
        "rm ~nobody-such-user-xyz/x",
        "rm {a,/etc/passwd}",
        "eval $X",
        "ls | xargs rm",
    ],
)
def test_opaque(tmp_path: Path, command: str) -> None:
    analysis = analyze(command, str(tmp_path))
    assert analysis.opaque and analysis.reasons


@pytest.mark.parametrize(
    "command",
    ["git log $SHA", "echo $HOME", "rm *.txt", "echo $(pwd)", "command -v git", "bash script.sh"],
)
def test_not_opaque(tmp_path: Path, command: str) -> None:
    analysis = analyze(command, str(tmp_path))
    assert not analysis.opaque, analysis.reasons


def test_empty_command(tmp_path: Path) -> None:
    analysis = analyze("   ", str(tmp_path))
    assert analysis.commands == [] and not analysis.opaque


def test_parse_error_still_reports_what_it_sees(runtime: Any) -> None:
    analysis = analyze('rm -rf x; echo "unterminated', str(runtime.cwd))
    assert analysis.opaque
    assert "rm -rf x" in analysis.commands
    assert vote(runtime, 'rm -rf x; echo "unterminated') == "deny"
    assert vote(runtime, 'git status; echo "unterminated') == "ask"


def test_opaque_is_never_allowed_even_by_a_catch_all(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": {"*": "allow"}}})
    rt = hookcode_env.runtime()
    assert vote(rt, "ls") == "allow"
    assert vote(rt, "$X y") == "ask"
    assert vote(rt, "curl -s x | bash") == "ask"


# ---------------------------------------------------------------------------------------------
# outside directories (reference §7, §9)
# ---------------------------------------------------------------------------------------------


def outside(command: str, project: Path) -> list[str]:
    return analyze(command, str(project)).outside_dirs


def real(path: Path | str) -> str:
    return Path(os.path.realpath(path)).as_posix()


def test_outside_dirs(hookcode_env: Any) -> None:
    project = hookcode_env.project
    parent = real(project.parent)
    (project / "sub" / "nested").mkdir(parents=True)
    assert outside("rm ../x", project) == [parent]
    assert outside("cat > /tmp/x", project) == [real("/tmp")]
    assert outside("tee /etc/x", project) == ["/etc"]
    assert outside("echo hi | tee -a /etc/x", project) == ["/etc"]
    assert outside("cd .. && rm y", project) == [parent]
    assert outside("cd sub && rm ../../y", project) == [parent]
    assert outside("cd sub; rm ../y", project) == []
    assert outside("(cd sub); rm ../y", project) == [parent]  # a subshell's cd ends with it
    assert outside("cd sub | true; rm ../y", project) == [parent]  # so does a pipeline's
    # a cd that may not happen (or may fail) adds a directory instead of replacing one; a
    # directory below one already asked about is covered by it (its <dir>/* pattern)
    grandparent = real(project.parent.parent)
    assert outside("true && cd sub; rm ../../y", project) == [grandparent]
    assert outside("true && cd sub; rm ../../y ../y", project) == [grandparent]
    assert outside("if x; then cd sub; fi; rm ../../y", project) == [grandparent]
    assert outside("bash -c 'cd sub'; rm ../../y", project) == [grandparent]
    assert outside("cd missing; rm ../y", project) == [parent]
    # too many possible directories: a relative path that climbs is opaque
    many = "; ".join(f"true && cd d{i}" for i in range(12))
    assert not analyze(f"{many}; rm y", str(project)).opaque
    assert analyze(f"{many}; rm ../y", str(project)).opaque
    assert analyze("true && cd /tmp; " + many + "; rm y", str(project)).opaque
    assert outside("mkdir -p /nonexistent-hookcode/new/deep", project) == [
        "/nonexistent-hookcode/new"
    ]
    assert outside("rm -rf sub/nested", project) == []
    assert outside("rm -rf ../project/sub", project) == []
    assert outside("ls > /dev/null 2>&1; ls >&2", project) == []
    assert outside("cp x /etc/", project) == ["/etc"]
    assert outside("cp --target-directory=/etc x", project) == ["/etc"]
    assert outside("chmod +x /etc/x", project) == ["/etc"]
    assert outside("chmod 644 x", project) == []
    assert outside("rm ../*", project) == [parent]
    assert outside("rm /*", project) == ["/"]
    assert outside("cat < /etc/passwd", project) == ["/etc"]
    assert outside("ls &> /etc/out", project) == ["/etc"]
    assert outside("{ ls; } 2> /etc/err", project) == ["/etc"]
    assert outside("git status", project) == []
    assert outside("rm missing/../../x", project) == [parent]


def test_outside_through_a_symlink(hookcode_env: Any, tmp_path_factory: Any) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    project = hookcode_env.project
    (project / "link").symlink_to(elsewhere, target_is_directory=True)
    assert outside("rm link/x", project) == [real(elsewhere)]
    assert outside("rm link", project) == [real(elsewhere)]


def test_outside_of_the_worktree(hookcode_env: Any) -> None:
    project = hookcode_env.project
    (project / ".git").mkdir()
    (project / "pkg").mkdir()
    # inside the git worktree but outside the working directory: inside the project
    assert outside("rm ../x", project / "pkg") == []
    assert outside("rm ../../x", project / "pkg") == [real(project.parent)]


def test_tilde(hookcode_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(hookcode_env.home))
    assert outside("rm ~/x", hookcode_env.project) == [real(hookcode_env.home)]
    assert outside("cat '~/x'", hookcode_env.project) == []  # quoted: a file named ~


# ---------------------------------------------------------------------------------------------
# the CLI
# ---------------------------------------------------------------------------------------------


def test_permissions_explain_shows_each_command(hookcode_env: Any) -> None:
    hookcode_env.write_config(CONFIG)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hookcode",
            "permissions",
            "explain",
            "bash",
            "git status && rm -rf build",
        ],
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("deny")
    assert "'git status': allow by bash 'git *' allow" in out
    assert "'rm -rf build': deny by bash 'rm *' deny" in out


# ---------------------------------------------------------------------------------------------
# the strict profile (§11)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def strict(hookcode_env: Any) -> Any:
    hookcode_env.write_config({"tool": {"bash": {"profile": "strict"}}})
    return hookcode_env.runtime()


def test_strict_rules_come_from_permission_defaults(strict: Any, hookcode_env: Any) -> None:
    rules = [r for r in strict.ruleset("build").rules if r.source == STRICT_SOURCE]
    assert rules and all(r.permission == "bash" for r in rules)
    assert ("bash", "curl *", "deny") in [(r.permission, r.pattern, r.action) for r in rules]
    # without the profile: nothing
    hookcode_env.write_config({"permission": {"bash": "ask"}})
    plain = hookcode_env.runtime()
    assert not [r for r in plain.ruleset("build").rules if r.source == STRICT_SOURCE]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl https://example.com", "deny"),
        ("ls && curl x", "deny"),
        ("wget x", "deny"),
        ("CURL x", "deny"),
        ("/usr/bin/wget x", "deny"),
        ("sudo nc -l 80", "deny"),
        ("firefox", "deny"),
        ("ls -la", "allow"),
        ("pwd", "allow"),
        ("git status", "allow"),
        ("git log --oneline | git diff", "allow"),
        ("git branch", "allow"),
        ("git branch -a", "allow"),
        ("git branch --list 'feat*'", "allow"),
        ("git branch -D main", "ask"),
        ("git tag v1", "ask"),
        ("git remote -v", "allow"),
        ("git remote add x y", "ask"),
        ("git config --get user.name", "allow"),
        ("git config user.name x", "ask"),
        ("git ls-remote", "ask"),
        ("git diff --output=/tmp/x", "ask"),
        ("go version", "allow"),
        ("go env GOPATH", "allow"),
        ("go env -w GOPATH=/x", "ask"),
        ("go build", "ask"),
        ("go test ./...", "ask"),
        ("git push", "ask"),
        ("env", "ask"),
        ("kill 1", "ask"),
        ("timeout 5 ls", "allow"),
        ("nohup ls", "allow"),
        ("ls > listing.txt", "ask"),
        ("echo hi >> notes.txt", "ask"),
        ("git log > log.txt", "ask"),
        ("ls 2>&1", "allow"),
        ("ls > /dev/null", "allow"),
        ("ls $(rm x)", "ask"),
        ("$X", "ask"),
    ],
)
def test_strict_profile(strict: Any, command: str, expected: str) -> None:
    assert vote(strict, command) == expected


def test_strict_explicit_rules_win(hookcode_env: Any) -> None:
    hookcode_env.write_config(
        {
            "tool": {"bash": {"profile": "strict"}},
            "permission": {"bash": {"curl *": "allow", "CURL *": "allow", "ls *": "allow"}},
        }
    )
    rt = hookcode_env.runtime()
    assert vote(rt, "curl x") == "allow"
    assert vote(rt, "CURL x") == "allow"
    assert vote(rt, "ls > listing.txt") == "allow"  # the user's own rule allowed it
    assert vote(rt, "wget x") == "deny"


def test_strict_respects_an_agent_that_denies_bash(strict: Any) -> None:
    # explore denies everything but a few tools; compaction denies everything
    rules = strict.ruleset("compaction").rules
    assert not [r for r in rules if r.source == STRICT_SOURCE and r.action != "deny"]


# ---------------------------------------------------------------------------------------------
# end to end through the bash tool
# ---------------------------------------------------------------------------------------------


def test_corpus_end_to_end_through_the_bash_tool(hookcode_env: Any) -> None:
    pytest.importorskip("hookcode_tool_bash")
    from hookcode.testing import invoke_tool

    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules,policy_shell,tool_bash"
    hookcode_env.write_config(CONFIG)
    rt = hookcode_env.runtime()
    marker = hookcode_env.project / "marker"
    commands = [
        "git status; touch marker",
        "ls $(touch marker)",
        'r""m -f x; touch marker',
        "bash -c 'touch marker'",
        "find . -maxdepth 0 -exec touch marker \\;",
        "env touch marker",
        "f() { touch marker; }; f",
        "$(echo touch) marker",
        "eval 'touch marker'",
        "bash <<EOF\ntouch marker\nEOF",
    ]
    for command in commands:
        outcome = invoke_tool(rt, "bash", {"command": command, "description": "corpus"})
        assert isinstance(outcome.error, PermissionDenied | PermissionRejected), command
        assert not marker.exists(), command
    # and a positive control really runs
    outcome = invoke_tool(rt, "bash", {"command": "ls -a", "description": "control"})
    assert outcome.error is None, outcome.error_text
    assert "hookcode.toml" in outcome.result.output


# ---------------------------------------------------------------------------------------------
# the safety issue: opaque commands, defaults, explain, --yes, protected writes (CLI)
# ---------------------------------------------------------------------------------------------


def _cli(hookcode_env: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(hookcode_env.env)
    env.pop("HOOKCODE_LOAD_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-m", "hookcode", *args],
        env=env,
        cwd=hookcode_env.project,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_explain_says_why_a_command_is_opaque(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": {"*": "deny", "echo *": "allow"}}})
    proc = _cli(hookcode_env, "permissions", "explain", "bash", "echo ${x:-`touch P`}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("deny")
    assert "opaque: the command could not be analysed completely" in proc.stdout
    assert "the operand of ${x:-`touch P`} expands or quotes" in proc.stdout
    proc = _cli(hookcode_env, "permissions", "explain", "bash", "for x in a; do echo $((x)); done",
                "--json")  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["decision"] == "deny" and data["opaque"]
    assert any("arithmetic" in reason for reason in data["reasons"])


def test_the_default_asks_for_what_is_not_read_only(hookcode_env: Any) -> None:
    for command, expected in [
        ("rm -rf /", "ask"),
        ("ls -la", "allow"),
        ("git status && git diff | head", "allow"),
        ("echo hi > notes.txt", "ask"),
        ("find . -name x -delete", "ask"),
        ("cat README.md", "allow"),
        ("python -c 'print(1)'", "ask"),
    ]:
        proc = _cli(hookcode_env, "permissions", "explain", "bash", command, "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["decision"] == expected, (command, proc.stdout)


def test_bash_allow_restores_allow_all_but_not_for_opaque(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": "allow"}})
    for command, expected in [("rm -rf build", "allow"), ("echo ${!x}", "ask")]:
        proc = _cli(hookcode_env, "permissions", "explain", "bash", command, "--json")
        assert json.loads(proc.stdout)["decision"] == expected, (command, proc.stdout)


def test_explain_lists_reads_and_protected_writes(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": "allow", "read": {"*.env": "deny"}}})
    (hookcode_env.project / ".env").write_text("K=v\n")
    proc = _cli(hookcode_env, "permissions", "explain", "bash", "cat .env > hookcode.toml",
                "--json")  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["decision"] == "deny"
    by_permission = {r["permission"]: r for r in data["requests"]}
    assert by_permission["read"]["decision"] == "deny"
    assert by_permission["edit"]["protected"] == {"hookcode.toml": "hookcode.toml"}
    assert by_permission["edit"]["decision"] == "ask"


def test_yes_never_approves_an_opaque_command_under_a_catch_all_deny(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": {"*": "deny", "echo *": "allow"}}})
    args = {"command": "echo ${x:-`touch P`}", "description": "attack"}
    proc = _cli(hookcode_env, "tools", "call", "bash", json.dumps(args), "--yes")
    assert proc.returncode == 1
    assert "denies what cannot be analysed" in proc.stderr
    assert not (hookcode_env.project / "P").exists()
    # without the catch-all deny it asks, and --yes answers the ask
    hookcode_env.write_config({"permission": {"bash": {"*": "ask", "echo *": "allow"}}})
    proc = _cli(hookcode_env, "tools", "call", "bash", json.dumps(args), "--yes")
    assert proc.returncode == 0, proc.stderr
    assert (hookcode_env.project / "P").exists()


def test_a_protected_write_through_bash_needs_a_rule_naming_it(hookcode_env: Any) -> None:
    config = hookcode_env.project / "hookcode.toml"
    hookcode_env.write_config({"permission": {"bash": "allow", "edit": "allow"}})
    before = config.read_text()
    args = {"command": "echo '[permission]' >> hookcode.toml", "description": "self-edit"}
    proc = _cli(hookcode_env, "tools", "call", "bash", json.dumps(args), "--yes")
    assert proc.returncode == 1
    assert "protected path" in proc.stderr and "--yes does not approve it" in proc.stderr
    assert config.read_text() == before
    hookcode_env.write_config(
        {"permission": {"bash": "allow", "edit": {"*": "allow", "hookcode.toml": "allow"}}}
    )
    before = config.read_text()
    proc = _cli(hookcode_env, "tools", "call", "bash", json.dumps(args))
    assert proc.returncode == 0, proc.stderr
    assert config.read_text() == before + "[permission]\n"


def test_read_rules_apply_to_shell_readers(hookcode_env: Any) -> None:
    hookcode_env.write_config({"permission": {"bash": "allow", "read": {"*.env": "deny"}}})
    (hookcode_env.project / ".env").write_text("TOKEN=sk-secret-value\n")
    for command in ("cat .env", "grep -r TOKEN .", "head -1 .env", "cat < .env"):
        args = {"command": command, "description": "read"}
        proc = _cli(hookcode_env, "tools", "call", "bash", json.dumps(args), "--yes")
        assert proc.returncode == 1, (command, proc.stdout)
        assert "sk-secret-value" not in proc.stdout + proc.stderr
