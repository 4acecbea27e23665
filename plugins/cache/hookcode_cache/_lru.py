"""The cache itself: one runtime's LRU of tool results and the calls in flight.

Imported by the plugin (``_cache`` there) when a runtime's ``[cache] tools`` names a tool, so
that loading the plugin at start-up defines no dataclass and imports neither ``json`` nor
``copy``.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hookcode_cache import DEFAULT_TTL, FALLBACK_TTL, READ_ONLY, TREE_TOOLS, WRITE_PERMISSIONS

if TYPE_CHECKING:
    from hookcode import ToolCall, ToolContext, ToolResult
    from hookcode.permission import PermissionRequest


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
        permission = ctx.tool.permission_name if ctx.tool is not None else call.tool
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

    # -- hooks' work ---------------------------------------------------------------------------
    def record_ask(self, plan: _Plan, request: PermissionRequest) -> None:
        """Remember a permission request of a call being planned, to replay it on hits."""
        plan.seen.add(request.id)
        plan.asks.append(
            _Ask(
                request.permission,
                list(request.patterns),
                list(request.always),
                copy.deepcopy(request.metadata),
            )
        )

    @staticmethod
    def hit_result(entry: _Entry) -> ToolResult:
        """A copy of a stored result, marked as a cache hit."""
        result = copy.deepcopy(entry.result)
        result.metadata["cached"] = True
        return result
