"""Dispatch overhead (issue 9, budget 2): one no-op tool call through ``pipeline.invoke`` with
5 ``tool_execute_before`` hooks, 5 ``tool_execute_after`` hooks, a ``tool_execute`` wrapper,
100 permission rules and the store recording the call; beside pydantic-ai's tool-calling loop
doing the same no-op call with its ``FunctionModel``.

    uv run --no-sync python tests/benchmarks/bench_dispatch.py [--calls 2000] [--repeat 7]

hookcode (in-process): a runtime in a temporary project and data directory, with core, the
``policy_rules`` plugin (the built-in agents and their base rules) and the benchmark's own
plugins: the no-op tool (``async def noop(n: int) -> str``), five plugins with one
``tool_execute_before`` and one ``tool_execute_after`` each, one ``tool_execute`` wrapper. The
config holds 100 permission rules (``HOOKCODE_PERMISSION``; the last one allows ``noop``).
Each call is a fresh ``ToolCall`` in one session, so the store writes a running part and
then its result, as in a real session. The runtime knows six secrets
(``_common.BENCH_SECRETS`` in its environment, one key in ``auth.json``), so each call's
result and stored part are scanned for them (issue 16: nothing measurable). Figure: microseconds per call, the median of
``--repeat`` batches of ``--calls`` sequential calls in one event loop. Budget: <= 100 us.

pydantic-ai (installed for the benchmark only, in ``~/.cache/hookcode-bench/pydantic-ai-venv``;
never a dependency of the project): an ``Agent`` with a ``FunctionModel`` and the same no-op
tool (``@agent.tool_plain``), run in its own process, with the time spent inside the model
function subtracted (only the loop's own work is counted). Two ways:

- *per step* (the budget's anchor): the model answers with one tool call per response, ten
  calls per run, then the final text: what the loop spends per tool call in an ordinary turn
  (validating and running the call, recording it, building the next request). Ten, because
  the loop's cost per step grows with the history (at 100 steps per run it is ~4 ms);
- *batch* (for information): one response with ``--calls`` tool calls, then the final text:
  the dispatch of each call alone, the loop's step cost spread over all of them; the lower
  bound of what pydantic-ai spends per call.

Budget: hookcode's per-call figure at least 5x lower than pydantic-ai's per-step figure.
Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_AUTH_JSON, BENCH_SECRETS, Report, cached_venv, exit_status, machine

BUDGET_US = 100.0
BUDGET_RATIO = 5.0
RULES = 100
HOOKS = 5

PYDANTIC_AI = r'''
import asyncio, json, statistics, sys, time
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

calls, repeat, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
model_seconds = 0.0

def respond(messages, info: AgentInfo) -> ModelResponse:
    global model_seconds
    started = time.perf_counter()
    done = sum(
        1 for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    )
    if mode == "batch":
        if done == 0:
            reply = ModelResponse(parts=[ToolCallPart("noop", {"n": i}, tool_call_id=f"c{i}")
                                         for i in range(calls)])
        else:
            reply = ModelResponse(parts=[TextPart("done")])
    else:
        if done < calls:
            reply = ModelResponse(parts=[ToolCallPart("noop", {"n": done}, tool_call_id=f"c{done}")])
        else:
            reply = ModelResponse(parts=[TextPart("done")])
    model_seconds += time.perf_counter() - started
    return reply

agent = Agent(FunctionModel(respond))

@agent.tool_plain
async def noop(n: int) -> str:
    """Do nothing."""
    return "ok"

async def main():
    global model_seconds
    out = []
    await agent.run("warm up", usage_limits=UsageLimits(request_limit=None))
    for _ in range(repeat):
        model_seconds = 0.0
        started = time.perf_counter()
        result = await agent.run("go", usage_limits=UsageLimits(request_limit=None))
        wall = time.perf_counter() - started
        assert result.output == "done", result.output
        out.append((wall - model_seconds) / calls)
    return out

print(json.dumps(asyncio.run(main())))
'''


# ------------------------------------------------------------------------------ hookcode


def build_runtime(root: Path, store: str | None = None) -> tuple[Any, Any]:
    """The benchmark's runtime in ``root``; ``store``: a store URL (``HOOKCODE_STORE``; none:
    the SQLite file in the data directory). Returns it and the counting hook plugins."""
    from hookcode import hookimpl, tool
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    @tool
    async def noop(n: int) -> str:
        """Do nothing."""
        return "ok"

    class Tools:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register(noop)

    class Hooks:
        def __init__(self) -> None:
            self.before = self.after = 0

        @hookimpl
        def tool_execute_before(self, call: Any, ctx: Any) -> None:
            self.before += 1

        @hookimpl
        def tool_execute_after(self, call: Any, result: Any, ctx: Any) -> None:
            self.after += 1

    class Wrapper:
        calls = 0

        @hookimpl(wrapper=True)
        def tool_execute(self, call: Any, ctx: Any) -> Any:
            Wrapper.calls += 1
            return (yield)

    # 100 rules: 99 that do not match the call (other tools and patterns), then the one
    # that allows it; every call checks the whole ordered list (last match wins)
    table: dict[str, Any] = {}
    for i in range(RULES - 1):
        permission = ("bash", "edit", "read", "webfetch", "noop")[i % 5]
        table.setdefault(permission, {})[f"pattern-{i}-*"] = ("ask", "deny")[i % 2]
    table["noop"] = {**table.get("noop", {}), "*": "allow"}
    count = sum(len(v) for v in table.values())
    assert count == RULES, count
    project = root / "project"
    project.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("HOOKCODE_")}
    env.update(BENCH_SECRETS)
    (root / "data").mkdir()
    (root / "data" / "auth.json").write_text(BENCH_AUTH_JSON)
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        HOOKCODE_CONFIG_DIR=str(root / "config"),
        HOOKCODE_LOAD_PLUGINS="policy_rules",
        HOOKCODE_PERMISSION=json.dumps(table),
    )
    if store is not None:  # and the plugin that provides it
        env["HOOKCODE_STORE"] = store
        env["HOOKCODE_LOAD_PLUGINS"] += ",store_postgres"
    hooks = [Hooks() for _ in range(HOOKS)]
    extra: dict[str, Any] = {"bench_tools": Tools(), "bench_wrapper": Wrapper()}
    extra.update({f"bench_hooks_{i}": h for i, h in enumerate(hooks)})
    plugins = create_plugins(env=env, extra=extra, cwd=project)
    return Runtime(cwd=project, env=env, plugins=plugins), hooks


async def hookcode_batches(rt: Any, calls: int, repeat: int) -> list[float]:
    from hookcode.pipeline import invoke
    from hookcode.tools import ToolCall

    agent = rt.default_agent
    session_id = rt.create_session(title="dispatch", agent=agent).id
    counter = 0

    async def one() -> None:
        nonlocal counter
        counter += 1
        call_id = rt.new_id("call")
        call = ToolCall(
            tool="noop", args={"n": counter}, call_id=call_id, session_id=session_id, agent=agent
        )
        outcome = await invoke(rt, call)
        if outcome.error is not None:
            raise SystemExit(f"the no-op call failed: {outcome.error!r}")

    for _ in range(50):
        await one()
    rt.store.flush()
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            await one()
        # a store that writes tool parts behind (PostgreSQL) commits them inside the batch
        rt.store.flush()
        out.append((time.perf_counter() - started) / calls)
    return out


def bench_hookcode(calls: int, repeat: int) -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="hookcode-bench-dispatch-") as tmp:
        rt, hooks = build_runtime(Path(tmp))
        try:
            rules = len(rt.base_rules(rt.default_agent))
            runs = asyncio.run(hookcode_batches(rt, calls, repeat))
            total = 50 + calls * repeat
            assert all(h.before == total and h.after == total for h in hooks)
        finally:
            rt.close()
    detail = f"{HOOKS} before + {HOOKS} after hooks, 1 wrapper, {RULES} config rules"
    detail += f" ({rules} rules for the agent, with the built-in base rules)"
    return statistics.median(runs), detail


def bench_pydantic_ai(calls: int, repeat: int, mode: str) -> tuple[float, str]:
    python = cached_venv("pydantic-ai-venv", ["pydantic-ai-slim"])
    out = subprocess.run(
        [str(python), "-c", PYDANTIC_AI, str(calls), str(repeat), mode],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"pydantic-ai benchmark failed:\n{out.stderr}")
    version = subprocess.run(
        [str(python), "-c", "import pydantic_ai; print(pydantic_ai.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return statistics.median(json.loads(out.stdout)), version


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args, _ = parser.parse_known_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    report = Report("dispatch (bench_dispatch.py)")
    hc, detail = bench_hookcode(args.calls, args.repeat)
    step, version = bench_pydantic_ai(10, max(args.calls // 10, 20), "step")
    batch, _ = bench_pydantic_ai(args.calls, args.repeat, "batch")
    report.row(
        "hookcode invoke(), per call", us(hc), "", None, f"<= {BUDGET_US:.0f} us", hc * 1e6 <= 100
    )
    ratio = step / hc
    report.row(
        "pydantic-ai loop, one call per step, per call",
        us(step),
        f"hookcode {us(hc)}",
        ratio,
        f">= {BUDGET_RATIO:.0f}x hookcode",
        ratio >= BUDGET_RATIO,
    )
    report.row(
        "pydantic-ai, one response of many calls (info)",
        us(batch),
        f"hookcode {us(hc)}",
        batch / hc,
    )
    report.note(f"hookcode: {detail}")
    report.note(f"pydantic-ai {version}, FunctionModel; model function time subtracted")
    report.print()
    return exit_status(report)


if __name__ == "__main__":
    raise SystemExit(main())
