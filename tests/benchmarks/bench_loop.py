"""Agent-loop budgets (issue 5, "Performance"): loop overhead per step, 25 concurrent calls of one
step, ``sessions list`` with 10,000 sessions and ``sessions show`` of a session with 5,000 parts.

Run from the repository root (about half a minute):

    uv run --no-sync python tests/benchmarks/bench_loop.py [--only step,parallel,list,show]

Everything lives in a temporary data directory, deleted afterwards. Each figure is a median of
several runs, beside its anchor measured in the same run:

- step: a session of 100 steps with the scripted model, each step one call of a no-op tool
  (arguments differ, so the doom-loop check never asks); the time spent inside the model's
  stream is subtracted, so the figure is the loop's own cost per step: building the request
  (history, system prompt, tool definitions, hooks), storing the messages and parts, running
  the call through ``invoke``. Anchor: one ``invoke`` of the same tool (the pipeline alone).
  Budget: under 2 ms.
- parallel: one step with 25 calls that each wait 200 ms (an async tool, and a sync tool that
  sleeps in the worker pool), then a final answer; the whole run, model excluded. Anchor: one
  such call alone. Budget: under 0.5 s.
- list / show: ``hookcode sessions list --json`` over 10,000 sessions of the project, and
  ``hookcode sessions show ID --json`` of one session of 5,000 parts (2,500 tool calls with
  outputs, 2,500 texts, in 500 assistant messages); in-process (the store query and the JSON)
  and as the CLI, net of the fixed CLI cost (the same command on an empty data directory),
  as ARCHITECTURE.md's Settled points -> Benchmarks ask. Budget: under 0.3 s each.

Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, exit_status, hookcode_exe, machine, median_seconds, ms


@dataclass
class Timing:
    seconds: float
    returncode: int


def paired_process(
    a: list[str], env_a: dict[str, str], b: list[str], env_b: dict[str, str], repeat: int
) -> tuple[Timing, Timing]:
    """Median wall times of commands ``a`` and ``b`` run alternately (round-robin), after one
    warm-up run each."""
    times: dict[int, list[float]] = {0: [], 1: []}
    codes = [0, 0]
    for i in range(repeat + 1):
        for which, (argv, env) in enumerate(((a, env_a), (b, env_b))):
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
            if i:
                times[which].append(time.perf_counter() - started)
            codes[which] = done.returncode
    return (
        Timing(statistics.median(times[0]), codes[0]),
        Timing(statistics.median(times[1]), codes[1]),
    )


STEP_BUDGET = 0.002
PARALLEL_BUDGET = 0.5
LIST_BUDGET = 0.3
SHOW_BUDGET = 0.3
STEPS = 100
REPEAT = 5


def _world(root: Path) -> dict[str, str]:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root / "home"),
        HOOKCODE_LOAD_PLUGINS="policy_rules",
    )
    return env


class Timed:
    """Wraps a provider and adds up the time spent inside its stream."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.id = inner.id
        self.name = inner.name
        self.seconds = 0.0
        self.cpu = 0.0

    def models(self) -> list[Any]:
        return self.inner.models()

    async def stream(self, request: Any):
        gen = self.inner.stream(request)
        while True:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                event = await gen.__anext__()
            except StopAsyncIteration:
                self.seconds += time.perf_counter() - started
                self.cpu += time.process_time() - cpu
                return
            self.seconds += time.perf_counter() - started
            self.cpu += time.process_time() - cpu
            yield event


def _runtime(root: Path, model: Any) -> Any:
    from hookcode import hookimpl, tool
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    @tool
    async def noop(n: int) -> str:
        """Do nothing."""
        return "ok"

    @tool
    def noop_sync(n: int) -> str:
        """Do nothing, in a worker thread (how sync tools run)."""
        return "ok"

    @tool
    async def wait_async(label: str) -> str:
        """Wait 200 ms (async)."""
        await asyncio.sleep(0.2)
        return label

    @tool
    def wait_sync(label: str) -> str:
        """Wait 200 ms (in a worker thread)."""
        time.sleep(0.2)
        return label

    class Pack:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(noop, noop_sync, wait_async, wait_sync)

        @hookimpl
        def provider(self) -> list[Any]:
            return [model]

    env = _world(root)
    plugins = create_plugins(env=env, extra={"bench": Pack()}, cwd=root / "project")
    return Runtime(cwd=root / "project", env=env, plugins=plugins)


