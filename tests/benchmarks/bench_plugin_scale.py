"""Plugin scale (issue 9, budget 3): start-up with 200 installed tool-pack distributions grows
by at most 50% over the default install.

    uv run --no-sync python tests/benchmarks/bench_plugin_scale.py [--packs 200] [--repeat 15]

Two throwaway virtual environments (``~/.cache/hookcode-bench/scale-base`` and
``scale-packs``, made once with ``uv``, reused after) hold exactly the distributions of the
workspace's environment (the hookcode packages as editable installs, everything else pinned
to the installed version). Into the second one's ``site-packages`` the benchmark writes
``--packs`` generated tool packs the way an installer lays out a wheel: a package
``benchpack_NNN/__init__.py`` (one ``@hookcode.tool`` and its ``register_tools`` hook,
importing only ``hookcode``) and ``benchpack_NNN-1.0.dist-info/`` with ``METADATA``,
``entry_points.txt`` (``[hookcode] benchpack_NNN = benchpack_NNN``), ``INSTALLER`` and
``RECORD``. They are
third-party distributions (``benchpack-NNN``, not ``hookcode-*``), so they load after the
default plugins, as a user's packs would. The packs are deleted at the end of the run.

Figures: ``hookcode --help`` and ``hookcode tools list`` in both environments, interleaved,
medians of ``--repeat`` runs, with bytecode caches, in an empty project. Budget: each at most
1.5x the default install's. Exit status 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    Report,
    bytecode_env,
    cached_venv,
    exit_status,
    interleaved,
    machine,
    ms,
    run_process,
)

BUDGET = 1.5
PREFIX = "benchpack_"

MODULE = '''\
"""A generated tool pack ({n} of {total}): one tool."""

import hookcode


@hookcode.tool
def {name}(text: str) -> str:
    """Echo TEXT back (a tool of generated pack {n})."""
    return text


@hookcode.hookimpl
def register_tools(register):
    register({name})
'''


def workspace_requirements() -> list[str]:
    """The workspace environment's distributions as ``uv pip install`` arguments."""
    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("uv is needed to build the benchmark's environments")
    listed = subprocess.run(
        [uv, "pip", "list", "--format", "json", "--python", sys.executable],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    requirements: list[str] = []
    for dist in sorted(json.loads(listed), key=lambda d: d["name"]):
        if dist.get("editable_project_location"):
            requirements += ["-e", dist["editable_project_location"]]
        else:
            requirements.append(f"{dist['name']}=={dist['version']}")
    return ["--no-deps", *requirements]


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def remove_packs(site: Path) -> None:
    for path in site.glob(f"{PREFIX}*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def write_packs(site: Path, count: int) -> None:
    """``count`` tool packs laid out as an installer lays out their wheels."""
    remove_packs(site)
    for i in range(count):
        n = f"{i:03d}"
        module = f"{PREFIX}{n}"
        package = site / module
        package.mkdir()
        (package / "__init__.py").write_text(MODULE.format(n=n, total=count, name=module))
        info = site / f"{module}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: benchpack-{n}\nVersion: 1.0\n"
            f"Summary: generated tool pack {n}\nRequires-Dist: hookcode-core\n"
        )
        (info / "entry_points.txt").write_text(f"[hookcode]\n{module} = {module}\n")
        (info / "INSTALLER").write_text("hookcode-bench\n")
        files = [
            f"{module}/__init__.py",
            *(f"{info.name}/{f}" for f in ("METADATA", "entry_points.txt", "INSTALLER", "RECORD")),
        ]
        (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args, _ = parser.parse_known_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}", flush=True)
    requirements = workspace_requirements()
    base = cached_venv("scale-base", requirements)
    packed = cached_venv("scale-packs", requirements)
    site = site_packages(packed)
    if site == Path(sysconfig.get_paths()["purelib"]):
        raise SystemExit("refusing to write packs into the workspace's own environment")
    report = Report(f"plugin scale: {args.packs} tool packs (bench_plugin_scale.py)")
    with tempfile.TemporaryDirectory(prefix="hookcode-bench-scale-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        env = bytecode_env()
        for key in list(env):
            if key.startswith("HOOKCODE_"):
                del env[key]
        env.update(HOOKCODE_CONFIG_DIR=str(root / "config"), HOOKCODE_DATA_DIR=str(root / "data"))
        write_packs(site, args.packs)
        try:
            exe = {
                "default": str(base.parent / "hookcode"),
                "packs": str(packed.parent / "hookcode"),
            }
            listed = run_process(
                [exe["packs"], "tools", "list", "--json"], cwd=project, env=env, keep_output=True
            )
            tools = json.loads(listed.stdout)
            found = sum(1 for t in tools if t["name"].startswith(PREFIX))
            if found != args.packs:
                raise SystemExit(f"{found} of {args.packs} generated tools listed")
            commands = {}
            for label in ("default", "packs"):
                for what, argv in (("--help", ["--help"]), ("tools list", ["tools", "list"])):
                    commands[f"{what} {label}"] = lambda a=[exe[label], *argv]: run_process(
                        a, cwd=project, env=env
                    )
            runs = interleaved(commands, args.repeat)
        finally:
            remove_packs(site)
    med = {name: statistics.median(m.seconds for m in r) for name, r in runs.items()}
    cpu = {name: statistics.median(m.cpu for m in r) for name, r in runs.items()}
    for what in ("--help", "tools list"):
        a, b = f"{what} packs", f"{what} default"
        ratio = med[a] / med[b]
        report.row(
            f"hookcode {what} with {args.packs} packs",
            f"{ms(med[a])} (cpu {ms(cpu[a])})",
            f"default install {ms(med[b])} (cpu {ms(cpu[b])})",
            ratio,
            f"<= {BUDGET}x",
            ratio <= BUDGET,
        )
        report.note(f"{what}: cpu {cpu[a] / cpu[b]:.2f}x")
    report.note(f"{found} generated tools listed by `tools list --json`")
    report.print()
    return exit_status(report)


if __name__ == "__main__":
    raise SystemExit(main())
