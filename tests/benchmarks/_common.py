"""Timing, medians, peak memory and reporting shared by the benchmark scripts.

Every figure is a median of several repetitions, measured in the same run as its anchor, so a
ratio compares like with like on whatever machine runs it. Nothing here imports hookcode.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BENCH_AUTH_JSON",
    "BENCH_SECRETS",
    "BIN",
    "CACHE",
    "Measure",
    "Report",
    "bytecode_env",
    "cached_venv",
    "hookcode_exe",
    "interleaved",
    "machine",
    "mb",
    "median_seconds",
    "ms",
    "run_process",
]

#: known secrets for the benchmarks that measure redaction: five environment variables named
#: like secrets (hookcode.secrets) of realistic lengths, none of them in the output; fake values
BENCH_SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "bench0Secret1Value2" * 5,
    "OPENAI_API_KEY": "sk-proj-" + "Bench3Secret4Value5" * 3,
    "GITHUB_TOKEN": "ghp_" + "bench6Secret7Value8Zz" * 2,
    "EXA_API_KEY": "exa-bench-" + "9f8e7d6c5b4a" * 3,
    "DB_PASSWORD": "correct-horse-battery-staple-bench",
}
#: and one stored key (``<data dir>/auth.json``), as ``hookcode auth login`` writes it
BENCH_AUTH_JSON = '{"openrouter": {"type": "api", "key": "sk-or-v1-benchStoredKeyValue0123456789"}}'

#: the virtual environment's scripts directory (where ``hookcode`` and the ``rg`` wheel live)
BIN = Path(sys.executable).parent


def hookcode_exe() -> str:
    """The ``hookcode`` console script of the running environment."""
    exe = BIN / ("hookcode.exe" if os.name == "nt" else "hookcode")
    if not exe.is_file():
        raise SystemExit(f"hookcode is not installed in {BIN}: run `uv sync` first")
    return str(exe)


def machine() -> str:
    """One line describing where the figures were taken."""
    cpus = os.cpu_count() or 0
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = cpus
    return (
        f"{platform.system()} {platform.machine()}, {affinity} usable cores ({cpus} total), "
        f"Python {platform.python_version()}"
    )


def median_seconds(fn: Callable[[], object], repeat: int, *, warmup: int = 1) -> float:
    """The median wall time of ``fn()`` over ``repeat`` runs, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@dataclass
class Measure:
    """One process run: wall seconds, peak resident memory (bytes; only meaningful when
    measured with ``rss=True``), exit code, stdout."""

    seconds: float
    peak_rss: int
    returncode: int
    stdout: bytes = b""
    #: CPU seconds (user + system) of the process (and of its launcher with ``rss=True``)
    cpu: float = 0.0


#: a launcher: ``LAUNCHER FD EXE ARGS...`` runs EXE as a child, writes its peak RSS on FD
_RSS_LAUNCHER = """\
import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
os.write(int(sys.argv[1]), str(usage.ru_maxrss).encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _rss_wrapper(argv: Sequence[str], report: int) -> list[str]:
    """``argv`` behind a small launcher that reports the peak RSS of ``argv`` alone on fd
    ``report``. Why a launcher: Linux counts the memory of the process that forked a child
    in that child's ``ru_maxrss`` (exec records the old address space's high-water mark), so
    a child of this benchmark (a few hundred MB) would look as big as the benchmark. GNU time
    is the lightest launcher (~2 MB); else ``python -S -I`` (~9 MB, an over-estimate)."""
    exe = shutil.which(argv[0]) or argv[0]
    if sys.platform == "linux" and os.path.exists("/usr/bin/time"):
        return ["/usr/bin/time", "-f", "%M", "-o", f"/dev/fd/{report}", exe, *argv[1:]]
    return [sys.executable, "-S", "-I", "-c", _RSS_LAUNCHER, str(report), exe, *argv[1:]]


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stop_after_lines: int | None = None,
    keep_output: bool = False,
    rss: bool = False,
) -> Measure:
    """Run ``argv`` (no shell), read its stdout to the end (or until ``stop_after_lines``
    complete lines, then kill it, as ``| head -n N`` would), and return its wall time. With
    ``rss``, also its own peak resident memory, through a light launcher (see
    :func:`_rss_wrapper`; the wall time then includes the launcher's). stderr is discarded."""
    if not rss:
        return _run(argv, cwd, env, stop_after_lines, keep_output)
    with tempfile.TemporaryFile() as report:
        wrapped = _rss_wrapper(argv, report.fileno())
        measure = _run(wrapped, cwd, env, stop_after_lines, keep_output, report.fileno())
        report.seek(0)
        measure.peak_rss = int(report.read().split()[-1]) * _RSS_UNIT
    return measure


#: ru_maxrss (and GNU time's %M) is in kilobytes on Linux, in bytes on macOS
_RSS_UNIT = 1 if sys.platform == "darwin" else 1024


def _run(
    argv: Sequence[str],
    cwd: str | Path | None,
    env: Mapping[str, str] | None,
    stop_after_lines: int | None,
    keep_output: bool,
    pass_fd: int | None = None,
) -> Measure:
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        pass_fds=() if pass_fd is None else (pass_fd,),
    )
    assert proc.stdout is not None
    out = bytearray()
    lines = 0
    while chunk := os.read(proc.stdout.fileno(), 65536):
        if keep_output:
            out += chunk
        if stop_after_lines is not None:
            lines += chunk.count(b"\n")
            if lines >= stop_after_lines:
                # not proc.kill(): it polls first and may reap a child that already ended,
                # and then the wait4 below, which reads the child's resources, finds nothing
                os.kill(proc.pid, signal.SIGKILL)
                break
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    # the child's own figure counts this process's memory too (see _rss_wrapper)
    cpu = usage.ru_utime + usage.ru_stime
    return Measure(elapsed, usage.ru_maxrss * _RSS_UNIT, proc.returncode, bytes(out), cpu)


