"""Diagnostics after edits from language servers nobody here wrote, started cold by each test:
pyright (npm), pylsp (with its pyflakes extra) and typescript-language-server (npm, with
typescript 5), and
the wait's two edges against small scripted servers: work reported through ``$/progress``
extends the wait past a ready server's (``[lsp] diagnostics_ready_wait``), and a file no
server published for says "not received" instead of reading as clean."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_lsp import MESSAGE_LOOP, SHUTDOWN
from hookcode.testing import HookcodeEnv, invoke_tool
from hookcode_tool_lsp.client import LspClient
from hookcode_tool_lsp.manager import close_all, manager_for


@pytest.fixture(autouse=True)
def _stop_servers():
    yield
    close_all()


def ok(outcome: Any) -> Any:
    assert outcome.error is None, outcome.error_text
    return outcome.result


def env_with(root: Path, servers: dict[str, dict[str, Any]], **lsp: Any) -> HookcodeEnv:
    env = HookcodeEnv(root)
    env.write_config({"lsp": {**lsp, "servers": servers}})
    return env


def edit(rt: Any, path: Path, old: str, new: str) -> Any:
    sid = rt.create_session().id
    rt.file_times(sid).record(path)
    return ok(
        invoke_tool(
            rt, "edit", {"filePath": str(path), "oldString": old, "newString": new}, session_id=sid
        )
    )


def clients(rt: Any) -> list[LspClient]:
    return manager_for(rt).clients()


# ---------------------------------------------------------------------------------------------
# pyright (npm)
# ---------------------------------------------------------------------------------------------


def test_pyright_reports_a_type_error_after_an_edit(tmp_path: Path, lsp_server: Any) -> None:
    """Microsoft's pyright, started cold, reports the type error an edit introduces; a
    correcting edit clears it."""
    env = env_with(tmp_path, {"pyright": {"command": lsp_server("pyright"), "extensions": [".py"]}})
    path = env.project / "app.py"
    path.write_text("def main() -> int:\n    return 1\n")
    try:
        rt = env.runtime()
        result = edit(rt, path, "return 1", 'return "one"')
        assert "LSP errors detected in this file" in result.output, result.output
        (error,) = result.metadata["diagnostics"][str(path)]
        assert '"Literal[\'one\']" is not assignable to return type "int"' in error["message"]
        result = edit(rt, path, 'return "one"', "return 1")
        assert result.output == "Edit applied successfully.", result.output
        assert result.metadata["diagnostics"] == {}
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# pylsp
# ---------------------------------------------------------------------------------------------


def test_pylsp_reports_pyflakes_errors_after_an_edit(tmp_path: Path, lsp_server: Any) -> None:
    """pylsp publishes pyflakes' findings (its ``[pyflakes]`` extra is installed); a clean
    edit then clears them."""
    env = env_with(tmp_path, {"pylsp": {"command": lsp_server("pylsp"), "extensions": [".py"]}})
    path = env.project / "app.py"
    path.write_text("import os\n\n\ndef main():\n    return os.getcwd()\n")
    try:
        rt = env.runtime()
        result = edit(rt, path, "return os.getcwd()", "return missing_name")
        assert "LSP errors detected in this file" in result.output, result.output
        (error,) = result.metadata["diagnostics"][str(path)]
        assert "undefined name 'missing_name'" in error["message"]
        assert "not received" not in result.output
        result = edit(rt, path, "return missing_name", "return os.getcwd()")
        assert result.output == "Edit applied successfully."
        assert result.metadata["diagnostics"] == {}
        assert "diagnostics_missing" not in result.metadata
    finally:
        env.close()


def test_pylsp_workspace_symbol_says_the_server_lacks_it(tmp_path: Path, lsp_server: Any) -> None:
    """pylsp offers no ``workspaceSymbolProvider`` (python-lsp-server 1.x): the request is not
    sent, and the result says why rather than reading as "no such symbol". documentSymbol,
    which it does offer, answers."""
    env = env_with(tmp_path, {"pylsp": {"command": lsp_server("pylsp"), "extensions": [".py"]}})
    path = env.project / "shapes.py"
    path.write_text("class Square:\n    def area(self):\n        return 4\n")
    try:
        rt = env.runtime()
        args = {"filePath": str(path), "line": 1, "character": 8}
        result = ok(invoke_tool(rt, "lsp", {"operation": "workspaceSymbol", **args}))
        assert result.output == (
            "No results for workspaceSymbol: server 'pylsp' does not support workspace/symbol, "
            "so nothing was searched"
        )
        assert not clients(rt)[0].capabilities.get("workspaceSymbolProvider")
        result = ok(invoke_tool(rt, "lsp", {"operation": "documentSymbol", **args}))
        assert {s["name"] for s in json.loads(result.output)} >= {"Square"}
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# typescript-language-server
# ---------------------------------------------------------------------------------------------

TSCONFIG = {"compilerOptions": {"strict": True, "target": "es2022", "module": "es2022"}}


def test_a_cold_typescript_server_gets_its_diagnostics_in(tmp_path: Path, lsp_server: Any) -> None:
    """The first edit starts typescript-language-server cold: it loads the project (reported
    as ``$/progress`` work) before it checks the file; the edit's result has the type error,
    not an empty set."""
    command = lsp_server("typescript-language-server")
    env = env_with(
        tmp_path,
        {
            "typescript": {
                "command": command,
                "extensions": [".ts"],
                "root_markers": ["tsconfig.json"],
            }
        },
    )
    (env.project / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    (env.project / "util.ts").write_text(
        "export function add(a: number, b: number): number {\n  return a + b;\n}\n"
    )
    path = env.project / "main.ts"
    path.write_text('import { add } from "./util";\n\nexport const total: number = add(1, 2);\n')
    try:
        rt = env.runtime()
        result = edit(rt, path, "export const total: number", "export const total: string")
        assert "not received" not in result.output, result.output
        (error,) = result.metadata["diagnostics"][str(path)]
        assert "Type 'number' is not assignable to type 'string'" in error["message"]
        assert f'<diagnostics file="{path}">\nERROR [3:14]' in result.output
        result = edit(rt, path, "export const total: string", "export const total: number")
        assert result.metadata["diagnostics"] == {}
        assert "diagnostics_missing" not in result.metadata
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# the wait's edges, against scripted servers
# ---------------------------------------------------------------------------------------------

#: a server that, once ready, publishes after a change only when it has worked for longer
#: than the plain wait, reporting the work through $/progress (as typescript-language-server
#: or rust-analyzer do while they load or re-index a project)
BUSY_SERVER = (
    "import json, sys, time\n"
    + MESSAGE_LOOP
    + r"""
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {
            "textDocumentSync": 1}}})
    elif method == "textDocument/didOpen":  # ready at once: a clean first check
        doc = message["params"]["textDocument"]
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": doc["uri"], "version": doc["version"], "diagnostics": []}})
    elif method == "textDocument/didChange":  # then a long piece of work before the next
        doc = message["params"]["textDocument"]
        send({"jsonrpc": "2.0", "id": "p1", "method": "window/workDoneProgress/create",
              "params": {"token": "load"}})
        send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "load",
              "value": {"kind": "begin", "title": "Loading the project"}}})
        time.sleep(LOAD_SECONDS)
        send({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "load",
              "value": {"kind": "end"}}})
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": doc["uri"], "version": doc.get("version"), "diagnostics": [{
                "range": {"start": {"line": 0, "character": 0},
                          "end": {"line": 0, "character": 1}},
                "severity": 1, "message": "found after loading"}]}})
