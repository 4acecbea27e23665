"""Run every benchmark script in this directory (``bench_*.py``), one after the other.

    uv run --no-sync python tests/benchmarks/run.py [ARGS...]

ARGS are passed to each script. Exit status 1 when any script missed a budget.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    status = 0
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n#### {script.name}", flush=True)
        done = subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=False)
        status = status or (1 if done.returncode else 0)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
