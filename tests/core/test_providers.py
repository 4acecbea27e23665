"""What core gives providers besides the protocol: :func:`hookcode.providers.http_retry`, the
one reading of an HTTP error answer's retry hints (both HTTP providers use it; the loop does
the retrying), and :func:`hookcode.providers.import_soon`, the background import of an SDK
that ``preload()`` starts once a run knows its provider."""

from __future__ import annotations

import email.utils
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hookcode.providers import MAX_RETRY_AFTER, http_retry


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (408, True),
        (409, True),
        (422, False),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
    ],
)
def test_which_statuses_are_worth_another_try(status: int, retryable: bool) -> None:
    assert http_retry(status, {}) == (retryable, None)


def test_x_should_retry_overrides_the_status() -> None:
    assert http_retry(400, {"X-Should-Retry": "true"}) == (True, None)
    assert http_retry(503, {"x-should-retry": "false"}) == (False, None)
    assert http_retry(503, {"x-should-retry": "maybe"}) == (True, None)


def test_the_wait_the_server_asks_for() -> None:
    assert http_retry(429, {"retry-after-ms": "250"}) == (True, 0.25)
    assert http_retry(429, {"Retry-After": "7"}) == (True, 7.0)
    # retry-after-ms wins; an unreadable one falls back to retry-after
    assert http_retry(429, {"retry-after-ms": "100", "retry-after": "9"}) == (True, 0.1)
    assert http_retry(429, {"retry-after-ms": "soon", "retry-after": "9"}) == (True, 9.0)
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    _, wait = http_retry(429, {"retry-after": later})
    assert wait is not None and 25 < wait <= 30
    # outside (0, MAX_RETRY_AFTER]: not honoured, the loop backs off on its own
    for value in ("0", "-3", str(MAX_RETRY_AFTER + 1), "tomorrow", ""):
        assert http_retry(429, {"retry-after": value}) == (True, None)
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert http_retry(503, {"retry-after": past}) == (True, None)


# ---------------------------------------------------------------------------------------------
# import_soon
# ---------------------------------------------------------------------------------------------

IMPORT_SOON = """
import builtins, sys, threading
sys.path.insert(0, sys.argv[1])
from hookcode.providers import import_soon
builtins.GATE = threading.Event()  # first_mod's import waits for it: the thread is counted alive
import_soon("first_mod", "no_such_module_anywhere", "second_mod")
import_soon("first_mod")  # asked for already: no second thread
workers = [t for t in threading.enumerate() if t.name == "hookcode-import"]
builtins.GATE.set()
for t in workers:
    t.join()
import first_mod, second_mod
print(len(workers), first_mod.THREAD, second_mod.THREAD, first_mod.ORDER < second_mod.ORDER)
"""


def test_import_soon_imports_in_one_background_thread_in_order(tmp_path: Path) -> None:
    for name in ("first_mod", "second_mod"):
        (tmp_path / f"{name}.py").write_text(
            "import builtins, threading, time\n"
            "builtins.GATE.wait(60)\n"
            "THREAD = threading.current_thread().name\n"
            "ORDER = time.perf_counter_ns()\n"
        )
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_SOON, str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    # a module that cannot be imported is skipped silently: the real import reports it
    assert done.stdout.split() == ["1", "hookcode-import", "hookcode-import", "True"]
