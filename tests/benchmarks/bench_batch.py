"""batch budget (issue 7, "Performance"): one batch of 25 calls that each wait 200 ms, under
0.5 s.

Run from the repository root (a few seconds):

    uv run --no-sync python tests/benchmarks/bench_batch.py [--repeat 5]

Each sub-call is a full ``invoke`` (hooks, permission check, truncation, its own stored part).
Three batches: 25 async waits, 25 sync waits (each sleeps in the runtime's worker pool, so the
pool must hold a full batch), and 13 + 12 of both mixed. Figure: the median wall time of one
``batch`` invoke; anchor: one such call alone, through the same pipeline. Everything lives in
a temporary data directory, deleted afterwards. Exit status 1 when the budget is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, machine, ms

BUDGET = 0.5
WAIT = 0.2


def _runtime(root: Path) -> Any:
    from hookcode import ToolContext, hookimpl, tool
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    @tool
    async def wait_async(ctx: ToolContext, label: str) -> str:
        """Wait 200 ms (async)."""
        await asyncio.sleep(WAIT)
        return label

    @tool
    def wait_sync(ctx: ToolContext, label: str) -> str:
        """Wait 200 ms in a worker thread."""
        time.sleep(WAIT)
        return label

    class Pack:
        @hookimpl
        def register_tools(self, register):
            register(wait_async, wait_sync)

    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root / "home"),
        HOOKCODE_LOAD_PLUGINS="policy_rules,tool_batch",
    )
    plugins = create_plugins(env=env, extra={"bench": Pack()}, cwd=project)
    return Runtime(cwd=project, env=env, plugins=plugins)


def _timed(rt: Any, session_id: str, name: str, args: dict[str, Any]) -> tuple[float, Any]:
    from hookcode.testing import ainvoke_tool

    started = time.perf_counter()
    outcome = asyncio.run(ainvoke_tool(rt, name, args, session_id=session_id))
    return time.perf_counter() - started, outcome


def bench(report: Report, root: Path, repeat: int) -> None:
    rt = _runtime(root)
    try:
        session = rt.create_session(title="bench")
        _timed(rt, session.id, "wait_async", {"label": "warm"})  # warm the pipeline
        anchor = statistics.median(
            _timed(rt, session.id, "wait_sync", {"label": "x"})[0] for _ in range(repeat)
        )
        mixes = {
            "25 async": ["wait_async"] * 25,
            "25 sync": ["wait_sync"] * 25,
            "13 async + 12 sync": ["wait_async", "wait_sync"] * 12 + ["wait_async"],
        }
        for label, tools in mixes.items():
            calls = [{"tool": t, "parameters": {"label": f"c{n}"}} for n, t in enumerate(tools)]
            times = []
            for _ in range(repeat):
                seconds, outcome = _timed(rt, session.id, "batch", {"tool_calls": calls})
                assert outcome.ok, outcome.error_text
                assert outcome.result.metadata["successful"] == 25, outcome.result.output
                times.append(seconds)
            value = statistics.median(times)
            report.row(
                f"batch of {label} calls x 200 ms",
                ms(value),
                f"one call {ms(anchor)}",
                value / anchor,
                "< 0.5 s",
                value < BUDGET,
            )
    finally:
        rt.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
    report = Report("batch")
    root = Path(tempfile.mkdtemp(prefix="hookcode-bench-batch-"))
    try:
        bench(report, root, max(1, args.repeat))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.print()
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
