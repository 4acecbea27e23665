"""bash tool benchmarks (issue 4, "Performance"): not collected by pytest.

    uv run python tests/benchmarks/bench_bash.py

1. Peak memory of ``hookcode tools call bash`` running a command that prints 1 GB (budget: under
   100 MB), beside the same command run by plain ``subprocess.run(..., stdout=DEVNULL)`` in
   Python and beside ``hookcode tools call bash`` of ``echo hi`` (the CLI's own footprint);
   and its wall time. The runtime knows six secrets (``_common.BENCH_SECRETS`` in the
   environment, one key in ``auth.json``), so every byte of the output is scanned for them
   (issue 16: the redaction adds under 5% to this figure).
2. Timeout precision: a process tree (children, ``&`` jobs, ``nohup``, ``setsid`` and a
   double-forked daemon) under ``timeout = 1000`` ms; the time from the deadline until no
   process of the tree is left (budget: within 1 s), one-shot and persistent mode.
3. Per-call cost: ``true`` through ``invoke_tool`` in one runtime, one-shot and persistent,
   beside ``subprocess.run(["bash", "-c", "true"])`` in the same process: wall time (median,
   interleaved) and CPU time of every process involved (recorded; no budget of its own).

Exit status 1 when a figure is over budget.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _common import (
    BENCH_AUTH_JSON,
    BENCH_SECRETS,
    Report,
    hookcode_exe,
    machine,
    mb,
    ms,
    run_process,
)

GIGABYTE_COMMAND = "yes | head -c 1000000000"
MEMORY_BUDGET = 100 * 1024 * 1024
TIMEOUT_MS = 1000
PRECISION_BUDGET = 1.0
REPEAT = 5
PER_CALL_REPEAT = 100

TREE = """\
export TREE_MARK={mark}
sleep 300 &
nohup sleep 301 >/dev/null 2>&1 &
( sh -c 'sleep 302; :' ) &
setsid sh -c 'sleep 303 & sleep 304' >/dev/null 2>&1 &
{python} -c 'import os, sys, time
if os.fork(): sys.exit()
os.setsid()
if os.fork(): sys.exit()
time.sleep(305)' >/dev/null 2>&1 &
sh -c 'sh -c "sleep 306"'
"""


def carrying(needle: bytes) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if env.startswith(needle) or b"\0" + needle in env:
            found.append(int(name))
    return found


def memory(report: Report, root: Path) -> None:
    project = root / "project"
    project.mkdir()
    env = {
        **os.environ,
        **BENCH_SECRETS,
        "HOOKCODE_DATA_DIR": str(root / "data"),
        "HOME": str(root),
    }
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "auth.json").write_text(BENCH_AUTH_JSON)
    exe = hookcode_exe()

    def call(command: str, description: str):
        args = json.dumps({"command": command, "description": description})
        return run_process(
            [exe, "-C", str(project), "tools", "call", "bash", args, "--json", "--yes"],
            env=env,
            keep_output=True,
        )

    big = call(GIGABYTE_COMMAND, "print 1 GB")
    result = json.loads(big.stdout)
    if result.get("error") or not result["metadata"].get("truncated"):
        raise SystemExit(f"unexpected result: {json.dumps(result)[:500]}")
    spill = Path(result["metadata"]["outputPath"])
    spilled = spill.stat().st_size
    spill.unlink()
    small = call("echo hi", "print hi")
    anchor = run_process(
        [
            sys.executable,
            "-c",
            f"import subprocess; subprocess.run(['bash', '-c', {GIGABYTE_COMMAND!r}], stdout=subprocess.DEVNULL)",
        ]
    )
    report.row(
        "peak RSS, tools call bash (1 GB output)",
        mb(big.peak_rss),
        f"python subprocess.run: {mb(anchor.peak_rss)}",
        big.peak_rss / anchor.peak_rss,
        "< 100 MB",
        big.peak_rss < MEMORY_BUDGET,
    )
    report.row("peak RSS, tools call bash (echo hi)", mb(small.peak_rss))
    report.row(
        "wall time, tools call bash (1 GB output)",
        f"{big.seconds:.2f} s",
        f"python subprocess.run: {anchor.seconds:.2f} s",
        big.seconds / anchor.seconds,
    )
    report.note(f"spill file held {spilled:,} bytes (all of it)")


def precision(report: Report, root: Path, persistent: bool) -> None:
    from hookcode.testing import HookcodeEnv, ReplyWith, invoke_tool

    hc = HookcodeEnv(root / ("persistent" if persistent else "oneshot"))
    hc.register(ReplyWith("once"), "reply_once")
    if persistent:
        hc.write_config({"tool": {"bash": {"persistent": True}}})
    runtime = hc.runtime()
    session = runtime.create_session(title="bench").id
    lags: list[float] = []
    returns: list[float] = []
    try:
        for _ in range(REPEAT):
            mark = uuid.uuid4().hex
            needle = f"TREE_MARK={mark}\0".encode()
            gone_at: list[float] = []
            seen = threading.Event()
            done = threading.Event()

            def watch(
                needle: bytes = needle,
                gone_at: list[float] = gone_at,
                seen: threading.Event = seen,
                done: threading.Event = done,
            ) -> None:
                while not done.is_set():
                    alive = carrying(needle)
                    if alive:
                        seen.set()
                    elif seen.is_set():
                        gone_at.append(time.monotonic())
                        return
                    time.sleep(0.002)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            start = time.monotonic()
            outcome = invoke_tool(
                runtime,
                "bash",
                {
                    "command": TREE.format(mark=mark, python=sys.executable),
                    "description": "Runs a process tree",
                    "timeout": TIMEOUT_MS,
                },
                session_id=session,
            )
            returned = time.monotonic()
            watcher.join(5)
            done.set()
            if outcome.error is not None or "exceeding timeout" not in outcome.result.output:
                raise SystemExit(f"unexpected outcome: {outcome.error_text or outcome.result}")
            left = carrying(needle)
            if left or not gone_at:
                raise SystemExit(f"processes survived: {left}")
            deadline = start + TIMEOUT_MS / 1000
            lags.append(gone_at[0] - deadline)
            returns.append(returned - deadline)
    finally:
        from hookcode_tool_bash import close_shells

        close_shells(runtime)
        hc.close()
    mode = "persistent" if persistent else "one-shot"
    worst = max(lags)
    report.row(
        f"tree dead after the deadline ({mode}, worst of {REPEAT})",
        ms(worst),
        f"median {ms(statistics.median(lags))}",
        None,
        "< 1000 ms",
        worst < PRECISION_BUDGET,
    )
    report.row(f"call returned after the deadline ({mode}, median)", ms(statistics.median(returns)))


def _cpu() -> float:
    """CPU seconds of this process and of every child it waited for (and theirs)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def per_call(report: Report, root: Path, persistent: bool) -> None:
    """Wall time per call (median, interleaved with the anchor), and CPU time per call of
    everything involved (hookcode, its process guardian and keepers, bash) in a runtime of its
    own, taken once the runtime is closed and the guardian reaped (its start-up included):
    the steadier figure on a busy machine."""
    import statistics
    import subprocess
    import time

    from hookcode.testing import HookcodeEnv, ReplyWith, invoke_tool
    from hookcode_tool_bash import close_shells

    mode = "persistent" if persistent else "one-shot"
    args = {"command": "true", "description": "Does nothing"}

    def anchor() -> None:
        subprocess.run(["bash", "-c", "true"], check=True)

    def measure(name: str, body: Callable[[Callable[[], None]], None]) -> None:
        hc = HookcodeEnv(root / f"percall-{mode}-{name}")
        hc.register(ReplyWith("once"), "reply_once")
        if persistent:
            hc.write_config({"tool": {"bash": {"persistent": True}}})
        runtime = hc.runtime()
        session = runtime.create_session(title="bench").id

        def call() -> None:
            outcome = invoke_tool(runtime, "bash", args, session_id=session)
            if outcome.error is not None:
                raise SystemExit(f"unexpected outcome: {outcome.error_text}")

        try:
            body(call)
        finally:
            close_shells(runtime)
            hc.close()

    tool_times: list[float] = []
    anchor_times: list[float] = []

    def wall(call: Callable[[], None]) -> None:
        for _ in range(3):
            call()
            anchor()
        for _ in range(PER_CALL_REPEAT):
            start = time.perf_counter()
            call()
            tool_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            anchor()
            anchor_times.append(time.perf_counter() - start)

    def cpu(call: Callable[[], None]) -> None:
        for _ in range(PER_CALL_REPEAT):
            call()

    measure("wall", wall)
    cpu_start = _cpu()
    measure("cpu", cpu)
    tool_cpu = (_cpu() - cpu_start) / PER_CALL_REPEAT
    cpu_start = _cpu()
    for _ in range(PER_CALL_REPEAT):
        anchor()
    anchor_cpu = (_cpu() - cpu_start) / PER_CALL_REPEAT
    tool, bare = statistics.median(tool_times), statistics.median(anchor_times)
    report.row(
        f"one call of `true` ({mode}, median of {PER_CALL_REPEAT})",
        ms(tool),
        f"subprocess.run bash -c true: {ms(bare)}",
        tool / bare,
    )
    report.row(
        f"CPU per call of `true` ({mode}, all processes)",
        ms(tool_cpu),
        f"subprocess.run bash -c true: {ms(anchor_cpu)}",
        tool_cpu / anchor_cpu,
    )


def main() -> int:
    if not sys.platform.startswith("linux"):
        print("bench_bash: Linux only (/proc)")
        return 0
    report = Report("bash tool")
    report.note(machine())
    root = Path(tempfile.mkdtemp(prefix="bench-bash-"))
    try:
        memory(report, root)
        precision(report, root, persistent=False)
        precision(report, root, persistent=True)
        per_call(report, root, persistent=False)
        per_call(report, root, persistent=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.note(
        "the deadline is the requested timeout; the tool fires at timeout + 100 ms (reference), "
        "then SIGTERM, up to 200 ms grace, SIGKILL"
    )
    report.print()
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