def bench_step(report: Report, root: Path) -> None:
    from hookcode.session import run_session
    from hookcode.testing import ScriptedModel, ToolCallSpec, Turn, ainvoke_tool

    def one(repeat_root: Path, tool_name: str) -> tuple[float, float]:
        """(wall, CPU) seconds per step, the model's share subtracted."""
        turns = [Turn(tool_calls=[ToolCallSpec(tool_name, {"n": i})]) for i in range(STEPS)]
        model = Timed(ScriptedModel([*turns, "done"], id="bench"))
        rt = _runtime(repeat_root, model)
        try:
            rt.store.version  # noqa: B018 - open the database, load agents and tools first
            rt.agents()
            rt.registry.definitions("build", None, "bench/test")
            started, cpu = time.perf_counter(), time.process_time()
            result = asyncio.run(run_session(rt, "go", model="bench/test"))
            wall = time.perf_counter() - started - model.seconds
            cpu = time.process_time() - cpu - model.cpu
            assert result.steps == STEPS + 1 and result.error is None, result
            return wall / (STEPS + 1), cpu / (STEPS + 1)
        finally:
            rt.close()

    for tool_name, budget in (("noop", True), ("noop_sync", False)):
        runs = [one(root / f"{tool_name}{i}", tool_name) for i in range(REPEAT)]
        wall = statistics.median(w for w, _c in runs)
        cpu = statistics.median(c for _w, c in runs)

        rt = _runtime(root / f"anchor-{tool_name}", ScriptedModel([], id="bench"))
        session = rt.create_session(title="anchor")
        counter = iter(range(10**9))

        async def calls(
            rt: Any = rt, session: Any = session, counter: Any = counter, name: str = tool_name
        ) -> None:
            for _ in range(50):
                outcome = await ainvoke_tool(rt, name, {"n": next(counter)}, session_id=session.id)
                assert outcome.ok

        anchor = median_seconds(lambda calls=calls: asyncio.run(calls()), 5, warmup=1) / 50
        cpu_start = time.process_time()
        asyncio.run(calls())
        anchor_cpu = (time.process_time() - cpu_start) / 50
        rt.close()
        kind = "async no-op tool" if tool_name == "noop" else "sync no-op tool, thread hop"
        report.row(
            f"loop overhead per step, CPU ({kind}; model excluded)",
            ms(cpu),
            f"invoke() alone {ms(anchor_cpu)} CPU",
            cpu / anchor_cpu,
            "< 2 ms" if budget else "(info)",
            cpu < STEP_BUDGET if budget else None,
        )
        report.row(
            f"loop overhead per step, wall ({kind}; model excluded)",
            ms(wall),
            f"invoke() alone {ms(anchor)} wall",
            wall / anchor,
            "(info)",
        )


def bench_parallel(report: Report, root: Path) -> None:
    from hookcode.session import run_session
    from hookcode.testing import ScriptedModel, ToolCallSpec, Turn

    for tool_name in ("wait_async", "wait_sync"):
        times = []
        for i in range(REPEAT):
            calls = [ToolCallSpec(tool_name, {"label": f"c{n}"}) for n in range(25)]
            model = Timed(ScriptedModel([Turn(tool_calls=calls), "done"], id="bench"))
            rt = _runtime(root / f"{tool_name}{i}", model)
            try:
                started = time.perf_counter()
                result = asyncio.run(run_session(rt, "go", model="bench/test"))
                times.append(time.perf_counter() - started - model.seconds)
                assert [o.result.output for o in result.outcomes] == [f"c{n}" for n in range(25)]
            finally:
                rt.close()
        value = statistics.median(times)
        report.row(
            f"25 calls x 200 ms in one step ({tool_name})",
            ms(value),
            "one call 200.0 ms",
            value / 0.2,
            "< 0.5 s",
            value < PARALLEL_BUDGET,
        )


def _fill_sessions(root: Path, count: int) -> None:
    from hookcode.ids import new_id
    from hookcode.store import SQLiteStore

    env = _world(root)
    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    project = str((root / "project").resolve())
    now = time.time()
    with store._write() as conn:
        conn.executemany(
            "INSERT INTO sessions (id, project, directory, title, agent, model, created, "
            "updated, cost) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (
                    new_id("ses"),
                    project,
                    project,
                    f"session number {i}: fix the thing",
                    "build",
                    "scripted/demo",
                    now - i,
                    now - i,
                    0.001 * i,
                )
                for i in range(count)
            ],
        )
    store.close()