#: where benchmarks keep what outlives a run (virtual environments of peer tools, bytecode)
CACHE = Path(os.environ.get("HOOKCODE_BENCH_CACHE") or Path.home() / ".cache" / "hookcode-bench")


def bytecode_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for timing Python start-up as an installed program
    runs: with bytecode caches. ``PYTHONDONTWRITEBYTECODE`` would make every run compile every
    module from source (a development-container setting no installed CLI runs under); the
    caches go to ``CACHE/pycache`` (``PYTHONPYCACHEPREFIX``), never into the source tree."""
    out = dict(os.environ if env is None else env)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    return out


def cached_venv(name: str, requirements: Sequence[str], *, python: str | None = None) -> Path:
    """A virtual environment ``CACHE/NAME`` holding ``requirements`` (made with ``uv venv`` and
    ``uv pip install`` on first use, reused after): a peer tool installed for a benchmark
    only, never a dependency of the project. Returns its interpreter."""
    venv = CACHE / name
    exe = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    stamp = venv / ".hookcode-bench-requirements"
    wanted = "\n".join(requirements)
    if exe.is_file() and stamp.is_file() and stamp.read_text() == wanted:
        return exe
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit(f"uv is needed to create {venv} (pip install uv)")
    CACHE.mkdir(parents=True, exist_ok=True)
    print(
        f"creating {venv} ({len(requirements)} requirement arguments) ...",
        file=sys.stderr,
        flush=True,
    )
    subprocess.run(
        [uv, "venv", "-q", "--clear", str(venv), "--python", python or sys.executable],
        check=True,
    )
    subprocess.run([uv, "pip", "install", "-q", "--python", str(exe), *requirements], check=True)
    stamp.write_text(wanted)
    return exe


def interleaved(
    commands: Mapping[str, Callable[[], Measure]], repeat: int, *, warmup: int = 2
) -> dict[str, list[Measure]]:
    """Run every command ``repeat`` times round-robin (A B C A B C ...), after ``warmup``
    untimed rounds, so that a change in the machine's load hits every command alike. A
    command that fails stops the benchmark."""
    results: dict[str, list[Measure]] = {name: [] for name in commands}
    for round_ in range(warmup + repeat):
        for name, run in commands.items():
            measure = run()
            if measure.returncode != 0:
                raise SystemExit(f"{name}: exit status {measure.returncode}")
            if round_ >= warmup:
                results[name].append(measure)
    return results


@dataclass
class Report:
    """Rows of (figure, value, anchor, ratio, budget, verdict), printed as an aligned table."""

    title: str
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def row(
        self,
        name: str,
        value: str,
        anchor: str = "",
        ratio: float | None = None,
        budget: str = "",
        ok: bool | None = None,
    ) -> None:
        verdict = "" if ok is None else ("ok" if ok else "OVER BUDGET")
        if ok is False:
            self.failures.append(f"{self.title}: {name}")
        self.rows.append(
            (name, value, anchor, "" if ratio is None else f"{ratio:.2f}x", budget, verdict)
        )

    def note(self, text: str) -> None:
        self.notes.append(text)

    def print(self) -> None:
        header = ("figure", "value", "anchor", "ratio", "budget", "")
        table = [header, *self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        print(f"\n== {self.title}")
        for r in table:
            print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        for text in self.notes:
            print(f"  note: {text}")
        sys.stdout.flush()


def exit_status(*reports: Report) -> int:
    """Print every missed budget of ``reports`` (``OVER BUDGET: ...``); 1 if any, else 0."""
    failures = [failure for report in reports for failure in report.failures]
    for failure in failures:
        print(f"OVER BUDGET: {failure}")
    return 1 if failures else 0


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"
