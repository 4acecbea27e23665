"""Costs that must grow linearly with the work (issue 20): streamed tool input of any size,
the per-step cost of a long session, resuming a long session, spill files, and ``hookcode run``
to its first request beside the provider SDK's import.

Run from the repository root:

    uv run --no-sync python tests/benchmarks/bench_growth.py [--only input,text,steps,resume,spill,first]

Everything lives in a temporary directory, deleted afterwards. Each figure is a median of
several runs, beside its anchor measured in the same run:

- input: a ``write`` of 1, 4 and 16 MB whose input is streamed in 24-character pieces, through
  the Anthropic provider against a local fake endpoint (``_anthropic_server.py``, a process of
  its own) and through the scripted model; a whole ``run_session`` (stream, validate, write the
  file, store). Figure: the extra time over an empty write; budget: at most 4.5x per 4x of
  content. And the 16 MB run end to end beside the same stream with no tool input handled (the
  provider's events consumed alone, no session): budget 3x.
- text: a text reply of 1, 4 and 16 MB streamed by the scripted model in its 16-character
  deltas (each a live event), through a whole ``run_session``. Figure: the extra time over a
  short reply; budget: at most 4.5x per 4x.
- steps: a session of 1,000 steps, each one call of a no-op tool, with a model that replays
  its calls without reading the request (``StepModel``); the loop's own time per step (the
  model's share subtracted) at steps 10-19 and at steps 991-1,000 (medians). Budget: the
  latter within 1.5x of the former.
- resume: ``hookcode run -c`` on a session of 10,000 messages, to its first model request
  (net of the same command on a new session). Budget: under 1 s.
- spill: a tool printing more than ``spill_max`` bytes: the spill file's size beside the cap.
- first: ``hookcode run`` to its first request against the fake Anthropic endpoint, beside
  ``python -c "import anthropic"``; budget 1.0x. The same through the OpenAI-compatible
  provider (a fake endpoint speaking its wire format): budget 0.5x of ``import anthropic``.
  And, for information, the floor of the first: a script that only imports the SDK, makes a
  client and sends the same streamed request (``SDK_ALONE``).

Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Measure, Report, exit_status, machine, median_seconds, ms, run_process

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
SIZES = (1 * MB, 4 * MB, 16 * MB)
GROWTH_BUDGET = 4.5
END_TO_END_BUDGET = 3.0
KEY = "sk-ant-bench-key"


class Server:
    """The fake endpoint (``_anthropic_server.py``) in a child process."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        assert proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(proc.stdout.readline())}"

    def arrival(self) -> float:
        """The ``time.monotonic()`` at which the next request not yet read arrived."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("REQUEST "), line
        return float(line.split()[1])


@contextmanager
def anthropic_server() -> Iterator[Server]:
    """The fake endpoint, served by a child process while the block runs."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "_anthropic_server.py")],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield Server(proc)
    finally:
        proc.kill()
        proc.wait()


