"""The lsp tool and LSP diagnostics after edits (reference/tools.md §15, §23), against real
language servers from PyPI: jedi-language-server (fast) for navigation, basedpyright for type
errors and the call hierarchy. Each runs from its own cached venv (``lsp_servers.py``); a
failed install fails in CI and skips elsewhere. The servers of one module-scoped project are
shared by the tests that only look; tests that break or kill a server get their own."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.fake_lsp import MESSAGE_LOOP, SHUTDOWN
from hookcode.errors import PermissionRejected
from hookcode.testing import HookcodeEnv, ReplyWith, invoke_tool
from hookcode_tool_lsp import NO_SERVER
from hookcode_tool_lsp.manager import Manager, close_all, manager_for, settings_of

UTIL = '''\
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Base:
    def speak(self) -> str:
        raise NotImplementedError


class Dog(Base):
    def speak(self) -> str:
        return "woof"
'''
MAIN = """\
from util import Dog, add


def total() -> int:
    return add(1, 2)


def run() -> str:
    value = total()
    return Dog().speak() + str(value)
"""
TYPE_ERROR = 'Type "int" is not assignable to declared type "str"'
#: one worker starts the module's shared servers (``jedi_rt``, ``pyright_env``) and runs every
#: test of it, in the file's order, as they are written to
pytestmark = pytest.mark.xdist_group("lsp")


def servers_config(**servers: list[str]) -> dict:
    return {"lsp": {"servers": {
        name: {"command": command, "extensions": [".py"]} for name, command in servers.items()
    }}}


def make_env(root: Path, config: dict | None = None) -> HookcodeEnv:
    env = HookcodeEnv(root)
    (env.project / "util.py").write_text(UTIL)
    (env.project / "main.py").write_text(MAIN)
    (env.project / "notes.txt").write_text("no server for this\n")
    if config is not None:
        env.write_config(config)
    return env


def ok(outcome):
    assert outcome.error is None, outcome.error_text
    return outcome.result


def lsp(rt, operation: str, file: str, line: int, character: int, **kwargs):
    return invoke_tool(
        rt, "lsp",
        {"operation": operation, "filePath": file, "line": line, "character": character},
        **kwargs,
    )


@pytest.fixture(scope="module")
def jedi_rt(tmp_path_factory, lsp_server):
    """A project whose .py files are served by jedi-language-server only."""
    env = make_env(tmp_path_factory.mktemp("jedi"),
                   servers_config(jedi=lsp_server("jedi-language-server")))
    yield env.runtime()
    env.close()


@pytest.fixture(scope="module")
def pyright_env(tmp_path_factory, lsp_server):
    """A project whose .py files are served by basedpyright only."""
    env = make_env(tmp_path_factory.mktemp("basedpyright"),
                   servers_config(basedpyright=lsp_server("basedpyright")))
    yield env
    env.close()


@pytest.fixture(scope="module")
def pyright_rt(pyright_env):
    return pyright_env.runtime()


@pytest.fixture(scope="module", autouse=True)
def _stop_servers():
    yield
    close_all()


def server_pids(rt) -> list[int]:
    return [c.pid for c in manager_for(rt).clients() if c.pid is not None]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# the tool's schema and the errors before any server
# ---------------------------------------------------------------------------------------------


def test_schema_names_the_nine_operations_and_one_based_positions(hookcode_runtime):
    entry = hookcode_runtime.registry.entries["lsp"]
    schema = entry.tool.parameters
    assert list(schema["properties"]) == ["operation", "filePath", "line", "character"]
    assert schema["properties"]["operation"]["enum"] == [
        "goToDefinition", "findReferences", "hover", "documentSymbol", "workspaceSymbol",
        "goToImplementation", "prepareCallHierarchy", "incomingCalls", "outgoingCalls",
    ]
    assert schema["properties"]["line"]["minimum"] == 1
    assert schema["properties"]["character"]["minimum"] == 1
    out = lsp(hookcode_runtime, "hover", "x.py", 0, 1)
    assert "line: Input should be greater than or equal to 1" in out.error_text


def test_missing_file_and_file_type_without_server(hookcode_env):
    (hookcode_env.project / "notes.txt").write_text("hello\n")
    rt = hookcode_env.runtime()
    out = lsp(rt, "hover", "nope.py", 1, 1)
    assert out.error_text == f"File not found: {hookcode_env.project / 'nope.py'}"
    out = lsp(rt, "hover", "notes.txt", 1, 1)
    assert out.error_text == NO_SERVER == "No LSP server available for this file type."


def test_outside_the_project_asks_external_directory_then_lsp(hookcode_env, tmp_path):
    outside = tmp_path / "elsewhere" / "x.txt"
    outside.parent.mkdir()
    outside.write_text("x\n")
    front = hookcode_env.register(ReplyWith("reject"), "front")
    hookcode_env.write_config({"permission": {"lsp": "ask"}})
    rt = hookcode_env.runtime()
    out = lsp(rt, "hover", str(outside), 1, 1)
    assert isinstance(out.error, PermissionRejected)
    assert [r.permission for r in front.requests] == ["external_directory"]
    assert front.requests[0].patterns == [f"{outside.parent}/*"]

    front.reply = ReplyWith("once").reply
    front.requests.clear()
    out = lsp(rt, "hover", str(outside), 1, 1)
    assert [(r.permission, r.patterns) for r in front.requests] == [
        ("external_directory", [f"{outside.parent}/*"]), ("lsp", ["*"])
    ]
    assert out.error_text == NO_SERVER


def test_disabled_hides_the_tool_and_the_diagnostics(hookcode_env, lsp_server):
    hookcode_env.write_config({"lsp": {"enabled": False, "servers": {
        "jedi": {"command": lsp_server("jedi-language-server"), "extensions": [".py"]}}}})
    rt = hookcode_env.runtime()
    assert "lsp" not in rt.registry.entries
    out = invoke_tool(rt, "write", {"filePath": "a.py", "content": "x: str = 1\n"})
    assert ok(out).output == "Wrote file successfully."
    assert manager_for(rt).clients() == []


# ---------------------------------------------------------------------------------------------
# the nine operations
# ---------------------------------------------------------------------------------------------


def test_go_to_definition_across_files(jedi_rt):
    result = ok(lsp(jedi_rt, "goToDefinition", "main.py", 5, 12))  # add(1, 2)
    assert result.title == "goToDefinition main.py:5:12"
    found = json.loads(result.output)
    assert result.output == json.dumps(found, indent=2)
    assert found == [{
        "uri": (jedi_rt.cwd / "util.py").as_uri(),
        "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 7}},
    }]
    assert result.metadata["result"] == found


def test_find_references(jedi_rt):
    found = json.loads(ok(lsp(jedi_rt, "findReferences", "util.py", 1, 5)).output)
    places = sorted((Path(r["uri"]).name, r["range"]["start"]["line"]) for r in found)
    assert places == [("main.py", 0), ("main.py", 4), ("util.py", 0)]


def test_hover(jedi_rt):
    (hover,) = json.loads(ok(lsp(jedi_rt, "hover", str(jedi_rt.cwd / "main.py"), 5, 13)).output)
    assert "def add(a: int, b: int) -> int" in hover["contents"]["value"]
    assert "Add two integers." in hover["contents"]["value"]


def test_document_symbol(jedi_rt):
    found = json.loads(ok(lsp(jedi_rt, "documentSymbol", "util.py", 1, 1)).output)
    names = {s["name"] for s in found}
    assert {"add", "Base", "Dog"} <= names
    dog = next(s for s in found if s["name"] == "Dog")
    assert [c["name"] for c in dog.get("children", [])] == ["speak"]


def test_workspace_symbol_searches_the_identifier_at_the_position(jedi_rt):
    found = json.loads(ok(lsp(jedi_rt, "workspaceSymbol", "main.py", 5, 12)).output)
    assert [(s["name"], Path(s["location"]["uri"]).name) for s in found] == [("add", "util.py")]


def test_an_operation_the_server_lacks_says_so(jedi_rt):
    """jedi-language-server offers no implementationProvider: the result says the server does
    not support it (an empty list alone would read as "searched, nothing found")."""
    result = ok(lsp(jedi_rt, "goToImplementation", "util.py", 7, 9))
    assert result.output == (
        "No results for goToImplementation: server 'jedi' does not support "
        "textDocument/implementation, so nothing was searched"
    )
    assert result.metadata["result"] == [] and result.metadata["unsupported"] is True
    result = ok(lsp(jedi_rt, "incomingCalls", "util.py", 1, 5))
    assert "server 'jedi' does not support callHierarchy/incomingCalls" in result.output


def test_go_to_implementation(pyright_rt):
    found = json.loads(ok(lsp(pyright_rt, "goToImplementation", "main.py", 10, 18)).output)
    assert [(Path(f["uri"]).name, f["range"]["start"]["line"]) for f in found] == [("util.py", 11)]


def test_call_hierarchy(pyright_rt):
    (item,) = json.loads(ok(lsp(pyright_rt, "prepareCallHierarchy", "util.py", 1, 5)).output)
    assert (item["name"], item["kind"]) == ("add", 12)
    incoming = json.loads(ok(lsp(pyright_rt, "incomingCalls", "util.py", 1, 5)).output)
    assert [(c["from"]["name"], Path(c["from"]["uri"]).name) for c in incoming] == [
        ("total", "main.py")
    ]
    outgoing = json.loads(ok(lsp(pyright_rt, "outgoingCalls", "main.py", 4, 5)).output)
    assert [c["to"]["name"] for c in outgoing] == ["add"]


def test_no_result_at_an_empty_position(pyright_rt):
    result = ok(lsp(pyright_rt, "goToDefinition", "main.py", 3, 1))  # an empty line
    assert result.output == "No results found for goToDefinition"


# ---------------------------------------------------------------------------------------------
# diagnostics after edits
# ---------------------------------------------------------------------------------------------


def session_with(rt, *paths: Path) -> str:
    sid = rt.create_session().id
    for path in paths:
        rt.file_times(sid).record(path)
    return sid


def test_edit_with_a_type_error_gets_the_diagnostics_block(pyright_env, pyright_rt):
    path = pyright_env.project / "edit_bad.py"
    path.write_text("from util import add\n\nx: int = add(1, 2)\n")
    sid = session_with(pyright_rt, path)
    started = time.perf_counter()
    result = ok(invoke_tool(pyright_rt, "edit", {
        "filePath": str(path), "oldString": "x: int", "newString": "x: str"}, session_id=sid))
    elapsed = time.perf_counter() - started
    head = (
        "Edit applied successfully.\n\nLSP errors detected in this file, please fix:\n"
        f'<diagnostics file="{path}">\nERROR [3:10] {TYPE_ERROR}'
    )
    assert result.output.startswith(head), result.output
    assert result.output.endswith("\n</diagnostics>")
    (error,) = result.metadata["diagnostics"][str(path)]
    assert error["severity"] == 1 and error["message"].startswith(TYPE_ERROR)
    assert list(result.metadata["diagnostics"]) == [str(path)]
    assert elapsed < 10, elapsed  # a cold server: start + first check


def test_clean_edit_gets_nothing(pyright_env, pyright_rt):
    path = pyright_env.project / "edit_clean.py"
    path.write_text("from util import add\n\nx: int = add(1, 2)\n")
    sid = session_with(pyright_rt, path)
    result = ok(invoke_tool(pyright_rt, "edit", {
        "filePath": str(path), "oldString": "add(1, 2)", "newString": "add(3, 4)"},
        session_id=sid))
    assert result.output == "Edit applied successfully."
    assert result.metadata["diagnostics"] == {}


def test_multiedit_and_apply_patch_get_their_blocks(pyright_env, pyright_rt):
    path = pyright_env.project / "multi.py"
    path.write_text("a: int = 1\nb: int = 2\n")
    sid = session_with(pyright_rt, path)
    result = ok(invoke_tool(pyright_rt, "multiedit", {"filePath": str(path), "edits": [
        {"filePath": str(path), "oldString": "a: int = 1", "newString": 'a: int = "x"'},
        {"filePath": str(path), "oldString": "b: int = 2", "newString": "b: int = 3"},
    ]}, session_id=sid))
    assert result.output.startswith(
        "Edit applied successfully.\n\nLSP errors detected in this file, please fix:\n"
        f'<diagnostics file="{path}">\nERROR [1:10] Type "Literal[\'x\']" is not assignable'
    ), result.output

    patch = textwrap.dedent("""\
        *** Begin Patch
        *** Add File: pkg/new.py
        +y: str = 1
        *** Update File: multi.py
        @@
        -a: int = "x"
        +a: int = 1
        *** End Patch""")
    result = ok(invoke_tool(pyright_rt, "apply_patch", {"patchText": patch}, session_id=sid))
    new = pyright_env.project / "pkg" / "new.py"
    assert result.output == (
        "Success. Updated the following files:\nA pkg/new.py\nM multi.py"
        "\n\nLSP errors detected in pkg/new.py, please fix:\n"
        f'<diagnostics file="{new}">\n'
        'ERROR [1:10] Type "Literal[1]" is not assignable to declared type "str"\n'
        '\xa0\xa0"Literal[1]" is not assignable to "str"\n</diagnostics>'
    )
    assert list(result.metadata["diagnostics"]) == [str(new)]

    # a deleted file is closed in the server: its errors are gone
    patch = "*** Begin Patch\n*** Delete File: pkg/new.py\n*** End Patch"
    result = ok(invoke_tool(pyright_rt, "apply_patch", {"patchText": patch}, session_id=sid))
    assert result.output == "Success. Updated the following files:\nD pkg/new.py"
    assert result.metadata["diagnostics"] == {}
    assert str(new) not in manager_for(pyright_rt).diagnostics()


def test_write_shows_errors_in_other_files(pyright_env, pyright_rt):
    lib = pyright_env.project / "lib_w.py"
    user = pyright_env.project / "user_w.py"
    user.write_text("from lib_w import name\n\nlabel: str = name()\n")
    sid = session_with(pyright_rt)
    ok(invoke_tool(pyright_rt, "write", {
        "filePath": str(lib), "content": "def name() -> str:\n    return 'x'\n"},
        session_id=sid))
    ok(invoke_tool(pyright_rt, "read", {"filePath": str(user)}, session_id=sid))  # opens it
    wait_until_open(pyright_rt, user)
    result = ok(invoke_tool(pyright_rt, "write", {
        "filePath": str(lib), "content": "def name() -> int:\n    return 1\n"}, session_id=sid))
    # the other files with errors in this project (earlier tests left some) follow one header
    head = "Wrote file successfully.\n\nLSP errors detected in other files:\n<diagnostics file="
    assert result.output.startswith(head), result.output
    assert result.output.count("LSP errors detected") == 1
    assert (
        f'<diagnostics file="{user}">\nERROR [3:14] Type "int" is not assignable to declared '
        'type "str"\n\xa0\xa0"int" is not assignable to "str"\n</diagnostics>'
    ) in result.output
    assert f'<diagnostics file="{lib}">' not in result.output
    assert str(user) in result.metadata["diagnostics"]
    assert str(lib) not in result.metadata["diagnostics"]
    assert len(result.metadata["diagnostics"]) <= 5


def wait_until_open(rt, path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(path.as_uri() in c.documents for c in manager_for(rt).clients()):
            return
        time.sleep(0.02)
    pytest.fail(f"{path} was not opened in a server")


def test_read_warms_the_server_without_waiting(hookcode_env, lsp_server):
    hookcode_env.write_config(servers_config(jedi=lsp_server("jedi-language-server")))
    path = hookcode_env.project / "warm.py"
    path.write_text("x = 1\n")
    (hookcode_env.project / "notes.txt").write_text("no server for this\n")
    rt = hookcode_env.runtime()
    started = time.perf_counter()
    ok(invoke_tool(rt, "read", {"filePath": str(path)}))
    assert time.perf_counter() - started < 0.8  # jedi takes over a second to start
    manager = manager_for(rt)
    wait_until_open(rt, path)
    ok(invoke_tool(rt, "read", {"filePath": str(hookcode_env.project / "notes.txt")}))
    assert len(manager.clients()) == 1
    # closing the runtime stops its servers
    pids = server_pids(rt)
    rt.close()
    assert manager.clients() == [] and not any(alive(p) for p in pids)


# ---------------------------------------------------------------------------------------------
# servers that are missing or crash
# ---------------------------------------------------------------------------------------------


def test_a_configured_server_that_does_not_exist_leaves_a_note(hookcode_env):
    hookcode_env.write_config(servers_config(ghost=["no-such-langserver", "--stdio"]))
    rt = hookcode_env.runtime()
    result = ok(invoke_tool(rt, "write", {"filePath": "a.py", "content": "x: str = 1\n"}))
    assert (hookcode_env.project / "a.py").read_text() == "x: str = 1\n"
    assert result.output == (
        "Wrote file successfully.\n\nLSP diagnostics skipped: server 'ghost' is unavailable: "
        "command not found: no-such-langserver"
    )
    assert result.metadata["diagnostics"] == {}
    out = lsp(rt, "hover", "a.py", 1, 1)
    assert out.error_text == (
        "No LSP server could answer: server 'ghost' is unavailable: command not found: "
        "no-such-langserver"
    )


def test_a_server_that_exits_at_once_leaves_a_note(hookcode_env):
    hookcode_env.write_config(servers_config(
        quitter=[sys.executable, "-c", "import sys; print('bad flag', file=sys.stderr); "
                 "sys.exit(2)"]))
    rt = hookcode_env.runtime()
    result = ok(invoke_tool(rt, "write", {"filePath": "a.py", "content": "x = 1\n"}))
    assert result.output == (
        "Wrote file successfully.\n\nLSP diagnostics skipped: server 'quitter' could not start: "
        "exited with code 2: bad flag"
    )


CRASHY = (
    r'''
import json, sys
from pathlib import Path

counter = Path(sys.argv[1])
starts = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(starts))
'''
    + MESSAGE_LOOP
    + r'''    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method in ("textDocument/didOpen", "textDocument/didChange"):
        if starts == 1:
            print("boom: cannot check this", file=sys.stderr, flush=True)
            sys.exit(3)
        doc = message["params"]["textDocument"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": doc["uri"], "version": doc.get("version"), "diagnostics": [
                {"range": {"start": {"line": 0, "character": 0},
                           "end": {"line": 0, "character": 1}},
                 "severity": 1, "message": f"checked by start {starts}"},
                {"range": {"start": {"line": 0, "character": 0},
                           "end": {"line": 0, "character": 1}},
                 "severity": 2, "message": "a warning is not shown"}]}})
'''
    + SHUTDOWN
)


def test_a_server_that_crashes_mid_way_is_noted_then_restarted(hookcode_env, tmp_path):
    script = tmp_path / "crashy.py"
    script.write_text(CRASHY)
    counter = tmp_path / "starts"
    hookcode_env.write_config(servers_config(crashy=[sys.executable, str(script), str(counter)]))
    rt = hookcode_env.runtime()
    sid = rt.create_session().id
    first = ok(invoke_tool(rt, "write", {"filePath": "a.py", "content": "x = 1\n"},
                           session_id=sid))
    assert first.output == (
        "Wrote file successfully.\n\nLSP diagnostics skipped: server 'crashy' exited with "
        "code 3: boom: cannot check this; it will be restarted on next use"
    )
    assert first.metadata["lsp_skipped"] and first.metadata["diagnostics"] == {}
    path = hookcode_env.project / "a.py"
    second = ok(invoke_tool(rt, "write", {"filePath": "a.py", "content": "x = 2\n"},
                            session_id=sid))
    assert second.output == (
        "Wrote file successfully.\n\nLSP errors detected in this file, please fix:\n"
        f'<diagnostics file="{path}">\nERROR [1:1] checked by start 2\n</diagnostics>'
    )
    assert counter.read_text() == "2"
    assert [d["message"] for d in second.metadata["diagnostics"][str(path)]] == [
        "checked by start 2"
    ]


def test_a_killed_server_is_restarted_on_next_use(hookcode_env, lsp_server):
    hookcode_env.write_config(servers_config(basedpyright=lsp_server("basedpyright")))
    path = hookcode_env.project / "k.py"
    path.write_text("x: int = 1\n")
    rt = hookcode_env.runtime()
    sid = session_with(rt, path)
    first = ok(invoke_tool(rt, "edit", {
        "filePath": str(path), "oldString": "= 1", "newString": "= 2"}, session_id=sid))
    assert first.output == "Edit applied successfully."
    (pid,) = server_pids(rt)
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = ok(invoke_tool(rt, "edit", {
        "filePath": str(path), "oldString": "x: int = 2", "newString": 'x: int = "2"'},
        session_id=sid))
    assert "LSP errors detected in this file, please fix:" in second.output, second.output
    assert "LSP diagnostics skipped" not in second.output
    assert manager_for(rt).starts["basedpyright"] == 2
    assert server_pids(rt) != [pid]


# ---------------------------------------------------------------------------------------------
# server discovery and the CLI
# ---------------------------------------------------------------------------------------------


def test_default_python_server_is_found_on_path(hookcode_env, lsp_server):
    bin_dir = str(Path(lsp_server("basedpyright")[0]).parent)
    rt = hookcode_env.runtime(PATH=bin_dir + os.pathsep + hookcode_env.env.get("PATH", ""))
    manager = Manager(settings_of(rt.config), env=rt.env, cwd=rt.cwd, worktree=rt.worktree)
    (spec,) = manager.specs_for("x.py")
    assert spec.name == "basedpyright" and not spec.configured
    assert spec.command == (str(Path(bin_dir) / "basedpyright-langserver"), "--stdio")
    assert manager.specs_for("x.txt") == []
    # a server configured for the extension replaces the defaults; disabled ones are skipped
    hookcode_env.write_config({"lsp": {"servers": {
        "basedpyright": {"disabled": True},
        "mine": {"command": ["no-such-server"], "extensions": ["py"]},
    }}})
    rt = hookcode_env.runtime(PATH=bin_dir)
    manager = Manager(settings_of(rt.config), env=rt.env, cwd=rt.cwd, worktree=rt.worktree)
    (spec,) = manager.specs_for("x.PY")
    assert (spec.name, spec.unavailable) == ("mine", "command not found: no-such-server")


def test_root_is_the_nearest_marker_directory(hookcode_env):
    sub = hookcode_env.project / "pkg" / "inner"
    sub.mkdir(parents=True)
    (hookcode_env.project / "pkg" / "pyproject.toml").write_text("")
    hookcode_env.write_config(servers_config(x=["x"]))
    rt = hookcode_env.runtime()
    manager = Manager(settings_of(rt.config), env=rt.env, cwd=rt.cwd, worktree=rt.worktree)
    spec = manager.specs[0]
    assert manager.root_for(spec, sub / "m.py") == rt.worktree  # no markers configured
    spec = manager.specs[0].__class__(**{**spec.__dict__, "root_markers": ("pyproject.toml",)})
    assert manager.root_for(spec, sub / "m.py") == hookcode_env.project / "pkg"
    assert manager.root_for(spec, hookcode_env.project / "m.py") == rt.worktree


def test_tools_call_lsp_from_the_cli(tmp_path, lsp_server):
    env = make_env(tmp_path / "cli", servers_config(jedi=lsp_server("jedi-language-server")))
    proc = subprocess.run(
        [sys.executable, "-m", "hookcode", "-C", str(env.project), "tools", "call", "lsp",
         json.dumps({"operation": "hover", "filePath": "main.py", "line": 5, "character": 13}),
         "--json", "--yes"],
        capture_output=True, text=True, timeout=60, env=env.env,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["error"] is None
    assert data["title"] == "hover main.py:5:13"
    assert "def add(a: int, b: int) -> int" in data["output"]


def test_cancelling_the_caller_does_not_break_the_server(jedi_rt):
    (jedi_rt.cwd / "cancel_me.py").write_text("def f() -> int:\n    return 1\n")
    args = {"operation": "documentSymbol", "filePath": "cancel_me.py", "line": 1, "character": 1}

    async def cancelled_then_again():
        from hookcode.testing import ainvoke_tool

        # cancelled while the server checks the newly opened file (jedi takes ~1 s)
        task = asyncio.ensure_future(ainvoke_tool(jedi_rt, "lsp", args))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await ainvoke_tool(jedi_rt, "lsp", args)

    result = ok(asyncio.run(cancelled_then_again()))
    assert [s["name"] for s in json.loads(result.output)] == ["f"]


DRIVER = """
import json, sys, time
from hookcode.runtime import Runtime
from hookcode.testing import invoke_tool
from hookcode_tool_lsp.manager import manager_for

