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

import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from hookcode import hookimpl
from hookcode.stash import StashKey

if TYPE_CHECKING:
    from hookcode import Runtime, ToolCall, ToolContext, ToolResult
    from hookcode.events import Event
    from hookcode.permission import PermissionRequest
    from pydantic import BaseModel

    from hookcode_cache._lru import _Cache

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


#: the runtime's cache (None while ``[cache] tools`` names nothing)
_CACHE = StashKey["_Cache | None"]()
_CACHES_LOCK = threading.Lock()


def _cache(runtime: Any) -> _Cache | None:
    """The runtime's cache; None while ``[cache] tools`` names nothing."""
    if runtime is None:
        return None
    stash = runtime.stash
    if _CACHE in stash:
        return stash[_CACHE]
    with _CACHES_LOCK:
        if _CACHE not in stash:
            section = runtime.config.section("cache")
            if section and section.tools:
                # the cache's classes are imported only where it is on
                from hookcode_cache._lru import _Cache

                stash[_CACHE] = _Cache(runtime, section)
            else:
                stash[_CACHE] = None
        return stash[_CACHE]


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
    return cache.hit_result(entry)


@hookimpl
def permission_ask(request: PermissionRequest, runtime: Runtime) -> None:
    """Abstain; remember what a call being planned asks, to replay it on hits."""
    cache = _cache(runtime)
    if cache is None:
        return None
    plan = cache.pending.get(str(request.tool.get("call_id")))
    if plan is None or plan.hit or request.id in plan.seen:
        return None
    cache.record_ask(plan, request)
    return None


@hookimpl
def event(event: Event, runtime: Runtime) -> None:
    kind = event.type
    if kind not in ("file.edited", "tool.completed", "tool.failed"):
        return
    cache = _cache(runtime)
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
