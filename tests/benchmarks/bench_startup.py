"""Start-up budgets (issue 9, as settled in ARCHITECTURE.md "Performance principles"): the
``hookcode`` CLI against the *stack floor* and against ``llm``, and (issue 6) the cost of
having the provider plugins installed.

    uv run --no-sync python tests/benchmarks/bench_startup.py [--repeat 21] [--only main,providers]

What runs (every figure a median of ``--repeat`` runs, all commands interleaved round-robin):

- ``python -c pass`` (the interpreter alone, for scale);
- the floor: a minimal typer app (a ``tools`` group with a ``list`` command printing one
  line) that also imports pluggy and scans the ``hookcode`` entry points, written to a
  temporary directory and run by the same interpreter: ``--help`` and ``tools list``;
- ``hookcode --help`` and ``hookcode tools list`` with every plugin of the workspace's
  environment installed;
- ``llm --help``, ``llm`` (a pluggy-based peer) installed by this script in a separate
  virtual environment, ``~/.cache/hookcode-bench/llm-venv``.

Budgets: ``hookcode --help`` <= 1.25x the floor's ``--help``; ``hookcode tools list`` <= 1.5x
the floor's ``tools list``; both <= 0.5x ``llm --help``. Providers (issue 6): ``hookcode
--help`` and ``tools list`` with both provider plugins installed within 10% of the same in an
environment where they are not installed. ``HOOKCODE_BLOCK_PLUGINS`` is not that (the entry
points are still scanned and their distributions read), so a second environment is made,
``~/.cache/hookcode-bench/startup-noproviders``: every distribution of the workspace's
environment (editable ones stay editable), except ``hookcode-provider-anthropic``,
``hookcode-provider-openai`` and the ``hookcode`` umbrella that requires them. Their SDKs stay
installed there, so the figure isolates the two plugins.

Every process runs with bytecode caches, in an empty project directory with empty config and
data directories, stdin and stdout not terminals. The CPU time of each process (user +
system) is printed beside its wall time: on a loaded machine it is the steadier of the two;
the verdicts use the wall-time medians. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Measure,
    Report,
    bytecode_env,
    cached_venv,
    exit_status,
    hookcode_exe,
    interleaved,
    machine,
    ms,
    run_process,
)

HELP_BUDGET = 1.25
LIST_BUDGET = 1.5
LLM_BUDGET = 0.5
PROVIDERS_BUDGET = 1.10
PROVIDER_DISTS = ("hookcode-provider-anthropic", "hookcode-provider-openai")

FLOOR = '''\
"""The stack floor: typer, pluggy and the hookcode entry-point scan, nothing else."""

from importlib.metadata import entry_points

import pluggy
import typer

app = typer.Typer(add_completion=False)
tools = typer.Typer(help="List the tools.", no_args_is_help=True)
app.add_typer(tools, name="tools")


@app.callback()
def root() -> None:
    """The stack floor."""


@tools.command("list")
def tools_list() -> None:
    """List the tools."""
    typer.echo("tool")


manager = pluggy.PluginManager("hookcode")
found = [(ep.name, ep.value) for ep in entry_points(group="hookcode")]

if __name__ == "__main__":
    app()
'''


def median(measures: list[Measure]) -> float:
    return statistics.median(m.seconds for m in measures)


def median_cpu(measures: list[Measure]) -> float:
    return statistics.median(m.cpu for m in measures)


def isolated_env(root: Path) -> dict[str, str]:
    """This process's environment with bytecode caches, empty config and data directories
    and no hookcode selection variables."""
    env = bytecode_env()
    for key in list(env):
        if key.startswith("HOOKCODE_"):
            del env[key]
    for sub in ("config", "data", "xdg"):
        (root / sub).mkdir(exist_ok=True)
    env["HOOKCODE_CONFIG_DIR"] = str(root / "config")
    env["HOOKCODE_DATA_DIR"] = str(root / "data")
    env["XDG_CONFIG_HOME"] = str(root / "xdg")
    env["LLM_USER_PATH"] = str(root / "llm")
    env.pop("COLUMNS", None)
    return env


def runner(argv: list[str], cwd: Path, env: dict[str, str]):
    return lambda: run_process(argv, cwd=cwd, env=env)


def table_row(report: Report, name: str, runs: list[Measure]) -> None:
    report.row(name, f"{ms(median(runs))} (cpu {ms(median_cpu(runs))})")


def bench_main(args: argparse.Namespace, root: Path, env: dict[str, str]) -> Report:
    project = root / "project"
    project.mkdir()
    floor = root / "floor.py"
    floor.write_text(FLOOR)
    llm_python = cached_venv("llm-venv", ["llm"])
    llm = llm_python.parent / ("llm.exe" if os.name == "nt" else "llm")
    hookcode = hookcode_exe()
    py = sys.executable
    commands = {
        "python -c pass": runner([py, "-c", "pass"], project, env),
        "floor --help": runner([py, str(floor), "--help"], project, env),
        "floor tools list": runner([py, str(floor), "tools", "list"], project, env),
        "hookcode --help": runner([hookcode, "--help"], project, env),
        "hookcode tools list": runner([hookcode, "tools", "list"], project, env),
        "llm --help": runner([str(llm), "--help"], project, env),
    }
    runs = interleaved(commands, args.repeat)
    med = {name: median(m) for name, m in runs.items()}
    cpu = {name: median_cpu(m) for name, m in runs.items()}

    report = Report("start-up (bench_startup.py)")
    for name in ("python -c pass", "floor --help", "floor tools list", "llm --help"):
        table_row(report, name, runs[name])

    def budget_row(name: str, anchor: str, budget: float) -> None:
        ratio = med[name] / med[anchor]
        report.row(
            name,
            f"{ms(med[name])} (cpu {ms(cpu[name])})",
            f"{anchor} {ms(med[anchor])}",
            ratio,
            f"<= {budget}x",
            ratio <= budget,
        )
        report.note(f"{name} / {anchor}: cpu {cpu[name] / cpu[anchor]:.2f}x")

    budget_row("hookcode --help", "floor --help", HELP_BUDGET)
    budget_row("hookcode tools list", "floor tools list", LIST_BUDGET)
    budget_row("hookcode --help", "llm --help", LLM_BUDGET)
    budget_row("hookcode tools list", "llm --help", LLM_BUDGET)
    for name in ("floor --help", "floor tools list", "hookcode --help", "hookcode tools list"):
        report.note(f"{name}: {med[name] / med['python -c pass']:.1f}x python -c pass")
    plugins = entry_point_names(sys.executable, env)
    report.note(f"{len(plugins)} hookcode entry points installed: {', '.join(plugins)}")
    llm_version = subprocess.run(
        [str(llm), "--version"], capture_output=True, text=True, env=env, check=False
    ).stdout.strip()
    report.note(f"{llm_version} in {llm_python.parent.parent}")
    return report


def entry_point_names(python: str, env: dict[str, str]) -> list[str]:
    code = (
        "import json; from importlib.metadata import entry_points; "
        "print(json.dumps(sorted(ep.name for ep in entry_points(group='hookcode'))))"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def noproviders_venv() -> Path:
    """The workspace environment's distributions minus the provider plugins (see the module
    docstring), as a cached virtual environment; returns its interpreter."""
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("uv is needed to build the environment without providers")
    listed = subprocess.run(
        [uv, "pip", "list", "--format", "json", "--python", sys.executable],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    skip = {*PROVIDER_DISTS, "hookcode"}
    requirements: list[str] = []
    for dist in sorted(json.loads(listed), key=lambda d: d["name"]):
        if dist["name"] in skip:
            continue
        if dist.get("editable_project_location"):
            requirements += ["-e", dist["editable_project_location"]]
        else:
            requirements.append(f"{dist['name']}=={dist['version']}")
    return cached_venv("startup-noproviders", ["--no-deps", *requirements])


def bench_providers(args: argparse.Namespace, root: Path, env: dict[str, str]) -> Report:
    project = root / "project-providers"
    project.mkdir()
    python_b = noproviders_venv()
    hookcode_b = str(python_b.parent / ("hookcode.exe" if os.name == "nt" else "hookcode"))
    installed = entry_point_names(sys.executable, env)
    without = entry_point_names(str(python_b), env)
    missing = sorted(set(installed) - set(without))
    if missing != ["provider_anthropic", "provider_openai"]:
        raise SystemExit(f"the environment without providers lacks {missing}, not just the two")
    hookcode = hookcode_exe()
    commands = {
        "--help with providers": runner([hookcode, "--help"], project, env),
        "--help without": runner([hookcode_b, "--help"], project, env),
        "tools list with providers": runner([hookcode, "tools", "list"], project, env),
        "tools list without": runner([hookcode_b, "tools", "list"], project, env),
    }
    runs = interleaved(commands, args.repeat)
    med = {name: median(m) for name, m in runs.items()}
    cpu = {name: median_cpu(m) for name, m in runs.items()}
    report = Report("start-up with and without the provider plugins (issue 6)")
    for what in ("--help", "tools list"):
        a, b = f"{what} with providers", f"{what} without"
        ratio = med[a] / med[b]
        report.row(
            f"hookcode {what}, providers installed",
            f"{ms(med[a])} (cpu {ms(cpu[a])})",
            f"not installed {ms(med[b])} (cpu {ms(cpu[b])})",
            ratio,
            f"<= {PROVIDERS_BUDGET}x",
            ratio <= PROVIDERS_BUDGET,
        )
        report.note(f"{what}: cpu {cpu[a] / cpu[b]:.2f}x")
    report.note(f"without providers: {python_b.parent.parent} ({len(without)} entry points)")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21, help="runs per command (>= 15)")
    parser.add_argument("--only", default="main,providers", help="main,providers")
    args, _ = parser.parse_known_args()
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    reports = []
    with tempfile.TemporaryDirectory(prefix="hookcode-bench-startup-") as tmp:
        root = Path(tmp)
        env = isolated_env(root)
        if "main" in only:
            reports.append(bench_main(args, root, env))
            reports[-1].print()
        if "providers" in only:
            reports.append(bench_providers(args, root, env))
            reports[-1].print()
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return exit_status(*reports)


if __name__ == "__main__":
    raise SystemExit(main())