rt = Runtime(cwd=sys.argv[1])
out = invoke_tool(rt, "lsp", {"operation": "hover", "filePath": "main.py", "line": 5,
                             "character": 13})
assert out.error is None, out.error_text
print(json.dumps([c.pid for c in manager_for(rt).clients()]), flush=True)
time.sleep(120)
"""


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_servers_die_with_a_killed_hookcode(tmp_path, lsp_server):
    # basedpyright-langserver is a Python script running node: both must go
    env = make_env(tmp_path / "orphans", servers_config(bp=lsp_server("basedpyright")))
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(env.project)],
                            stdout=subprocess.PIPE, text=True, env=env.env)
    try:
        (pid,) = json.loads(proc.stdout.readline())
        members = group_members(pid)
        assert pid in members and len(members) >= 2  # the wrapper and node
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(pid) == []


def test_close_all_stops_every_server(jedi_rt, pyright_rt):
    # last: the module's shared servers are running by now
    pids = server_pids(jedi_rt) + server_pids(pyright_rt)
    assert len(pids) == 2 and all(alive(p) for p in pids)
    close_all()
    assert not any(alive(p) for p in pids)
    assert manager_for(jedi_rt).clients() == []


def test_late_publications_for_closed_documents_are_dropped(tmp_path):
    """A server may publish for a document after its didClose (a check that was under way
    when the file was deleted, or its clearing): nothing stale is kept, and a file that is
    not open but exists keeps what the server reports about it."""
    from hookcode_tool_lsp.client import Document, LspClient, path_to_uri

    client = LspClient("fake", ["true"], tmp_path)
    error = {"range": {}, "message": "boom", "severity": 1}
    gone, closed, kept = tmp_path / "gone.py", tmp_path / "closed.py", tmp_path / "kept.py"
    closed.write_text("x = 1\n")
    kept.write_text("x = 1\n")
    client.documents[path_to_uri(tmp_path / "open.py")] = Document(0, "")
    for path, diagnostics in ((gone, [error]), (closed, []), (kept, [error]),
                              (tmp_path / "open.py", [])):
        client._published({"uri": path_to_uri(path), "diagnostics": diagnostics})
    assert client.diagnostics() == {str(kept): [error], str(tmp_path / "open.py"): []}
    # a clearing publication removes what an earlier one reported
    client._published({"uri": path_to_uri(kept), "diagnostics": []})
    assert str(kept) not in client.diagnostics()


# ---------------------------------------------------------------------------------------------
# the read rules: the file is read and sent; results point into other files
# ---------------------------------------------------------------------------------------------


def test_read_rules_apply_to_the_file_and_to_the_results(tmp_path, lsp_server):
    config = servers_config(jedi=lsp_server("jedi-language-server"))
    config["permission"] = {"read": {"*": "allow", "*/util.py": "deny", "*/ask.py": "ask"}}
    env = make_env(tmp_path / "rules", config)
    (env.project / "ask.py").write_text("x = 1\n")
    try:
        rt = env.runtime()
        outcome = lsp(rt, "hover", "util.py", 1, 5)
        assert type(outcome.error).__name__ == "PermissionDenied"
        assert outcome.error_text == (
            f"The read rules deny {env.project / 'util.py'}: it is not sent to a language server."
        )
        outcome = lsp(rt, "hover", "ask.py", 1, 1)
        assert isinstance(outcome.error, PermissionRejected)
        assert rt.refusals[-1].permission == "read"
        # the definition of add() is in util.py: left out
        result = ok(lsp(rt, "goToDefinition", "main.py", 5, 12))
        assert result.output == "No results found for goToDefinition"
        found = json.loads(ok(lsp(rt, "findReferences", "main.py", 5, 12)).output)
        assert sorted(Path(r["uri"]).name for r in found) == ["main.py", "main.py"]
    finally:
        env.close()
