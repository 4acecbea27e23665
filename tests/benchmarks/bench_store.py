"""The shared store (issue 21, "Performance"): the PostgreSQL store on loopback beside the
embedded SQLite store, measured in the same run.

    uv run --no-sync python tests/benchmarks/bench_store.py [--only dispatch,fleet,list]
        [--batch 2000] [--runs 50] [--calls 20] [--sessions 100000] [--repeat 5]

PostgreSQL is the server of ``HOOKCODE_TEST_POSTGRES_URL`` when set, else a throwaway cluster
the benchmark starts (``tests/helpers/postgres.py``: Debian's server, durability off as in the
tests) and stops; every figure gets a fresh database, dropped afterwards. Everything else
lives in a temporary directory, deleted afterwards.

- dispatch: ``bench_dispatch.py``'s runtime (5 before + 5 after hooks, a wrapper, 100
  permission rules; the store records each call: its running part, then its result), once
  with the SQLite file and once with ``HOOKCODE_STORE`` naming the database; batches of
  ``--batch`` sequential calls alternate between the two, the median batch per call. Each
  batch ends with ``store.flush()``: the tool parts the PostgreSQL store writes behind are
  committed inside the measured time (SQLite's flush does nothing).
  Budget: PostgreSQL within 2x of SQLite.
- fleet: ``--runs`` headless ``hookcode run`` processes started at once, each with the
  scripted model making ``--calls`` tool calls (``read`` of a different small file each, one
  per step) and answering; all against one PostgreSQL database, beside the same with one
  SQLite file per run (each run its own data directory). Checked: every run exits 0 (no
  deadlock, no busy error), every call's tool part is stored completed (no lost writes).
  Figure: the wall time from the first start to the last exit (for information: the
  processes share the machine's cores).
- list: ``--sessions`` sessions in ``--projects`` projects (a fleet's store: 100 sessions
  per project by default), all made on this machine; ``hookcode sessions list --json`` in one
  of the projects: the store call it makes (this project's conversations on this host) with
  the JSON joined as the CLI prints it, in-process, and the whole CLI net of its fixed cost
  (the same command on an empty store), on both stores. Budget: under 0.3 s each (the
  indexes: the cost follows the sessions listed, not the sessions stored). For information:
  the store call of ``sessions list --all --json`` (every session, every project), which
  grows with everything stored.

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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: helpers.postgres

from _common import Report, exit_status, hookcode_exe, machine, median_seconds, ms
from bench_dispatch import build_runtime, hookcode_batches
from helpers import postgres

DISPATCH_RATIO = 2.0
LIST_BUDGET = 0.3


def _world(root: Path, store: str | None = None) -> dict[str, str]:
    """An isolated environment in ``root`` (project, data, config, home); ``store``: the
    store URL, none for the SQLite file in the data directory."""
    for name in ("project", "data", "config", "home"):
        (root / name).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOKCODE_")}
    env.update(
        HOOKCODE_DATA_DIR=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root / "home"),
        HOOKCODE_LOAD_PLUGINS="policy_rules",
    )
    if store is not None:  # and the plugin that provides it
        env["HOOKCODE_STORE"] = store
        env["HOOKCODE_LOAD_PLUGINS"] += ",store_postgres"
    return env


def _open(env: dict[str, str]) -> Any:
    """The store a CLI run with ``env`` writes to (opened as the CLI opens it)."""
    from hookcode.plugins import create_plugins
    from hookcode.runtime import Runtime

    project = Path(env["HOOKCODE_DATA_DIR"]).parent / "project"
    plugins = create_plugins(env=env, cwd=project)
    return Runtime(cwd=project, env=env, plugins=plugins)


# ------------------------------------------------------------------------------ dispatch


def bench_dispatch(report: Report, root: Path, server: str, calls: int, repeat: int) -> None:
    for name in ("d-sqlite", "d-postgres"):
        (root / name).mkdir()
    with postgres.database(server) as url:
        runtimes = {
            "sqlite": build_runtime(root / "d-sqlite")[0],
            "postgresql": build_runtime(root / "d-postgres", store=url)[0],
        }
        try:
            per_call: dict[str, list[float]] = {name: [] for name in runtimes}
            for _ in range(repeat):  # alternate: a change in the machine's load hits both
                for name, rt in runtimes.items():
                    per_call[name] += asyncio.run(hookcode_batches(rt, calls, 1))
            location = runtimes["postgresql"].store.location
        finally:
            for rt in runtimes.values():
                rt.close()
    lite = statistics.median(per_call["sqlite"])
    pg = statistics.median(per_call["postgresql"])
    report.row(
        "dispatch, one call through invoke(), PostgreSQL store",
        us(pg),
        f"SQLite store {us(lite)}",
        pg / lite,
        f"<= {DISPATCH_RATIO:.0f}x SQLite",
        pg / lite <= DISPATCH_RATIO,
    )
    report.note(f"dispatch: PostgreSQL at {location}; {calls} calls per batch, {repeat} batches")


# ------------------------------------------------------------------------------ fleet


def _fleet_script(root: Path, calls: int) -> Path:
    turns: list[Any] = [
        {"tool_calls": [{"name": "read", "args": {"filePath": f"notes/{i}.txt"}}]}
        for i in range(calls)
    ]
    root.mkdir(parents=True, exist_ok=True)
    script = root / "script.json"
    script.write_text(json.dumps([*turns, {"text": "done"}]))
    return script


def _fleet(root: Path, runs: int, calls: int, store: str | None) -> tuple[float, dict[str, int]]:
    """Start ``runs`` headless runs at once; (seconds to the last exit, what was stored)."""
    script = _fleet_script(root, calls)
    exe = hookcode_exe()
    worlds = [root / f"run{i}" for i in range(runs)]
    envs = [_world(world, store) for world in worlds]
    for env in envs:  # a user's run: every installed plugin (the model, the tools)
        del env["HOOKCODE_LOAD_PLUGINS"]
    for world in worlds:
        (world / "project" / "notes").mkdir(parents=True, exist_ok=True)
        for i in range(calls):
            (world / "project" / "notes" / f"{i}.txt").write_text(f"note {i}\n")
    argv = [exe, "run", "-m", "scripted/fleet", "--script", str(script), "--yes", "go"]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            argv,
            cwd=world / "project",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for world, env in zip(worlds, envs, strict=True)
    ]
    failures = []
    for proc in procs:
        _out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(f"exit {proc.returncode}: {err.decode(errors='replace')[-300:]}")
    seconds = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} of {runs} runs failed; first: {failures[0]}")
    stored = {"sessions": 0, "tool parts": 0, "completed": 0}
    for env in envs[:1] if store else envs:
        rt = _open(env)
        try:
            for session in rt.store.list_sessions():
                parts = rt.store.tool_parts(session.id)
                stored["sessions"] += 1
                stored["tool parts"] += len(parts)
                stored["completed"] += sum(p.state == "completed" for p in parts)
        finally:
            rt.close()
    return seconds, stored


def bench_fleet(report: Report, root: Path, server: str, runs: int, calls: int) -> None:
    expected = {"sessions": runs, "tool parts": runs * calls, "completed": runs * calls}
    lite, lite_stored = _fleet(root / "f-sqlite", runs, calls, None)
    with postgres.database(server) as url:
        pg, pg_stored = _fleet(root / "f-postgres", runs, calls, url)
    for name, stored in (("SQLite", lite_stored), ("PostgreSQL", pg_stored)):
        if stored != expected:
            report.failures.append(f"fleet, {name}: stored {stored}, expected {expected}")
    report.row(
        f"{runs} concurrent runs x {calls} tool calls, one PostgreSQL database",
        f"{pg:.1f} s",
        f"one SQLite file per run {lite:.1f} s",
        pg / lite,
        "no lost writes",
        pg_stored == expected,
    )
    report.note(
        f"fleet: stored (PostgreSQL) {pg_stored}, (SQLite, all files) {lite_stored}; "
        f"expected {expected}"
    )


# ------------------------------------------------------------------------------ list


def _fill(env: dict[str, str], count: int, projects: int) -> None:
    """``count`` sessions in ``projects`` projects (the world's own among them, with
    ``count / projects`` of them), written in one transaction."""
    rt = _open(env)
    try:
        mine, directory = rt.project, str(rt.worktree)
        with rt.store.transaction():
            for i in range(count):
                rt.store.create_session(
                    project=mine if i % projects == 0 else f"git:{i % projects:040x}",
                    directory=directory,
                    title=f"session number {i}: fix the thing",
                    model="scripted/demo",
                )
    finally:
        rt.close()


def _cli_pair(full: dict[str, str], empty: dict[str, str], repeat: int) -> tuple[float, float]:
    """Median wall times of ``hookcode sessions list --json`` on the full and on the empty
    store, run alternately after one warm-up each."""
    exe = hookcode_exe()
    times: dict[int, list[float]] = {0: [], 1: []}
    for i in range(repeat + 1):
        for which, env in enumerate((full, empty)):
            project = Path(env["HOOKCODE_DATA_DIR"]).parent / "project"
            started = time.perf_counter()
            done = subprocess.run(
                [exe, "-C", str(project), "sessions", "list", "--json"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
            )
            if done.returncode != 0:
                raise SystemExit(f"sessions list failed: {done.stderr.decode()[-300:]}")
            if i:
                times[which].append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def _list_times(store: Any, project: str, host: str, repeat: int) -> tuple[float, float]:
    """Median seconds of what ``sessions list --json`` asks the store (this project's
    conversations on this host), with the JSON joined as it prints it; and the same for
    ``sessions list --all --json`` (every project's)."""

    def mine() -> str:
        return ",\n  ".join(store.sessions_json(project, conversations=True, host=host))

    def every() -> str:
        return ",\n  ".join(store.sessions_json(None, conversations=True))

    return median_seconds(mine, repeat, warmup=2), median_seconds(every, repeat, warmup=1)


def bench_list(
    report: Report, root: Path, server: str, sessions: int, projects: int, repeat: int
) -> None:
    import socket

    host = socket.gethostname()
    fixed_costs: dict[str, float] = {}
    with postgres.database(server) as full_url, postgres.database(server) as empty_url:
        for name, full, empty in (
            ("SQLite", _world(root / "l-sqlite"), _world(root / "l-sqlite-empty")),
            (
                "PostgreSQL",
                _world(root / "l-postgres", full_url),
                _world(root / "l-postgres-empty", empty_url),
            ),
        ):
            started = time.perf_counter()
            _fill(full, sessions, projects)
            filled = time.perf_counter() - started
            rt = _open(full)
            try:
                store, project = rt.store, rt.project
                mine = len(store.sessions_json(project, conversations=True, host=host))
                assert mine == sessions // projects, mine
                assert len(store.sessions_json(None, conversations=True)) == sessions
                query, every = _list_times(store, project, host, repeat)
            finally:
                rt.close()
            cli, fixed = _cli_pair(full, empty, repeat)
            net = cli - fixed
            fixed_costs[name] = fixed
            where = f"{mine} of {sessions:,} sessions, {name}"
            report.row(
                f"sessions list --json, {where}: query + JSON",
                ms(query),
                "",
                None,
                "< 0.3 s",
                query < LIST_BUDGET,
            )
            report.row(
                f"sessions list --json, {where}: CLI net",
                ms(net),
                f"fixed CLI cost {ms(fixed)}",
                cli / fixed,
                "< 0.3 s",
                net < LIST_BUDGET,
            )
            report.row(
                f"sessions list --all --json, all {sessions:,} sessions, {name}: query + JSON",
                ms(every),
                f"{mine} of them {ms(query)}",
                every / query,
                "(info)",
            )
            report.note(
                f"list, {name}: {sessions:,} sessions in {projects:,} projects written in "
                f"{filled:.1f} s"
            )
    report.row(
        "hookcode sessions list --json on an empty store, PostgreSQL (the fixed CLI cost)",
        ms(fixed_costs["PostgreSQL"]),
        f"SQLite {ms(fixed_costs['SQLite'])}",
        fixed_costs["PostgreSQL"] / fixed_costs["SQLite"],
        "(info)",
    )


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="dispatch,fleet,list")
    parser.add_argument("--batch", type=int, default=2000, help="dispatch: calls per batch")
    parser.add_argument("--runs", type=int, default=50, help="fleet: concurrent runs")
    parser.add_argument("--calls", type=int, default=20, help="fleet: tool calls per run")
    parser.add_argument("--sessions", type=int, default=100_000, help="list: sessions")
    parser.add_argument("--projects", type=int, default=1_000, help="list: projects")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args()
    which = set(args.only.split(","))
    try:
        postgres.bin_dir()
    except postgres.PostgresMissing as exc:
        raise SystemExit(str(exc)) from None
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}", flush=True)
    report = Report("store (bench_store.py)")
    root = Path(tempfile.mkdtemp(prefix="hookcode-bench-store-"))
    try:
        with postgres.server() as server:
            if "dispatch" in which:
                bench_dispatch(report, root, server, args.batch, args.repeat)
            if "fleet" in which:
                bench_fleet(report, root, server, args.runs, args.calls)
            if "list" in which:
                bench_list(report, root, server, args.sessions, args.projects, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.print()
    return exit_status(report)


if __name__ == "__main__":
    raise SystemExit(main())