def _fill_parts(root: Path, tool_calls: int) -> str:
    from hookcode.ids import new_id
    from hookcode.store import SQLiteStore, ToolPartRecord

    env = _world(root)
    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    project = str((root / "project").resolve())
    session = store.create_session(project=project, directory=project, title="big")
    per_message = 5
    with store._write():
        store.save_message(
            {"id": new_id("msg"), "session_id": session.id, "role": "user", "created": 0.0}
        )
        for m in range(tool_calls // per_message):
            mid = new_id("msg")
            store.save_message(
                {
                    "id": mid,
                    "session_id": session.id,
                    "role": "assistant",
                    "created": m,
                    "completed": m + 1.0,
                    "finish": "tool-calls",
                    "agent": "build",
                    "tokens": {"input": 1000, "output": 50},
                    "cost": 0.001,
                }
            )
            for k in range(per_message):
                store.save_part(
                    {
                        "id": new_id("prt"),
                        "session_id": session.id,
                        "message_id": mid,
                        "type": "text",
                        "text": f"Step {m}.{k}: reading the next file now.",
                    }
                )
                call_id = new_id("call")
                store.save_tool_part(
                    ToolPartRecord(
                        id=call_id,
                        session_id=session.id,
                        tool="read",
                        state="completed",
                        input={"filePath": f"src/module_{m}_{k}.py"},
                        output="\n".join(f"{n}: line {n} of the file" for n in range(40)),
                        title=f"src/module_{m}_{k}.py",
                        message_id=mid,
                        metadata={"truncated": False},
                        time_start=m,
                        time_end=m + 0.5,
                    )
                )
                store.save_part(
                    {
                        "id": new_id("prt"),
                        "session_id": session.id,
                        "message_id": mid,
                        "type": "tool",
                        "call_id": call_id,
                    }
                )
    store.close()
    return session.id


def _store_only(root: Path, fn: Any) -> float:
    from hookcode.store import SQLiteStore

    store = SQLiteStore(Path(_world(root)["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    try:
        return median_seconds(lambda: fn(store), 7, warmup=2)
    finally:
        store.close()


def bench_list_show(report: Report, root: Path, which: set[str]) -> None:
    from hookcode.cli.sessions import session_show

    exe = hookcode_exe()
    empty = root / "empty"
    _world(empty)
    if "list" in which:
        full = root / "list"
        _fill_sessions(full, 10_000)
        project = str((full / "project").resolve())
        store_s = _store_only(full, lambda st: ",\n".join(st.sessions_json(project)))
        argv = ["sessions", "list", "--json"]
        cli, fixed = paired_process(
            [exe, "-C", str(full / "project"), *argv],
            _world(full),
            [exe, "-C", str(empty / "project"), *argv],
            _world(empty),
            REPEAT + 2,
        )
        assert cli.returncode == 0
        net = cli.seconds - fixed.seconds
        report.row(
            "sessions list --json, 10,000 sessions: query + JSON",
            ms(store_s),
            "",
            None,
            "< 0.3 s",
            store_s < LIST_BUDGET,
        )
        report.row(
            "sessions list --json, 10,000 sessions: CLI net",
            ms(net),
            f"fixed CLI cost {ms(fixed.seconds)}",
            cli.seconds / fixed.seconds,
            "< 0.3 s",
            net < LIST_BUDGET,
        )
    if "show" in which:
        full = root / "show"
        session_id = _fill_parts(full, 2_500)
        store_s = _store_only(
            full, lambda st: json.dumps(session_show(st, session_id), ensure_ascii=False)
        )
        argv = ["sessions", "show", session_id, "--json"]
        small = _fill_parts(empty, 5)
        cli, fixed = paired_process(
            [exe, "-C", str(full / "project"), *argv],
            _world(full),
            [exe, "-C", str(empty / "project"), "sessions", "show", small, "--json"],
            _world(empty),
            REPEAT + 2,
        )
        assert cli.returncode == 0
        net = cli.seconds - fixed.seconds
        report.row(
            "sessions show --json, 5,000 parts: query + JSON",
            ms(store_s),
            "",
            None,
            "< 0.3 s",
            store_s < SHOW_BUDGET,
        )
        report.row(
            "sessions show --json, 5,000 parts: CLI net",
            ms(net),
            f"fixed CLI cost {ms(fixed.seconds)}",
            cli.seconds / fixed.seconds,
            "< 0.3 s",
            net < SHOW_BUDGET,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="step,parallel,list,show")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()
    which = set(args.only.split(","))
    global REPEAT
    REPEAT = max(1, args.repeat)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}")
    report = Report("agent loop")
    root = Path(tempfile.mkdtemp(prefix="hookcode-bench-loop-"))
    try:
        if "step" in which:
            bench_step(report, root)
        if "parallel" in which:
            bench_parallel(report, root)
        if which & {"list", "show"}:
            bench_list_show(report, root, which)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.print()
    return exit_status(report)


if __name__ == "__main__":
    raise SystemExit(main())
