"""LSP diagnostics benchmark (issue 7, "Performance"): not collected by pytest.

    uv run --no-sync python tests/benchmarks/bench_lsp.py [--repeat 7]

First diagnostics after an edit, server warm (budget: under 1.5 s): the ``edit`` tool through
``pipeline.invoke`` on a file basedpyright has already checked, alternately introducing the
type error ``x: str = add(1, 2)`` and removing it; the figure is the whole call (the edit, the
``didChange``, waiting for ``publishDiagnostics`` with its 150 ms quiet time, the block
appended). Beside it, in the same run:

- the anchor: the raw round trip ``didChange`` -> ``publishDiagnostics`` with the same server
  (another basedpyright process on the same project) driven directly by a minimal
  Content-Length client written here, not the plugin's;
- the edit tool alone (the lsp plugin blocked), what the edit costs without diagnostics.

basedpyright comes from PyPI into its own cached venv (tests/builtin_tools/lsp_servers.py).
Exit status 1 when a figure is over budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Report, machine, ms

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # helpers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "builtin_tools"))
from lsp_servers import server_command

BUDGET = 1.5
UTIL = "def add(a: int, b: int) -> int:\n    return a + b\n"
GOOD = "from util import add\n\nx: int = add(1, 2)\n" + "".join(
    f"\n\ndef f{i}(v: int) -> int:\n    return add(v, {i})\n" for i in range(200)
)
BAD = GOOD.replace("x: int = add(1, 2)", "x: str = add(1, 2)", 1)
TYPE_ERROR = 'Type "int" is not assignable to declared type "str"'


def make_project(root: Path) -> Path:
    project = root / "project"
    project.mkdir(parents=True)
    (project / "util.py").write_text(UTIL)
    (project / "main.py").write_text(GOOD)
    return project


# ---------------------------------------------------------------------------------------------
# through the edit tool
# ---------------------------------------------------------------------------------------------


def through_tool(root: Path, command: list[str], repeat: int, *, blocked: bool) -> list[float]:
    from hookcode.testing import HookcodeEnv, ainvoke_tool

    project = make_project(root)
    kit = HookcodeEnv(root / "hookcode")
    extra = {"HOOKCODE_PERMISSION": json.dumps({"*": "allow"})}
    if blocked:
        extra["HOOKCODE_BLOCK_PLUGINS"] = "tool_lsp"
    if not blocked:
        (project / "hookcode.toml").write_text(
            f'[lsp.servers.basedpyright]\ncommand = {json.dumps(command)}\nextensions = [".py"]\n'
        )
    runtime = kit.runtime(cwd=project, **extra)
    session = runtime.create_session(title="bench").id
    target = project / "main.py"

    async def run() -> list[float]:
        async def call(tool: str, args: dict[str, Any]) -> Any:
            outcome = await ainvoke_tool(runtime, tool, args, session_id=session)
            if outcome.error is not None:
                raise SystemExit(f"{tool} failed: {outcome.error_text}")
            return outcome.result

        await call("read", {"filePath": str(target)})  # warms the server
        # warm: the first check of the file done (an untimed edit and back)
        await call("edit", {"filePath": str(target), "oldString": "x: int", "newString": "x: str"})
        await call("edit", {"filePath": str(target), "oldString": "x: str", "newString": "x: int"})
        times = []
        for i in range(repeat * 2):
            old, new = ("x: int", "x: str") if i % 2 == 0 else ("x: str", "x: int")
            start = time.perf_counter()
            result = await call(
                "edit", {"filePath": str(target), "oldString": old, "newString": new}
            )
            elapsed = time.perf_counter() - start
            has_error = TYPE_ERROR in result.output
            if not blocked and has_error != (new == "x: str"):
                raise SystemExit(f"unexpected diagnostics:\n{result.output}")
            if new == "x: str":  # the figure: an edit that introduces the error
                times.append(elapsed)
        return times

    try:
        return asyncio.run(run())
    finally:
        from hookcode_tool_lsp.manager import close_all

        close_all()
        kit.close()


# ---------------------------------------------------------------------------------------------
# the anchor: the same server driven directly
# ---------------------------------------------------------------------------------------------


class RawServer:
    """Just enough LSP to open a file, change it and read publishDiagnostics."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    async def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.proc.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = (await self.proc.stdout.readline()).strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message = json.loads(await self.proc.stdout.readexactly(length))
        if "id" in message and "method" in message:  # a server request: null answers
            items = (message.get("params") or {}).get("items")
            await self.send({"id": message["id"], "result": [None] * len(items) if items else None})
        return message

    async def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            message = await self.receive()
            if predicate(message):
                return message


async def anchor(root: Path, command: list[str], repeat: int) -> list[float]:
    project = make_project(root)
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=project,
        start_new_session=True,
    )
    server = RawServer(proc)
    uri = (project / "main.py").as_uri()
    await server.send(
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": project.as_uri(),
                "workspaceFolders": [{"uri": project.as_uri(), "name": "project"}],
                "capabilities": {
                    "textDocument": {"publishDiagnostics": {"versionSupport": True}},
                    "workspace": {"configuration": True},
                },
            },
        }
    )
    await server.until(lambda m: m.get("id") == 1 and "method" not in m)
    await server.send({"method": "initialized", "params": {}})

    def published(version: int) -> Any:
        return lambda m: (
            m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and m["params"].get("version", version) >= version
        )

    await server.send(
        {
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {"uri": uri, "languageId": "python", "version": 0, "text": GOOD}
            },
        }
    )
    await server.until(published(0))
    times = []
    for version in range(1, repeat * 2 + 1):
        text = BAD if version % 2 else GOOD
        start = time.perf_counter()
        await server.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": text}],
                },
            }
        )
        message = await server.until(published(version))
        elapsed = time.perf_counter() - start
        if bool(message["params"]["diagnostics"]) != (text == BAD):
            raise SystemExit(f"anchor: unexpected diagnostics {message['params']}")
        if text == BAD:
            times.append(elapsed)
    await server.send({"id": 2, "method": "shutdown", "params": None})
    await server.until(lambda m: m.get("id") == 2)
    await server.send({"method": "exit", "params": None})
    await proc.wait()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    command = server_command("basedpyright")
    report = Report("lsp: first diagnostics after an edit, server warm (basedpyright)")
    report.note(machine())
    report.note(f"main.py: {len(GOOD.splitlines())} lines; median of {options.repeat} edits")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-lsp-") as tmp:
        root = Path(tmp)
        raw = statistics.median(asyncio.run(anchor(root / "anchor", command, options.repeat)))
        tool = statistics.median(
            through_tool(root / "tool", command, options.repeat, blocked=False)
        )
        plain = statistics.median(
            through_tool(root / "plain", command, options.repeat, blocked=True)
        )
    report.row("anchor: didChange -> publishDiagnostics (raw)", ms(raw))
    report.row("edit tool, lsp plugin blocked", ms(plain))
    report.row(
        "edit tool with diagnostics",
        ms(tool),
        ms(raw),
        tool / raw,
        f"< {BUDGET:g} s",
        tool < BUDGET,
    )
    report.note(
        "the tool adds the edit itself, the 150 ms quiet time after the last "
        "publishDiagnostics and the thread hop to the servers' loop"
    )
    report.print()
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