def world(root: Path, load: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An isolated home, config and data directory; ``load``: the plugins (None: all)."""
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root / "home"),
        **(extra or {}),
    )
    if load is not None:
        env["HOOKCODE_LOAD_PLUGINS"] = load
    return env


def runtime(root: Path, load: str, env_extra: dict[str, str], model: Any = None) -> Any:
    from hookcode import hookimpl
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    extra: dict[str, Any] = {}
    if model is not None:

        class Pack:
            @hookimpl
            def provider(self) -> list[Any]:
                return [model]

        extra["bench"] = Pack()
    env = world(root, load, env_extra)
    plugins = create_plugins(env=env, extra=extra, cwd=root / "project")
    return Runtime(cwd=root / "project", env=env, plugins=plugins)


# ---------------------------------------------------------------------------------------------
# input: streamed tool input of any size
# ---------------------------------------------------------------------------------------------


def _content(size: int) -> str:
    from _anthropic_server import content_of

    return content_of(size)


def run_write(rt: Any, model: str, path: Path, size: int) -> float:
    """Seconds of one whole session whose model writes ``size`` characters to ``path``."""
    from hookcode.session import run_session

    started = time.perf_counter()
    result = asyncio.run(run_session(rt, "write it", model=model))
    elapsed = time.perf_counter() - started
    assert result.error is None, result.error
    if not path.exists():
        raise SystemExit(f"no {path}: {result}")
    assert path.stat().st_size == size if size else path.exists(), (path, size)
    return elapsed


def stream_alone(rt: Any, model: str) -> float:
    """Seconds of the same provider stream consumed alone: no session, nothing stored."""
    from hookcode.providers import Message, ModelRequest, ToolCallEnd

    provider_id, _, name = model.partition("/")
    provider = rt.providers()[provider_id]
    request = ModelRequest(
        model=name,
        system=["bench"],
        messages=[Message("user", [{"type": "text", "text": "write it"}])],
        tools=[],
        params={"temperature": None, "top_p": None, "max_tokens": None, "options": {}},
    )

    async def go() -> None:
        ended = False
        async for event in provider.stream(request):
            ended = ended or isinstance(event, ToolCallEnd)
        assert ended

    started = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - started


def growth_rows(
    report: Report, medians: dict[Any, float], label: Callable[[int], str], empty_name: str
) -> None:
    """One row per size of :data:`SIZES`: its extra time over the empty case (``medians[0]``),
    and from the second size on its growth over the size before, against GROWTH_BUDGET."""
    empty = medians[0]
    previous: tuple[int, float] | None = None
    for size in SIZES:
        extra = medians[size] - empty
        if previous is None:
            report.row(label(size), ms(extra), f"{empty_name} {ms(empty)}")
        else:
            growth = extra / previous[1]
            report.row(
                label(size),
                ms(extra),
                f"{previous[0] / MB:g} MB: {ms(previous[1])}",
                growth,
                f"<= {GROWTH_BUDGET}x per 4x",
                growth <= GROWTH_BUDGET,
            )
        previous = (size, extra)


def bench_input(report: Report, root: Path, repeat: int, via: str) -> None:
    from hookcode.testing import ScriptedModel, ToolCallSpec, Turn

    counter = iter(range(10**9))

    def one(size: int, base: str, alone: bool = False) -> float:
        run_root = root / f"{via}-{next(counter)}"
        name = f"out-{size}-{next(counter)}.txt"
        if via == "anthropic":
            rt = runtime(
                run_root,
                "provider_anthropic,tool_write,policy_rules",
                {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": KEY},
            )
            model = f"anthropic/write-{size}@{name}"
        else:
            turns = [
                Turn(tool_calls=[ToolCallSpec("write", {"filePath": name, "content": content})]),
                "done",
            ]
            rt = runtime(run_root, "tool_write,policy_rules", {}, ScriptedModel(turns, id="bench"))
            model = "bench/test"
        try:
            rt.agents()
            if alone:
                return stream_alone(rt, model)
            return run_write(rt, model, run_root / "project" / name, size)
        finally:
            rt.close()

    content = ""

    def measure(base: str) -> dict[Any, float]:
        nonlocal content
        times: dict[Any, list[float]] = {}
        content = ""
        one(0, base)  # warm-up: the SDK imported, the plugins' modules loaded
        for _ in range(repeat):
            for size in (0, *SIZES):
                content = _content(size)
                times.setdefault(size, []).append(one(size, base))
            if via == "anthropic":
                times.setdefault("alone", []).append(one(SIZES[-1], base, alone=True))
        return {k: statistics.median(v) for k, v in times.items()}

    if via == "anthropic":
        with anthropic_server() as server:
            medians = measure(server.url)
    else:
        medians = measure("")
    growth_rows(
        report,
        medians,
        lambda size: (
            f"{via}: write of {size / MB:g} MB streamed in 24-char pieces, over an empty write"
        ),
        "empty write",
    )
    if via == "anthropic":
        top = medians[SIZES[-1]]
        alone = medians["alone"]
        report.row(
            f"{via}: {SIZES[-1] / MB:g} MB write end to end (stream, validate, write, store)",
            ms(top),
            f"the stream alone {ms(alone)}",
            top / alone,
            f"<= {END_TO_END_BUDGET}x",
            top / alone <= END_TO_END_BUDGET,
        )


# ---------------------------------------------------------------------------------------------
# text: a long text reply
# ---------------------------------------------------------------------------------------------


def _reply(size: int) -> str:
    """``size`` characters of text in lines, as a model's long answer."""
    line = "a line of the model's long answer, with some words in it, numbered {:09d}\n"
    count = -(-size // len(line.format(0)))
    return "".join(line.format(i) for i in range(count))[:size]


def bench_text(report: Report, root: Path, repeat: int) -> None:
    """A whole ``run_session`` whose scripted model answers with 1, 4 and 16 MB of text in its
    16-character deltas (every delta a live event, the part stored as it grows); the extra time
    over a two-word answer."""
    from hookcode.session import run_session
    from hookcode.testing import ScriptedModel

    counter = iter(range(10**9))

    def one(size: int) -> float:
        reply = _reply(size) if size else "all done"
        rt = runtime(
            root / f"text-{next(counter)}",
            "policy_rules",
            {},
            ScriptedModel([reply], id="bench"),
        )
        try:
            rt.agents()
            events = 0

            def on_event(kind: str, data: dict[str, Any]) -> None:
                nonlocal events
                events += kind == "text"

            started = time.perf_counter()
            result = asyncio.run(run_session(rt, "answer", model="bench/test", on_event=on_event))
            elapsed = time.perf_counter() - started
            assert result.error is None and result.text == reply, result.error
            assert events >= len(reply) // 16, events
            return elapsed
        finally:
            rt.close()

    one(0)  # warm-up
    times: dict[int, list[float]] = {}
    for _ in range(repeat):
        for size in (0, *SIZES):
            times.setdefault(size, []).append(one(size))
    medians = {k: statistics.median(v) for k, v in times.items()}
    growth_rows(
        report,
        medians,
        lambda size: (
            f"text reply of {size / MB:g} MB in 16-char deltas (scripted), over a short one"
        ),
        "short reply",
    )


# ---------------------------------------------------------------------------------------------
# steps: the per-step cost of a long session
# ---------------------------------------------------------------------------------------------

STEPS = 1000
STEP_BUDGET = 1.5


class Timed:
    """Wraps a provider: the time spent inside its stream, per request."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.id = inner.id
        self.name = inner.name
        self.per_request: list[float] = []

    def models(self) -> list[Any]:
        return self.inner.models()

    async def stream(self, request: Any) -> Any:
        gen = self.inner.stream(request)
        spent = 0.0
        try:
            while True:
                started = time.perf_counter()
                try:
                    event = await gen.__anext__()
                except StopAsyncIteration:
                    return
                finally:
                    spent += time.perf_counter() - started
                yield event
        finally:
            self.per_request.append(spent)


class StepModel:
    """A model that calls ``noop`` ``steps`` times, then answers "done", without reading the
    request: unlike the scripted model, which counts the whole history's tokens for its usage
    (its own cost, subtracted, but its garbage and cache misses would land on the loop's)."""

    id = "bench"
    name = "bench"

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.calls = 0

    def models(self) -> list[Any]:
        return []

    async def stream(self, request: Any) -> Any:
        from hookcode.providers import (
            Finish,
            TextDelta,
            ToolCallEnd,
            ToolCallStart,
            ToolInputDelta,
            Usage,
        )

        n = self.calls
        self.calls += 1
        if n >= self.steps:
            yield TextDelta("done")
            yield Finish("stop", Usage(input=10, output=1))
            return
        call = f"call_{n}"
        yield ToolCallStart(call, "noop")
        yield ToolInputDelta(call, f'{{"n": {n}}}')
        yield ToolCallEnd(call, "noop", {"n": n})
        yield Finish("tool-calls", Usage(input=10, output=1))


def bench_steps(report: Report, root: Path, repeat: int) -> None:
    """Each step's own time: from one ``step_start`` event to the next, the model's share
    subtracted; the steps 10-19 beside the steps 991-1000 of the same session."""
    from hookcode import hookimpl, tool
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime
    from hookcode.session import run_session

    @tool
    async def noop(n: int) -> str:
        """Do nothing."""
        return f"ok {n}"

    early: list[float] = []
    late: list[float] = []
    for index in range(repeat):
        model = Timed(StepModel(STEPS))

        class Pack:
            def __init__(self, model: Timed) -> None:
                self.model = model

            @hookimpl
            def register_tools(self, register: Any) -> None:
                register(noop)

            @hookimpl
            def provider(self) -> list[Any]:
                return [self.model]

        env = world(root / f"steps-{index}", "policy_rules")
        project = root / f"steps-{index}" / "project"
        plugins = create_plugins(env=env, extra={"bench": Pack(model)}, cwd=project)
        rt = Runtime(cwd=project, env=env, plugins=plugins)
        starts: list[float] = []

        def on_event(kind: str, data: dict[str, Any], starts: list[float] = starts) -> None:
            if kind == "step_start":
                starts.append(time.perf_counter())

        try:
            result = asyncio.run(run_session(rt, "go", model="bench/test", on_event=on_event))
            assert result.steps == STEPS + 1 and result.error is None, result
        finally:
            rt.close()
        own = [b - a - m for a, b, m in zip(starts, starts[1:], model.per_request, strict=False)]
        early.append(statistics.median(own[9:19]))
        late.append(statistics.median(own[STEPS - 10 : STEPS]))
    first, last = statistics.median(early), statistics.median(late)
    report.row(
        f"one step's own time at steps 991-1000 (model excluded; {STEPS} steps)",
        ms(last),
        f"steps 10-19: {ms(first)}",
        last / first,
        f"<= {STEP_BUDGET}x",
        last / first <= STEP_BUDGET,
    )


# ---------------------------------------------------------------------------------------------
# resume: `hookcode run -c` on a session of 10,000 messages
# ---------------------------------------------------------------------------------------------

RESUME_MESSAGES = 10_000
RESUME_BUDGET = 1.0


def fill_session(env: dict[str, str], project: Path, count: int) -> str:
    """A session of ``count`` messages, as a long agent run leaves it: a user message every
    ten, the others assistant steps with a line of text and one completed ``read`` call."""
    from hookcode.ids import new_id
    from hookcode.store import SQLiteStore, ToolPartRecord

    store = SQLiteStore(Path(env["HOOKCODE_DATA_DIR"]) / "hookcode.db")
    where = str(project.resolve())
    session = store.create_session(project=where, directory=where, title="long")
    output = "\n".join(f"{n}: line {n} of the file" for n in range(40))
    with store._write():
        for m in range(count):
            mid = new_id("msg")
            if m % 10 == 0:
                store.save_message(
                    {"id": mid, "session_id": session.id, "role": "user", "created": m}
                )
                store.save_part(
                    {
                        "id": new_id("prt"),
                        "session_id": session.id,
                        "message_id": mid,
                        "type": "text",
                        "text": f"Now look at part {m}.",
                    }
                )
                continue
            store.save_message(
                {
                    "id": mid,
                    "session_id": session.id,
                    "role": "assistant",
                    "created": m,
                    "completed": m + 0.5,
                    "finish": "tool-calls",
                    "agent": "build",
                    "model": "scripted/echo",
                    "tokens": {"input": 1000, "output": 50},
                    "cost": 0.0,
                }
            )
            store.save_part(
                {
                    "id": new_id("prt"),
                    "session_id": session.id,
                    "message_id": mid,
                    "type": "text",
                    "text": f"Step {m}: reading the next file now.",
                }
            )
            call_id = new_id("call")
            store.save_tool_part(
                ToolPartRecord(
                    id=call_id,
                    session_id=session.id,
                    tool="read",
                    state="completed",
                    input={"filePath": f"src/module_{m}.py"},
                    output=output,
                    title=f"src/module_{m}.py",
                    message_id=mid,
                    metadata={"truncated": False},
                    time_start=m,
                    time_end=m + 0.25,
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


def bench_resume(report: Report, root: Path, repeat: int) -> None:
    """``hookcode run -c`` (the scripted echo model) on a session of 10,000 messages, net of
    ``hookcode run`` starting a new session in an empty project: the resume's own cost."""
    from _common import bytecode_env, hookcode_exe

    exe = hookcode_exe()
    long_env = bytecode_env(world(root / "long", None))
    new_env = bytecode_env(world(root / "new", None))
    fill_session(long_env, root / "long" / "project", RESUME_MESSAGES)
    runs: dict[str, list[Measure]] = {"long": [], "new": []}
    for round_ in range(repeat + 1):  # the first round warms the bytecode caches
        for name, env, argv in (
            ("long", long_env, [exe, "run", "-c", "-m", "scripted/echo", "hi"]),
            ("new", new_env, [exe, "run", "-m", "scripted/echo", "hi"]),
        ):
            measure = run_process(argv, cwd=root / name / "project", env=env)
            if measure.returncode != 0:
                raise SystemExit(f"{' '.join(argv)}: exit status {measure.returncode}")
            if round_:
                runs[name].append(measure)
    for what, value in (("CPU", lambda m: m.cpu), ("wall", lambda m: m.seconds)):
        long = statistics.median(value(m) for m in runs["long"])
        new = statistics.median(value(m) for m in runs["new"])
        report.row(
            f"`hookcode run -c` on a session of {RESUME_MESSAGES:,} messages, net, {what}",
            ms(long - new),
            f"`hookcode run`, new session: {ms(new)}",
            None,
            f"< {RESUME_BUDGET:g} s",
            long - new < RESUME_BUDGET if what == "CPU" else None,
        )
    report.note(
        "the budget is checked on CPU time (user + system) on a machine shared with other "
        "work, where the wall time counts the waits for a core; on an idle machine they agree"
    )


# ---------------------------------------------------------------------------------------------
# spill: a spill file stops at spill_max
# ---------------------------------------------------------------------------------------------

SPILL_OUTPUT = 400 * MB


def bench_spill(report: Report, root: Path) -> None:
    """A tool's output of 400 MB streamed (1 MB chunks) through the truncator with the default
    ``spill_max`` (100 MB): the spill file's size and the peak of Python's allocations, beside
    writing the same chunks to a plain file."""
    import tracemalloc

    from hookcode.truncate import DEFAULT_SPILL_MAX, Truncator

    line = b"0123456789" * 9 + b"abcdefgh\n"
    chunk = line * (MB // len(line))
    count = SPILL_OUTPUT // len(chunk)

    def plain() -> None:
        with open(root / "plain.out", "wb") as f:
            for _ in range(count):
                f.write(chunk)

    truncator = Truncator(root / "data")
    sizes: list[int] = []
    peaks: list[int] = []

    def spilled() -> None:
        tracemalloc.start()
        try:
            with truncator.writer() as out:
                for _ in range(count):
                    out.write(chunk)
            result = out.finish()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert result.output_path is not None
        sizes.append(result.output_path.stat().st_size)
        result.output_path.unlink()

    root.mkdir(parents=True, exist_ok=True)
    anchor = median_seconds(plain, 3)
    seconds = median_seconds(spilled, 3)
    total = count * len(chunk)
    report.row(
        f"spill file of a {total / MB:.0f} MB output (default spill_max)",
        f"{sizes[-1] / MB:.1f} MB",
        f"spill_max {DEFAULT_SPILL_MAX / MB:.0f} MB",
        sizes[-1] / DEFAULT_SPILL_MAX,
        "<= spill_max + one line",
        sizes[-1] <= DEFAULT_SPILL_MAX + 200,
    )
    report.row(
        f"streaming the {total / MB:.0f} MB output through the truncator",
        ms(seconds),
        f"writing it to a plain file {ms(anchor)}",
        seconds / anchor,
        "(info)",
    )
    report.row(
        "peak of Python's allocations while it streams",
        f"{max(peaks) / MB:.1f} MB",
        f"one chunk {len(chunk) / MB:.1f} MB",
        max(peaks) / len(chunk),
        "(info)",
    )


# ---------------------------------------------------------------------------------------------
# first: `hookcode run` to its first request, beside `import anthropic`
# ---------------------------------------------------------------------------------------------

FIRST_ANTHROPIC_BUDGET = 1.0
FIRST_OPENAI_BUDGET = 0.5


SDK_ALONE = """
import asyncio, os
import anthropic

async def main():
    client = anthropic.AsyncAnthropic(max_retries=0)
    await client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, stream=True,
        messages=[{"role": "user", "content": "hi"}],
    )
    os._exit(0)

asyncio.run(main())
"""


def bench_first(report: Report, root: Path, repeat: int) -> None:
    from _common import bytecode_env, hookcode_exe

    with anthropic_server() as server:
        env = bytecode_env(
            world(root, None, {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY})
        )
        config = root / "config" / "hookcode"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text(
            f'[provider.local]\ntype = "openai"\nbase_url = "{server.url}/v1"\nmodels = ["m"]\n'
        )
        exe = hookcode_exe()
        cwd = root / "project"

        def to_request(model: str) -> float:
            started = time.monotonic()
            done = subprocess.run(
                [exe, "run", "-m", model, "hi"], cwd=cwd, env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise SystemExit(f"hookcode run -m {model}: {done.stdout}{done.stderr}")
            return server.arrival() - started

        def import_alone() -> float:
            # to the end of the import: the interpreter's teardown is not counted (nor is the
            # run's after its first request)
            started = time.monotonic()
            subprocess.run(
                [sys.executable, "-c", "import anthropic, os; os._exit(0)"], env=env, check=True
            )
            return time.monotonic() - started

        def sdk_alone() -> float:
            # the least any program using the SDK does: import it, make a client, send one
            # streamed request (the same one, to the same endpoint)
            started = time.monotonic()
            subprocess.run([sys.executable, "-c", SDK_ALONE], env=env, check=True)
            return server.arrival() - started

        runs: dict[str, list[float]] = {"import": [], "sdk": [], "anthropic": [], "openai": []}
        for round_ in range(repeat + 1):  # the first round warms the bytecode caches
            for name, fn in (
                ("import", import_alone),
                ("sdk", sdk_alone),
                ("anthropic", lambda: to_request("anthropic/claude-sonnet-4-5")),
                ("openai", lambda: to_request("local/m")),
            ):
                seconds = fn()
                if round_:
                    runs[name].append(seconds)
    anchor = statistics.median(runs["import"])
    sdk = statistics.median(runs["sdk"])
    report.row(
        "the SDK alone to its first request (import, client, one streamed request; no hookcode)",
        ms(sdk),
        f"`import anthropic` alone {ms(anchor)}",
        sdk / anchor,
        "(info)",
    )
    for name, budget in (("anthropic", FIRST_ANTHROPIC_BUDGET), ("openai", FIRST_OPENAI_BUDGET)):
        value = statistics.median(runs[name])
        report.row(
            f"`hookcode run` to its first request ({name} provider, fake endpoint)",
            ms(value),
            f"`import anthropic` alone {ms(anchor)}",
            value / anchor,
            f"<= {budget}x",
            value / anchor <= budget,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", default="input,text,steps,resume,spill,first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kb", default="", help="input sizes in KB instead of 1, 4 and 16 MB")
    parser.add_argument("--via", default="anthropic,scripted", help="input: which providers")
    args = parser.parse_args()
    if args.kb:
        global SIZES
        SIZES = tuple(int(k) * 1024 for k in args.kb.split(","))
    which = set(args.only.split(","))
    reports: list[Report] = []
    print(machine())
    with tempfile.TemporaryDirectory(prefix="hookcode-bench-growth-") as tmp:
        root = Path(tmp)
        if "input" in which:
            report = Report("streamed tool input (issue 20, item 1)")
            for via in args.via.split(","):
                bench_input(report, root / via, args.repeat, via)
            report.print()
            reports.append(report)
        if "text" in which:
            report = Report("a long text reply (issue 20, item 4)")
            bench_text(report, root / "text", args.repeat)
            report.print()
            reports.append(report)
        if "steps" in which:
            report = Report("the per-step cost of a long session (issue 20, item 2)")
            bench_steps(report, root / "steps", args.repeat)
            report.print()
            reports.append(report)
        if "resume" in which:
            report = Report("resuming a long session (issue 20, item 2)")
            bench_resume(report, root / "resume", args.repeat)
            report.print()
            reports.append(report)
        if "spill" in which:
            report = Report("spill files (issue 20, item 3)")
            bench_spill(report, root / "spill")
            report.print()
            reports.append(report)
        if "first" in which:
            report = Report("`hookcode run` to its first request (issue 20, item 4)")
            bench_first(report, root / "first", max(args.repeat, 5))
            report.print()
            reports.append(report)
    return exit_status(*reports)


if __name__ == "__main__":
    raise SystemExit(main())
