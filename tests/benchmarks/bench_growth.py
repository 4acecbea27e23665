"""Costs that must grow linearly with the work (issue 20): streamed tool input of any size,
the per-step cost of a long session, resuming a long session, spill files, and ``hookcode run``
to its first request beside the provider SDK's import.

Run from the repository root:

    uv run --no-sync python tests/benchmarks/bench_growth.py [--only input,steps,resume,spill,first]

Everything lives in a temporary directory, deleted afterwards. Each figure is a median of
several runs, beside its anchor measured in the same run:

- input: a ``write`` of 1, 4 and 16 MB whose input is streamed in 24-character pieces, through
  the Anthropic provider against a local fake endpoint (``_anthropic_server.py``, a process of
  its own) and through the scripted model; a whole ``run_session`` (stream, validate, write the
  file, store). Figure: the extra time over an empty write; budget: at most 4.5x per 4x of
  content. And the 16 MB run end to end beside the same stream with no tool input handled (the
  provider's events consumed alone, no session): budget 3x.
- steps: a session of 1,000 steps with the scripted model, each one call of a no-op tool; the
  loop's own time per step (the model's share subtracted) at steps 1-10 and at steps 991-1,000.
  Budget: the latter within 1.5x of the former.
- resume: ``hookcode run -c`` on a session of 10,000 messages, to its first model request
  (net of the same command on a new session). Budget: under 1 s.
- spill: a tool printing more than ``spill_max`` bytes: the spill file's size beside the cap.
- first: ``hookcode run`` to its first request against the fake Anthropic endpoint, beside
  ``python -c "import anthropic"``; budget 1.0x. The same through the OpenAI-compatible
  provider (a fake endpoint speaking its wire format): budget 0.5x of ``import anthropic``.

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Report, exit_status, machine, ms

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
SIZES = (1 * MB, 4 * MB, 16 * MB)
GROWTH_BUDGET = 4.5
END_TO_END_BUDGET = 3.0
KEY = "sk-ant-bench-key"


@contextmanager
def anthropic_server() -> Iterator[str]:
    """The fake endpoint's base URL, served by a child process while the block runs."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "_anthropic_server.py")],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


def world(root: Path, load: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root / "home"),
        HOOKCODE_LOAD_PLUGINS=load,
        **(extra or {}),
    )
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
        with anthropic_server() as base:
            medians = measure(base)
    else:
        medians = measure("")
    empty = medians[0]
    previous: tuple[int, float] | None = None
    for size in SIZES:
        extra = medians[size] - empty
        label = f"{via}: write of {size / MB:g} MB streamed in 24-char pieces, over an empty write"
        if previous is None:
            report.row(label, ms(extra), f"empty write {ms(empty)}")
        else:
            growth = extra / previous[1]
            report.row(
                label,
                ms(extra),
                f"{previous[0] / MB:g} MB: {ms(previous[1])}",
                growth,
                f"<= {GROWTH_BUDGET}x per 4x",
                growth <= GROWTH_BUDGET,
            )
        previous = (size, extra)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", default="input,steps,resume,spill,first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kb", default="", help="input sizes in KB instead of 1, 4 and 16 MB")
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
            for via in ("anthropic", "scripted"):
                bench_input(report, root / via, args.repeat, via)
            report.print()
            reports.append(report)
    return exit_status(*reports)


if __name__ == "__main__":
    raise SystemExit(main())
