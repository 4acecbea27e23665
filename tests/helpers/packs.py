"""Canned fake distributions for the plugin-loading and CLI tests.

Module names start with ``hkt_`` so they never collide with a real package.
"""

from __future__ import annotations

from helpers.fakedist import FakeDists

__all__ = [
    "BAD_PLUGINS",
    "CLASH_ORDER",
    "CLASH_WINNER",
    "add_bad_plugins",
    "add_clash_packs",
    "add_noisy_plugins",
    "add_tool_pack",
]

#: the tool pack: ``touch_marker`` (writes a marker file, so a test can tell whether the body
#: ran) and ``guarded`` (asks the ``guarded`` permission for ``target`` itself, then writes).
TOOL_PACK = '''
from __future__ import annotations

from typing import Annotated

import hookcode
from hookcode import ToolContext, hookimpl


@hookcode.tool
def touch_marker(ctx: ToolContext, path: Annotated[str, "Marker file"], count: int = 1) -> str:
    """Write a marker file (proves the body ran)."""
    ctx.resolve(path).write_text(str(count))
    return f"wrote {path} x{count}"


@hookcode.tool(asks_permission=True)
async def guarded(ctx: ToolContext, target: str, marker: str) -> str:
    """Ask the guarded permission for TARGET, then write MARKER."""
    await ctx.ask("guarded", [target])
    ctx.resolve(marker).write_text(target)
    return f"guarded {target}"


@hookimpl
def register_tools(register):
    register(touch_marker, guarded)
'''


def add_tool_pack(dists: FakeDists) -> None:
    """``hookcode-fakepack`` 2.5, entry point ``tool_fake``."""
    dists.add(
        "hookcode-fakepack",
        version="2.5",
        entry_points={"tool_fake": "hkt_fakepack"},
        modules={"hkt_fakepack": TOOL_PACK},
    )


CLASH_PACK = '''
import hookcode
from hookcode import hookimpl


@hookcode.tool(name="clash")
def clash() -> str:
    """Say which pack won the name."""
    return {label!r}


@hookimpl
def register_tools(register):
    register(clash)
'''

#: (distribution, entry point) of the packs that all register a tool named ``clash``, in the
#: order they must register: ``hookcode-*`` distributions by entry-point name, then the others
#: by (distribution, entry point). ``hookcodex-tools`` is not a ``hookcode-*`` distribution.
CLASH_ORDER = [
    ("hookcode-zeta", "tool_aaa"),
    ("hookcode-alpha", "tool_bbb"),
    ("acme-tools", "zz"),
    ("beta-tools", "aa"),
    ("hookcodex-tools", "a0"),
]
CLASH_WINNER = CLASH_ORDER[-1]


def add_clash_packs(dists: FakeDists) -> None:
    # written in an order that matches no sort, so only the loader's sort can get it right
    for dist, ep in sorted(CLASH_ORDER, key=lambda item: item[1]):
        module = "hkt_clash_" + ep
        dists.add(dist, entry_points={ep: module}, modules={module: CLASH_PACK.format(label=dist)})


#: entry point -> (distribution, version, what the error must mention)
BAD_PLUGINS = {
    "broken": ("broken-plugin", "0.3", "hkt_does_not_exist"),
    "exploding": ("exploding-plugin", "1.0", "kaboom at import"),
    "exiting": ("exiting-plugin", "1.0", "SystemExit"),
    "typo": ("typo-plugin", "1.1", "did you mean 'tool_execute_before'?"),
    "badargs": ("badargs-plugin", "1.2", "bogus"),
}

BAD_SOURCES = {
    "broken": "import hkt_does_not_exist\n",
    "exploding": "raise RuntimeError('kaboom at import')\n",
    "exiting": "import sys\nsys.exit(3)\n",
    "typo": """
from hookcode import hookimpl


@hookimpl
def tool_exectue_before(call, ctx):
    pass
""",
    "badargs": """
from hookcode import hookimpl


@hookimpl
def tool_definition(tool_id, definition, bogus):
    pass
""",
}


def add_bad_plugins(dists: FakeDists) -> None:
    """Plugins that fail to import (ImportError, RuntimeError, SystemExit), implement a
    misspelled hook, or take an argument their hookspec does not have."""
    for ep, (dist, version, _) in BAD_PLUGINS.items():
        module = "hkt_bad_" + ep
        dists.add(
            dist, version=version, entry_points={ep: module}, modules={module: BAD_SOURCES[ep]}
        )


NOISY = """
from hookcode import hookimpl


@hookimpl
def event(event):
    raise RuntimeError("noisy boom in event")


@hookimpl
def config(config):
    raise RuntimeError("noisy boom in config")


@hookimpl
def tool_definition(tool_id, definition):
    raise RuntimeError("noisy boom in tool_definition")


@hookimpl
def register_tools(register):
    raise RuntimeError("noisy boom in register_tools")
"""

RECORDER = """
import os

from hookcode import hookimpl


def _note(line):
    path = os.environ.get("HKT_RECORD")
    if path:
        with open(path, "a") as f:
            f.write(line + "\\n")


@hookimpl
def event(event):
    _note("event " + event.type)


@hookimpl
def config(config):
    _note("config")
"""


def add_noisy_plugins(dists: FakeDists) -> None:
    """``noisy`` raises in every lifecycle hook it implements (and in ``register_tools``); ``recorder``
    appends what it saw to ``$HKT_RECORD``. ``noisy`` registers later (its distribution sorts
    after), so pluggy calls it first: the recorder only runs if the failure was contained."""
    dists.add(
        "recorder-plugin",
        entry_points={"recorder": "hkt_recorder"},
        modules={"hkt_recorder": RECORDER},
    )
    dists.add("zzz-noisy-plugin", entry_points={"noisy": "hkt_noisy"}, modules={"hkt_noisy": NOISY})
