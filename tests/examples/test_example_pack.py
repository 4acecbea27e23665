"""The example packages, installed the way a user installs them.

Once per module: build the wheels of hookcode-core, ``examples/hookcode-pack-textstats`` and
``examples/hookcode-jsonl-log``, create a fresh virtual environment and install the three
wheels there (their dependencies pinned to ``uv.lock``). Then drive the installed ``hookcode``
command, and run each example's own tests inside that environment against the wheels. The
examples' tests also run from their checkout with this workspace's hookcode (nothing installed).
The root pytest config does not collect ``examples/`` itself (``norecursedirs``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers.venv import Installed, check, clean_env, install_wheels

#: one worker builds the module's environment (``installed``) and runs every test of it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("example-pack")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "hookcode-pack-textstats": ROOT / "examples" / "hookcode-pack-textstats",
    "hookcode-jsonl-log": ROOT / "examples" / "hookcode-jsonl-log",
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("examples")
    result = install_wheels(root, [ROOT / "core", *EXAMPLES.values()])
    assert [w.name.split("-")[0] for w in result.wheels] == [
        "hookcode_core",
        "hookcode_jsonl_log",
        "hookcode_pack_textstats",
    ]
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "a.txt").write_text("one two three\nfour five\n# TODO: six\n")
    return directory


def test_the_installed_hookcode_lists_the_pack_and_the_log_plugin(installed, project, tmp_path):
    proc = installed.hookcode("tools", "list", "--json", project=project, data=tmp_path / "data")
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in json.loads(proc.stdout)}
    for name in ("wordcount", "todo_scan"):
        assert tools[name]["plugin"] == "tool_textstats"
        assert tools[name]["distribution"] == "hookcode-pack-textstats"
    assert tools["wordcount"]["description"].startswith("Count the lines, words and characters")

    proc = installed.hookcode("plugins", "list", "--json", project=project, data=tmp_path / "data")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert {n: p["status"] for n, p in plugins.items()} == {
        "core": "loaded",
        "hooks_jsonl_log": "loaded",
        "tool_textstats": "loaded",
    }
    log_plugin = plugins["hooks_jsonl_log"]
    assert log_plugin["distribution"] == "hookcode-jsonl-log"
    assert log_plugin["version"] == "0.1.0"
    assert {"tool_execute_before", "tool_execute_after", "tool_execute_error"} <= set(
        log_plugin["hooks"]
    )
    assert plugins["tool_textstats"]["hooks"] == ["register_tools"]
    assert "failed to load" not in proc.stderr


def test_the_installed_hookcode_calls_the_pack_and_logs_each_call(installed, project, tmp_path):
    data = tmp_path / "data"

    ok = installed.hookcode(
        "tools",
        "call",
        "wordcount",
        '{"filePath": "a.txt"}',
        "--json",
        "--yes",
        project=project,
        data=data,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    result = json.loads(ok.stdout)
    assert result["error"] is None
    assert result["output"] == "a.txt: 3 lines, 8 words, 36 characters (36 bytes)"
    assert result["title"] == "a.txt"
    assert result["metadata"]["words"] == 8

    bad = installed.hookcode(
        "tools",
        "call",
        "wordcount",
        '{"filePath": 7}',
        "--json",
        "--yes",
        project=project,
        data=data,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    error = json.loads(bad.stdout)["error"]
    assert error.startswith("The wordcount tool was called with invalid arguments")
    assert "filePath: Input should be a valid string" in error

    # no policy plugin is installed, so without --yes the ask is a reject (headless)
    refused = installed.hookcode(
        "tools", "call", "todo_scan", "{}", "--json", project=project, data=data
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]

    scan = installed.hookcode(
        "tools",
        "call",
        "todo_scan",
        '{"include": "*.txt"}',
        "--json",
        "--yes",
        project=project,
        data=data,
    )
    assert scan.returncode == 0, scan.stdout + scan.stderr
    assert json.loads(scan.stdout)["output"] == "a.txt:3: # TODO: six"

    # the log plugin's default log is in the data directory: one line per call
    records = [json.loads(line) for line in (data / "tool-calls.jsonl").read_text().splitlines()]
    assert [(r["tool"], r["ok"]) for r in records] == [
        ("wordcount", True),
        ("wordcount", False),
        ("todo_scan", False),
        ("todo_scan", True),
    ]
    assert records[0]["args"] == {"filePath": "a.txt"}
    assert records[0]["title"] == "a.txt"
    assert records[0]["duration_ms"] >= 0
    assert records[1]["error"] == error
    assert records[1]["error_type"] == "InvalidArguments"
    assert records[2]["error_type"] == "PermissionRejected"
    assert records[3]["args"] == {"path": ".", "include": "*.txt", "limit": 100}
    assert len({r["session_id"] for r in records}) == 4  # each `tools call` is a fresh session

    # HOOKCODE_JSONL_LOG moves the log
    elsewhere = tmp_path / "logs" / "calls.jsonl"
    again = installed.hookcode(
        "tools",
        "call",
        "wordcount",
        '{"filePath": "a.txt"}',
        "--yes",
        project=project,
        data=data,
        HOOKCODE_JSONL_LOG=str(elsewhere),
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == "a.txt: 3 lines, 8 words, 36 characters (36 bytes)\n"
    assert [json.loads(line)["tool"] for line in elsewhere.read_text().splitlines()] == [
        "wordcount"
    ]
    assert len((data / "tool-calls.jsonl").read_text().splitlines()) == 4


def test_the_examples_own_tests_pass_against_the_installed_wheels(installed, tmp_path):
    # copies of the test directories, so nothing but the installed wheels can be imported
    copies = []
    for name, source in EXAMPLES.items():
        copy = tmp_path / name
        shutil.copytree(source / "tests", copy / "tests")
        copies.append(copy / "tests")
    python = installed.exe("python")
    where = check(
        [
            python,
            "-c",
            "import hookcode_pack_textstats as a, hookcode_jsonl_log as b; "
            "print(a.__file__); print(b.__file__)",
        ],
        cwd=tmp_path,
        env=clean_env(),
    )
    for line in where.stdout.splitlines():
        assert "site-packages" in line, line
    proc = check(
        [installed.exe("pytest"), "-q", "-p", "no:cacheprovider", "-rs", *copies],
        cwd=tmp_path,
        env=clean_env(),
    )
    assert " passed" in proc.stdout
    assert "skipped" not in proc.stdout
    assert "error" not in proc.stdout.splitlines()[-1]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_examples_own_tests_pass_in_a_checkout(name):
    # `pytest` in the example's directory, with this workspace's hookcode and no install
    proc = check(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=EXAMPLES[name],
        env=clean_env(),
    )
    assert " passed" in proc.stdout
    assert "skipped" not in proc.stdout