"""
    + SHUTDOWN
)

#: a server that never publishes anything
SILENT_SERVER = (
    "import json, sys\n"
    + MESSAGE_LOOP
    + r"""
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {
            "textDocumentSync": 1}}})
"""
    + SHUTDOWN
)


def scripted(tmp_path: Path, name: str, source: str) -> list[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(source))
    return [sys.executable, str(script)]


#: the wait for a ready server in these tests (``[lsp] diagnostics_ready_wait``, 3 s by
#: default): long enough for a scripted server's at-once reply on a loaded machine
READY_WAIT = 1


def test_work_in_progress_extends_the_wait(tmp_path: Path) -> None:
    """A ready server works for longer than the plain wait before it publishes: the wait goes
    on while its ``$/progress`` work runs, and the edit shows what it found."""
    load = READY_WAIT + 1.5
    source = BUSY_SERVER.replace("LOAD_SECONDS", repr(load))
    env = env_with(
        tmp_path,
        {"busy": {"command": scripted(tmp_path, "busy", source), "extensions": [".txt"]}},
        diagnostics_ready_wait=READY_WAIT,
    )
    path = env.project / "a.txt"
    path.write_text("one\n")
    try:
        rt = env.runtime()
        result = edit(rt, path, "one", "two")  # didOpen: checked at once, clean
        assert result.output == "Edit applied successfully."
        result = edit(rt, path, "two", "three")  # didChange: checked after the long work
        assert "found after loading" in result.output, result.output
        assert "not received" not in result.output
        (client,) = clients(rt)
        assert client.idle_since is not None and not client.work
    finally:
        env.close()


def test_no_diagnostics_in_time_is_said_not_read_as_clean(tmp_path: Path) -> None:
    """A cold server gets ``[lsp] diagnostics_wait`` seconds, a ready one
    ``diagnostics_ready_wait``; when nothing came, the output says so and the metadata names
    the file (``diagnostics: {}`` alone would read as a clean file)."""
    command = scripted(tmp_path, "silent", SILENT_SERVER)
    servers = {"silent": {"command": command, "extensions": [".txt"]}}
    env = env_with(tmp_path, servers, diagnostics_wait=2, diagnostics_ready_wait=READY_WAIT)
    path = env.project / "a.txt"
    path.write_text("one\n")
    try:
        rt = env.runtime()
        result = edit(rt, path, "one", "two")
        assert f"diagnostics for {path} not received within 2 s" in result.output
        result = edit(rt, path, "two", "three")  # no longer taken as cold: the plain wait
        late = f"server 'silent': diagnostics for {path} not received within {READY_WAIT} s"
        assert result.output == (
            f"Edit applied successfully.\n\nLSP {late}: the file was not checked (it may still "
            "have errors)"
        )
        assert result.metadata["diagnostics"] == {}
        assert result.metadata["diagnostics_missing"] == [str(path)]
        assert result.metadata["lsp_skipped"] == [late]
    finally:
        env.close()
