"""Another machine, as far as a process can tell: its own host name.

hookcode records the machine a session runs on with ``socket.gethostname()`` (sessions' host,
the lease's holder). A test that plays two machines runs one side in a UTS namespace of its own
(``unshare --uts``; as an unprivileged user inside a user namespace too), where the host name is
set before hookcode starts: the real call answers the other machine's name, nothing in hookcode
is told to pretend."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from hookcode.testing import missing

#: run in the namespace: set the host name, then become the command
_SET_HOSTNAME = (
    "import os, socket, sys; socket.sethostname(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"
)


@functools.cache
def _prefix() -> tuple[str, ...]:
    unshare = shutil.which("unshare")
    if unshare is None:
        missing("unshare (util-linux) is needed to give a process another host name")
    prefix = (
        [unshare, "--uts"] if os.geteuid() == 0 else [unshare, "--user", "--map-root-user", "--uts"]
    )
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _SET_HOSTNAME, "probe-host", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        missing(
            f"cannot give a process another host name ({' '.join(prefix)}): {done.stderr.strip()}"
        )
    return tuple(prefix)


def on_host(name: str, argv: list[str]) -> list[str]:
    """``argv`` run as on a machine called ``name``: ``socket.gethostname()`` answers ``name``
    in it and in its children."""
    return [*_prefix(), sys.executable, "-c", _SET_HOSTNAME, name, *argv]
