"""cache: an opt-in result cache for read-only tools, in memory, per runtime.

Off until tools are named::

    [cache]
    tools = ["read", "grep", "webfetch"]
    ttl = { grep = 10, "*" = 300 }     # seconds (defaults: grep/glob/list 30, others 300)
    max_entries = 256
    max_bytes = 33554432               # LRU beyond either bound

Tools that write (edit, write, multiedit, apply_patch, bash, task, batch, todowrite, ...) are a
config error; a tool the cache does not know to be read-only (an MCP or local tool) is cached
because the config names it, with a warning, except that a tool asking the ``edit`` or
``bash`` permission never is.

**The key**: the tool, its validated arguments (``call.args`` as canonical JSON) and the working
directory (relative paths resolve against it), plus a signature of the files involved:

* ``read``, and ``grep`` on a single file: the file's size, mtime_ns, ctime_ns, inode and real
  path, taken before the call and checked again on every hit, so a change on disk (whoever
  made it) is a miss. ctime is in it because an mtime can be set back.
* ``grep``, ``glob``, ``list`` over a directory: a directory's mtime only changes when its own
  entries do, and walking the tree to sign it costs about what the search does. So these get
  the root's signature, a short TTL (30 s), are dropped by a ``file.edited`` event for any path
  under their root, and all of them are dropped when any other, possibly writing, tool call of
  this runtime finishes (``bash`` writes without ``file.edited``). What stays possible is a file
  changed by another process within the TTL: name these tools only if that is acceptable.
* network tools (webfetch, websearch, ...): the TTL alone.

A result is stored only when it succeeded, no invalidation ran while it was made and the files'
signature did not change during the call; ``read`` results carrying one-time instruction
reminders (``metadata["loaded"]``) are not stored.

**Permissions**: a tool that asks for permission itself asks INSIDE its body, which a cache hit
skips. So while a miss runs, the cache records every ``ctx.ask`` the tool makes (its
``permission_ask`` hook sees each request of the call and abstains), and a hit replays the same
asks, in order, before answering: a rule that now denies, or a user who now rejects, refuses
the hit exactly as it would refuse the tool. Tools that do not ask themselves are pre-checked by
the pipeline before ``tool_execute`` on every call anyway. A ``read`` hit also records the file
in the session's read-time registry, as the tool does.

Hits carry ``metadata["cached"] = True`` (the audit plugin records it). Built from a
``tool_execute`` wrapper (stores results) and a ``tryfirst`` plain ``tool_execute`` (answers
hits: a wrapper always runs the rest of the chain).
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl
from hookcode.plugins import current_runtime

if TYPE_CHECKING:
    from hookcode import ToolCall, ToolContext, ToolResult
    from hookcode.events import Event
    from hookcode.permission import PermissionRequest
    from pydantic import BaseModel

__all__ = ["READ_ONLY", "stats"]

#: tools known to be read-only: cached without a warning when named
READ_ONLY = frozenset(
    {"read", "grep", "glob", "list", "webfetch", "websearch", "codesearch", "sourcegraph"}
)
#: tools whose answer depends on a directory tree (short TTL, dropped by writes)
TREE_TOOLS = frozenset({"grep", "glob", "list"})
#: permissions of tools that write: never cached, whatever their name
WRITE_PERMISSIONS = frozenset({"edit", "bash", "task"})
DEFAULT_TTL = {"grep": 30.0, "glob": 30.0, "list": 30.0}
FALLBACK_TTL = 300.0


@dataclass
class _Ask:
    permission: str
    patterns: list[str]
    always: list[str]
    metadata: dict[str, Any]


@dataclass
class _Plan:
    """One call the cache may answer or store."""

    key: str
    tool: str
    watch: list[str]  # real paths the entry depends on (files, or tree roots)
    tree: bool  # watch holds directory roots (anything under them counts)
    signature: Any
    generation: int
    read_path: str | None = None  # a read: the file to record in the read-time registry
    asks: list[_Ask] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # permission request ids already recorded
    hit: bool = False


@dataclass
class _Entry:
    result: ToolResult
    size: int
    expires: float
    plan: _Plan
    asks: list[_Ask]


def _signature(path: str) -> tuple[Any, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return ("missing", path)
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _size(result: ToolResult) -> int:
    size = len(result.output.encode("utf-8", "replace")) + len(result.title)
    size += sum(len(a.url) for a in result.attachments)
    size += len(json.dumps(result.metadata, default=str))
    return size


class _Cache:
    """One runtime's cache: an LRU of entries plus the calls in flight."""

    def __init__(self, runtime: Any, settings: Any) -> None:
        self.runtime = runtime
        self.settings = settings
        self.tools = set(settings.tools)
        self.entries: OrderedDict[str, _Entry] = OrderedDict()
        self.bytes = 0
        self.generation = 0
        self.pending: dict[str, _Plan] = {}
        self.lock = threading.RLock()
        self.hits = self.misses = 0
        self._warned: set[str] = set()
        for name in sorted(self.tools - READ_ONLY):
            self.warn(
                f"'{name}' is not a tool the cache knows to be read-only; it is cached "
                "because [cache] tools names it (make sure it never writes)"
            )

    def warn(self, message: str) -> None:
        with self.lock:
            if message in self._warned:
                return
            self._warned.add(message)
        self.runtime.plugins.warn(f"cache: {message}")

    def ttl(self, tool: str) -> float:
        ttl = self.settings.ttl
        return float(ttl.get(tool, ttl.get("*", DEFAULT_TTL.get(tool, FALLBACK_TTL))))

    # -- planning -----------------------------------------------------------------------------
    def plan(self, call: ToolCall, ctx: ToolContext) -> _Plan | None:
        if call.tool not in self.tools or not isinstance(call.args, dict):
            return None
        tool = getattr(ctx, "_tool_obj", None)
        permission = getattr(tool, "permission_name", None) or call.tool
        if permission in WRITE_PERMISSIONS:
            self.warn(f"'{call.tool}' asks the '{permission}' permission, so it is never cached")
            return None
        args = call.args
        watch: list[str] = []
        tree = False
        read_path = None
        if call.tool == "read" and isinstance(args.get("filePath"), str):
            read_path = str(ctx.resolve(args["filePath"]))
            watch = [read_path]
        elif call.tool in TREE_TOOLS:
            given = args.get("path")
            root = str(ctx.resolve(given)) if isinstance(given, str) and given else str(ctx.cwd)
            watch = [root]
            tree = not (call.tool == "grep" and os.path.isfile(root))
        watch = [os.path.realpath(p) for p in watch]
        key = json.dumps(
            [call.tool, str(ctx.cwd), args],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            default=str,
        )
        with self.lock:
            generation = self.generation
        return _Plan(
            key=key,
            tool=call.tool,
            watch=watch,
            tree=tree,
            signature=[_signature(p) for p in watch],
            generation=generation,
            read_path=read_path,
        )

    # -- the LRU ------------------------------------------------------------------------------
    def lookup(self, plan: _Plan) -> _Entry | None:
        with self.lock:
            entry = self.entries.get(plan.key)
            if entry is None:
                return None
            if entry.expires <= time.monotonic() or entry.plan.signature != plan.signature:
                self._drop(plan.key)
                return None
            self.entries.move_to_end(plan.key)
            return entry

    def valid(self, key: str, entry: _Entry) -> bool:
        with self.lock:
            return self.entries.get(key) is entry and entry.expires > time.monotonic()

    def store(self, plan: _Plan, result: ToolResult) -> None:
        if result.metadata.get("loaded"):
            return  # read's one-time instruction reminders: not a function of the arguments
        if [_signature(p) for p in plan.watch] != plan.signature:
            return  # a file changed while the tool ran
        copied = copy.deepcopy(result)
        size = _size(copied)
        if size > self.settings.max_bytes:
            return
        with self.lock:
            if self.generation != plan.generation and plan.watch:
                return  # something was invalidated meanwhile: the result may be stale
            self._drop(plan.key)
            self.entries[plan.key] = _Entry(
                copied, size, time.monotonic() + self.ttl(plan.tool), plan, list(plan.asks)
            )
            self.bytes += size
            while self.entries and (
                len(self.entries) > self.settings.max_entries
                or self.bytes > self.settings.max_bytes
            ):
                self._drop(next(iter(self.entries)))

    def _drop(self, key: str) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def invalidate(self, path: str | None = None, *, trees: bool = False) -> None:
        """Drop the entries that depend on ``path`` (a file or anything under a tree root),
        or with ``trees`` every directory-search entry."""
        real = os.path.realpath(path) if path else None
        with self.lock:
            self.generation += 1
            for key, entry in list(self.entries.items()):
                plan = entry.plan
                under = real is not None and any(
                    real == watched or (plan.tree and real.startswith(watched.rstrip("/") + "/"))
                    for watched in plan.watch
                )
                if under or (trees and plan.tree):
                    self._drop(key)


