"""The command line's start-up pauses Python's cyclic garbage collector
(:mod:`hookcode.startup`): until the first model reply of a run has been streamed, until the
chat first waits for input, until the command ends, and at most ``PAUSE_LIMIT`` seconds.

The pause functions run in child interpreters (a test process's collector is left alone);
the command line's pause is watched from a real ``hookcode`` process, through a provider plugin
that writes down ``gc.isenabled()`` each time it is asked for a reply.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.fakedist import FakeDists, run_cli

PROBE = """
    import gc, json, os

    from hookcode import hookimpl
    from hookcode.providers import Finish, TextDelta, ToolCallEnd, ToolCallStart


    class Probe:
        id = "probe"
        name = "GC probe"

        def models(self):
            return []

        async def stream(self, request):
            with open(os.environ["GC_PROBE_LOG"], "a") as log:
                log.write(json.dumps(gc.isenabled()) + "\\n")
            if not any(m.role == "tool" for m in request.messages):
                yield ToolCallStart("c1", "todoread")
                yield ToolCallEnd("c1", "todoread", {})
                yield Finish("tool-calls")
            else:
                yield TextDelta("done")
                yield Finish("stop")


    class Plugin:
        @hookimpl
        def provider(self):
            return [Probe()]


    plugin = Plugin()
"""


def in_child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )


def test_pause_and_resume() -> None:
    done = in_child(
        """
        import gc
        from hookcode import startup

        assert gc.isenabled() and not startup.paused()
        startup.resume()  # nothing paused: nothing happens
        assert gc.isenabled()
        startup.pause()
        assert not gc.isenabled() and startup.paused()
        startup.pause()  # a second pause changes nothing
        assert gc.get_freeze_count() == 0
        startup.resume()
        assert gc.isenabled() and not startup.paused()
        # what start-up made is frozen: later collections leave it alone
        assert gc.get_freeze_count() > 1000
        startup.resume()
        assert gc.isenabled()
        print("ok")
        """
    )
    assert done.stdout == "ok\n", done.stderr


def test_pause_keeps_a_collector_the_program_turned_off() -> None:
    done = in_child(
        """
        import gc
        from hookcode import startup

        gc.disable()
        startup.pause()
        assert not startup.paused()
        startup.resume()
        assert not gc.isenabled()  # the program's own setting stands
        print("ok")
        """
    )
    assert done.stdout == "ok\n", done.stderr


def test_the_pause_ends_by_itself_after_its_limit() -> None:
    done = in_child(
        """
        import gc, time
        from hookcode import startup

        startup.pause(limit=0.2)
        assert not gc.isenabled()
        deadline = time.monotonic() + 30
        while not gc.isenabled() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gc.isenabled() and not startup.paused()
        print("ok")
        """
    )
    assert done.stdout == "ok\n", done.stderr


def test_the_console_script_runs_the_cli_through_the_pause() -> None:
    from importlib.metadata import entry_points

    scripts = [ep for ep in entry_points(group="console_scripts") if ep.name == "hookcode"]
    # core's, and the umbrella distribution's own copy of it
    assert {ep.dist.name for ep in scripts if ep.dist} == {"hookcode-core", "hookcode"}
    assert {ep.value for ep in scripts} == {"hookcode.console:main"}
    done = subprocess.run(
        [sys.executable, "-m", "hookcode", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


@pytest.fixture
def probe(tmp_path: Path, hookcode_env: Any) -> tuple[dict[str, str], Path]:
    dists = FakeDists(tmp_path / "site")
    dists.add(
        "hookcode-gc-probe",
        entry_points={"gc_probe": "gc_probe:plugin"},
        modules={"gc_probe": PROBE},
    )
    log = tmp_path / "gc.log"
    return dists.env(hookcode_env.env, GC_PROBE_LOG=str(log)), log


def states(log: Path) -> list[bool]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_run_starts_paused_and_resumes_after_its_first_reply(
    probe: tuple[dict[str, str], Path], hookcode_env: Any
) -> None:
    env, log = probe
    done = run_cli(["run", "-m", "probe/m", "go"], env=env, cwd=hookcode_env.project)
    assert done.returncode == 0, done.stderr
    assert "done" in done.stdout
    # the first request is made with the collector paused, the second (after a tool call)
    # with it running again
    assert states(log) == [False, True]


def test_the_chat_resumes_collection_before_it_waits_for_input(
    probe: tuple[dict[str, str], Path], hookcode_env: Any
) -> None:
    env, log = probe
    done = run_cli(["chat", "-m", "probe/m"], env=env, cwd=hookcode_env.project, input="go\n")
    assert done.returncode == 0, done.stderr
    assert states(log) == [True, True]
