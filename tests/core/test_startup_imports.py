"""Start-up stays light (issue 9; ARCHITECTURE.md "Performance principles"): ``hookcode --help``
and ``hookcode tools list``, with every installed plugin, import no SDK, HTTP client, parser,
MCP or language-server client, and ``tools list`` builds no tool's argument model or schema.

Each command runs in a fresh interpreter (``python -c``) that calls the CLI's ``main`` and then
reports ``sys.modules``; ``-X importtime`` is not used because it does not report the modules
an entry point's ``load()`` imports. pydantic is not checked: typer brings it on the command
path (settled in ARCHITECTURE.md). The timings are in ``tests/benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

#: never imported by ``--help`` or ``tools list`` (top-level names, or exact module names)
HEAVY = (
    "anthropic",
    "httpx",
    "httpx2",
    "httpcore",
    "mcp",
    "tree_sitter",
    "tree_sitter_bash",
    "markdownify",
    "bs4",
    "rapidfuzz",
    "jsonschema",
    "openai",
    "yaml",
    "filelock",
    # language-server clients: hookcode's own, and the usual third-party ones
    "hookcode_tool_lsp.client",
    "hookcode_tool_lsp.manager",
    "pygls",
    "lsprotocol",
    "multilspy",
)
#: ``--help`` does not load the config (its pydantic models) or build a runtime, nor what only
#: a call, a permission request or a provider needs: the plugins import those when used
NOT_FOR_HELP = (
    "hookcode.config",
    "hookcode.runtime",
    "hookcode.store",
    "hookcode.permission",
    "hookcode.providers",
    "hookcode.agents",
    "hookcode.pipeline",
    "asyncio",
    "hookcode_tool_edit.replace",
    "hookcode_tool_websearch.exa",
    "hookcode_tool_skill._discovery",
    "hookcode_cache._lru",
    "hookcode_provider_anthropic.models",
)

RUN = textwrap.dedent(
    """
    import contextlib, io, json, sys

    # what main() imports first anyway: the CLI's shared state, where the runtime is built
    from hookcode.cli import main
    from hookcode.cli.state import CliState

    runtimes = []
    build = CliState.runtime

    def record(self, **kwargs):
        rt = build(self, **kwargs)
        if rt not in runtimes:
            runtimes.append(rt)
        return rt

    CliState.runtime = record

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(sys.argv[1:])
    built = []
    for rt in runtimes:
        for entry in rt.registry.entries.values():
            for tool in [entry.tool, *(getattr(s, "tool", None) for s in entry.shadows)]:
                if tool is None:
                    continue
                if getattr(tool, "_model", None) is not None:
                    built.append(f"{tool.name}._model")
                if getattr(tool, "_schema", None) is not None:
                    built.append(f"{tool.name}._schema")
    report = {
        "code": code,
        "output": out.getvalue(),
        "modules": sorted(sys.modules),
        "runtimes": len(runtimes),
        "tools": sum(len(rt.registry.entries) for rt in runtimes),
        "built": built,
    }
    print(json.dumps(report))
    """
)


def run_cli(args: list[str], hookcode_env: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=hookcode_env.env,
        cwd=hookcode_env.project,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def heavy(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or m.split(".")[0] in names)


@pytest.mark.parametrize("args", [["--help"], ["tools", "list"]], ids=["help", "tools-list"])
def test_startup_imports_no_heavy_module(args: list[str], hookcode_env: Any) -> None:
    report = run_cli(args, hookcode_env)
    assert report["code"] == 0, report["output"]
    assert "typer" in report["modules"]  # the check sees what was imported
    assert heavy(report["modules"], HEAVY) == []


def test_help_loads_no_config_or_runtime(hookcode_env: Any) -> None:
    report = run_cli(["--help"], hookcode_env)
    assert "tools" in report["output"]
    assert report["runtimes"] == 0
    assert heavy(report["modules"], NOT_FOR_HELP) == []
    # the plugins were loaded (they may add commands), just nothing heavy
    assert any(m.startswith("hookcode_tool_") for m in report["modules"])


def test_tools_list_builds_no_tool_schema(hookcode_env: Any) -> None:
    report = run_cli(["tools", "list"], hookcode_env)
    assert report["code"] == 0
    assert report["runtimes"] == 1 and report["tools"] > 0
    assert "read" in report["output"]
    assert report["built"] == []


def test_the_check_sees_a_built_schema(hookcode_env: Any) -> None:
    # `tools show` builds the schema: the same harness must notice it
    report = run_cli(["tools", "show", "read"], hookcode_env)
    assert report["code"] == 0
    assert "read._model" in report["built"] and "read._schema" in report["built"]