_CACHES: weakref.WeakKeyDictionary[Any, _Cache | None] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache(runtime: Any) -> _Cache | None:
    """The runtime's cache; None while ``[cache] tools`` names nothing."""
    if runtime is None:
        return None
    try:
        return _CACHES[runtime]
    except KeyError:
        pass
    with _CACHES_LOCK:
        if runtime not in _CACHES:
            section = runtime.config.section("cache")
            _CACHES[runtime] = _Cache(runtime, section) if section and section.tools else None
        return _CACHES[runtime]


def stats(runtime: Any) -> dict[str, int]:
    """Entries, bytes, hits and misses of a runtime's cache (zeros when it is off)."""
    cache = _cache(runtime)
    if cache is None:
        return {"entries": 0, "bytes": 0, "hits": 0, "misses": 0}
    with cache.lock:
        return {
            "entries": len(cache.entries),
            "bytes": cache.bytes,
            "hits": cache.hits,
            "misses": cache.misses,
        }


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, type[BaseModel]]:
    from hookcode_cache._config import CacheConfig

    return {"cache": CacheConfig}


@hookimpl(wrapper=True, specname="tool_execute")
def store_results(call: ToolCall, ctx: ToolContext) -> Generator[None, ToolResult, ToolResult]:
    """Plan the call (key, file signature), record the tool's permission asks while it runs,
    store what it answered."""
    cache = _cache(ctx.runtime)
    plan = cache.plan(call, ctx) if cache is not None else None
    if cache is None or plan is None:
        return (yield)
    cache.pending[call.call_id] = plan
    try:
        result = yield
    finally:
        cache.pending.pop(call.call_id, None)
    if not plan.hit:
        with cache.lock:
            cache.misses += 1
        cache.store(plan, result)
    return result


@hookimpl(tryfirst=True, specname="tool_execute")
async def serve_hits(call: ToolCall, ctx: ToolContext) -> ToolResult | None:
    """Answer from the cache: replay the tool's permission asks first."""
    cache = _cache(ctx.runtime)
    plan = cache.pending.get(call.call_id) if cache is not None else None
    if cache is None or plan is None:
        return None
    entry = cache.lookup(plan)
    if entry is None:
        return None
    plan.hit = True
    for ask in entry.asks:
        await ctx.ask(ask.permission, list(ask.patterns), list(ask.always), dict(ask.metadata))
    if not cache.valid(plan.key, entry):  # dropped while we asked: run the tool after all
        plan.hit = False
        return None
    if plan.read_path is not None:
        ctx.files.record(plan.read_path)  # as the read tool does
    with cache.lock:
        cache.hits += 1
    result = copy.deepcopy(entry.result)
    result.metadata["cached"] = True
    return result


@hookimpl
def permission_ask(request: PermissionRequest) -> None:
    """Abstain; remember what a call being planned asks, to replay it on hits."""
    cache = _cache(current_runtime())
    if cache is None:
        return None
    plan = cache.pending.get(str(request.tool.get("call_id")))
    if plan is None or plan.hit or request.id in plan.seen:
        return None
    plan.seen.add(request.id)
    plan.asks.append(
        _Ask(
            request.permission,
            list(request.patterns),
            list(request.always),
            copy.deepcopy(request.metadata),
        )
    )
    return None


@hookimpl
def event(event: Event) -> None:
    kind = event.type
    if kind not in ("file.edited", "tool.completed", "tool.failed"):
        return
    cache = _cache(current_runtime())
    if cache is None:
        return
    props = event.properties
    if kind == "file.edited":
        if props.get("file"):
            cache.invalidate(str(props["file"]))
        return
    if props.get("tool") not in READ_ONLY:
        # a tool that may have written anything (bash writes without file.edited): the
        # directory searches can no longer be trusted
        cache.invalidate(trees=True)
