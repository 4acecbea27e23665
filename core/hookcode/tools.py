"""The tool context: what a running tool knows about its call and can ask of hookcode
(:class:`ToolContext`), and the read rules it hands out (:class:`ReadRules`).

The tools themselves (``@tool``, :class:`Tool`) live in :mod:`hookcode.tooldef`, the calls,
results and abort signals in :mod:`hookcode.calls`; both are re-exported here, so
``from hookcode.tools import Tool, ToolCall`` keeps working.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hookcode.calls import AbortSignal as AbortSignal
from hookcode.calls import Attachment as Attachment
from hookcode.calls import ToolCall as ToolCall
from hookcode.calls import ToolResult as ToolResult
from hookcode.tooldef import EDIT_PERMISSION as EDIT_PERMISSION
from hookcode.tooldef import MAX_TIMEOUT_MS as MAX_TIMEOUT_MS
from hookcode.tooldef import MAX_TIMEOUT_SECONDS as MAX_TIMEOUT_SECONDS
from hookcode.tooldef import EditsFiles as EditsFiles
from hookcode.tooldef import FunctionTool as FunctionTool
from hookcode.tooldef import Tool as Tool
from hookcode.tooldef import tool as tool
from hookcode.tooldef import valid_tool_name as valid_tool_name

if TYPE_CHECKING:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from pydantic import BaseModel

    from hookcode.agents import AgentSpec
    from hookcode.calls import Outcome
    from hookcode.config import Config
    from hookcode.edits import EditTransaction
    from hookcode.events import EventBus
    from hookcode.fileio import PathLocks, PendingWrites
    from hookcode.filetime import FileTimes
    from hookcode.permission import PermissionService
    from hookcode.permission.rules import Rule, Ruleset
    from hookcode.plugin_manager import PluginsBase
    from hookcode.process import Processes
    from hookcode.protected import ProtectedPaths
    from hookcode.registry import Registry
    from hookcode.secrets import Secrets
    from hookcode.stash import Stash
    from hookcode.store import SessionRecord, Store, ToolPartRecord
    from hookcode.truncate import Truncator

T = TypeVar("T")

__all__ = [
    "EDIT_PERMISSION",
    "MAX_TIMEOUT_MS",
    "MAX_TIMEOUT_SECONDS",
    "AbortSignal",
    "Attachment",
    "EditsFiles",
    "FunctionTool",
    "Host",
    "ReadRules",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "tool",
    "valid_tool_name",
]


class Host(Protocol):
    """The runtime as tools, the pipeline and the hooks see it (``ctx.runtime``).

    :class:`hookcode.runtime.Runtime` is one, structurally: :meth:`Runtime.invoke
    <hookcode.runtime.Runtime.invoke>` passes itself where a ``Host`` is expected, so pyright
    reports any drift between the two. Naming this instead of the runtime keeps the tool side
    below the runtime that builds it. Its members are what core's tool side and the tools and
    plugins of this repository use; code that needs the rest of the runtime (``call_tool``,
    ``trust``, a :class:`~hookcode.session.SessionLoop` of its own) narrows it with
    ``isinstance(runtime, hookcode.Runtime)``."""

    @property
    def config(self) -> Config: ...
    @property
    def cwd(self) -> Path: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def env(self) -> dict[str, str]: ...
    @property
    def events(self) -> EventBus: ...
    @property
    def executor(self) -> ThreadPoolExecutor: ...
    @property
    def path_locks(self) -> PathLocks: ...
    @property
    def pending_writes(self) -> PendingWrites: ...
    @property
    def permissions(self) -> PermissionService: ...
    @property
    def plugins(self) -> PluginsBase: ...
    @property
    def processes(self) -> Processes: ...
    @property
    def project(self) -> str: ...
    @property
    def protected(self) -> ProtectedPaths: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def secrets(self) -> Secrets: ...
    @property
    def session_rules(self) -> dict[str, list[Rule]]: ...
    @property
    def stash(self) -> Stash: ...
    @property
    def store(self) -> Store: ...
    @property
    def truncator(self) -> Truncator: ...
    @property
    def trusted(self) -> bool: ...
    @property
    def worktree(self) -> Path: ...

    def agents(self) -> dict[str, AgentSpec]: ...
    def base_rules(self, agent_name: str) -> list[Rule]: ...
    def create_session(
        self,
        *,
        title: str = "",
        agent: str | None = None,
        model: str | None = None,
        parent_id: str | None = None,
    ) -> SessionRecord: ...
    def file_times(self, session_id: str) -> FileTimes: ...
    async def invoke(
        self, call: ToolCall, *, abort: AbortSignal | None = None, parent: ToolContext | None = None
    ) -> Outcome: ...
    def is_inside_project(self, path: Path) -> bool: ...
    def new_id(self, prefix: str) -> str: ...
    def on_close(self, callback: Callable[[], object]) -> None: ...
    def record_part(self, part: ToolPartRecord) -> None: ...
    def ruleset(
        self, agent: str, session_id: str | None = None, *, approvals: bool = True
    ) -> Ruleset: ...
    def timeout_for(self, tool: Tool) -> float | None: ...
    def truncate(self, result: ToolResult, tool: Tool, ctx: ToolContext) -> None: ...


class ToolContext:
    """What a running tool knows about its call and can ask of hookcode.

    :func:`hookcode.pipeline.invoke` builds it for every call: ``ctx.call`` is the
    :class:`ToolCall` (its ``session_id``, ``call_id``, ``agent``, ``message_id`` and ``model``
    read as the context's own attributes too), ``ctx.tool`` the :class:`Tool` the call
    resolved to and ``ctx.args`` its validated arguments (both None until ``invoke`` has
    resolved and validated the call: hooks from ``tool_execute_before`` on see them set),
    ``ctx.abort`` the call's abort signal and ``ctx.parent`` the context of the call that
    made this one (``ctx.invoke``), if any.

    Async tools use :meth:`ask` and :meth:`invoke`; sync tools (which run in a worker thread)
    use :meth:`ask_sync` and :meth:`invoke_sync`.
    """

    def __init__(
        self,
        runtime: Host,
        call: ToolCall,
        *,
        abort: AbortSignal | None = None,
        parent: ToolContext | None = None,
    ) -> None:
        self.runtime = runtime
        self.call = call
        self.abort = abort if abort is not None else AbortSignal()
        self.parent = parent
        #: the resolved tool (set by ``invoke``)
        self.tool: Tool | None = None
        #: the validated arguments, an instance of ``tool.args_model`` (set by ``invoke``)
        self.args: BaseModel | None = None
        self.title: str | None = None
        self.live_metadata: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- the call's fields --------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self.call.session_id

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def agent(self) -> str:
        return self.call.agent

    @property
    def message_id(self) -> str | None:
        return self.call.message_id

    @property
    def model(self) -> str | None:
        return self.call.model

    # -- where we are -------------------------------------------------------------------------
    @property
    def cwd(self) -> Path:
        """The working directory (``-C DIR`` or the process's cwd)."""
        return self.runtime.cwd

    @property
    def worktree(self) -> Path:
        """The project root: the git root of the working directory, else the directory itself."""
        return self.runtime.worktree

    @property
    def data_dir(self) -> Path:
        return self.runtime.data_dir

    @property
    def config(self) -> Any:
        """The validated config (a pydantic model; plugin sections as attributes or items)."""
        return self.runtime.config

    @property
    def files(self) -> FileTimes:
        """This session's read-time registry, shared by every file tool."""
        return self.runtime.file_times(self.session_id)

    def resolve(self, path: str | Path) -> Path:
        """An absolute path: relative paths resolve against the working directory."""
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.cwd / p
        return Path(_normpath(str(p)))

    def is_inside_project(self, path: str | Path) -> bool:
        """Whether ``path`` (symlinks resolved) is inside the working directory or worktree."""
        return self.runtime.is_inside_project(self.resolve(path))

    def relative(self, path: str | Path) -> str:
        """``path`` relative to the worktree, with ``/`` separators (titles, ``edit`` patterns)."""
        import os

        return os.path.relpath(self.resolve(path), self.worktree).replace(os.sep, "/")

    # -- changing files -----------------------------------------------------------------------
    def edit_files(self, *paths: str | Path, require_read: bool = True) -> EditTransaction:
        """A transaction that changes ``paths`` together or not at all, as the built-in file
        tools do (:mod:`hookcode.edits`)::

            async with ctx.edit_files(path) as tx:
                current = tx.read(path)
                tx.write(path, current.text.replace("a", "b"))

        On entering, the paths are locked and ``external_directory`` is asked for those outside
        the project; on leaving, ONE ``edit`` ask with the diff of every file (protected paths
        marked), then every file is written atomically (or none is), ``file.edited`` published
        and the read times recorded. ``require_read``: an existing file must have been read in
        this session, and not modified since, before it is changed (the read-before-write rule).
        A sync tool uses ``with`` instead of ``async with``."""
        from hookcode.edits import EditTransaction

        return EditTransaction(self, paths, require_read=require_read)

    # -- live updates -------------------------------------------------------------------------
    def metadata(self, title: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        """Update the running call's live title and metadata (front ends show them)."""
        if title is not None:
            self.title = title
        if metadata is not None:
            self.live_metadata.update(metadata)
        self.runtime.events.publish(
            "tool.updated",
            session_id=self.session_id,
            call_id=self.call_id,
            tool=self.call.tool,
            title=self.title,
            metadata=dict(self.live_metadata),
        )

    def publish(self, type: str, **properties: Any) -> None:
        """Publish an event on the bus (``file.edited``, ``todo.updated``, ...)."""
        properties.setdefault("session_id", self.session_id)
        self.runtime.events.publish(type, **properties)

    # -- permission ---------------------------------------------------------------------------
    async def ask(
        self,
        permission: str,
        patterns: list[str] | None = None,
        always: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Ask for permission; return when allowed, raise a PermissionRefused otherwise.

        ``patterns`` are what the rules are matched against (default ``["*"]``); ``always``
        is what an "always" reply remembers (default: the patterns).
        """
        await self.runtime.permissions.ask(
            self,
            permission=permission,
            patterns=list(patterns) if patterns is not None else ["*"],
            always=list(always) if always is not None else None,
            metadata=metadata or {},
        )

    def external_directory(self, path: str | Path, kind: str | None = None) -> str | None:
        """The ``<dir>/*`` pattern to ask ``external_directory`` for when ``path`` lies outside
        the project, else None. ``kind`` is ``"directory"`` or ``"file"`` (default: from
        stat); the directory asked about is the target itself for a directory, else its parent.
        Paths are compared after resolving symlinks."""
        from hookcode.fileio import realpath_nearest

        target = realpath_nearest(self.resolve(path))
        if self.runtime.is_inside_project(target):
            return None
        if kind is None:
            kind = "directory" if target.is_dir() else "file"
        directory = target if kind == "directory" else target.parent
        return f"{directory.as_posix().rstrip('/')}/*"

    async def ask_external_directory(self, path: str | Path, kind: str | None = None) -> None:
        """Ask ``external_directory`` if ``path`` is outside the project (reference
        permissions.md §7); return at once when it is inside."""
        pattern = self.external_directory(path, kind)
        if pattern is None:
            return
        target = self.resolve(path)
        await self.ask(
            "external_directory",
            [pattern],
            [pattern],
            {"filepath": str(target), "parentDir": pattern[:-2]},
        )

    def ask_external_directory_sync(self, path: str | Path, kind: str | None = None) -> None:
        """:meth:`ask_external_directory` for sync tools running in a worker thread."""
        if self.external_directory(path, kind) is not None:
            self._run_sync(self.ask_external_directory(path, kind))

    def read_rules(self) -> ReadRules:
        """A checker for tools that show files' names or contents (grep, glob, list, a shell
        reader, an MCP tool): ``check(path)`` is what this agent's ``read`` rules say of
        ``path`` (``"allow"``, ``"ask"`` or ``"deny"``), matched as the read tool asks: the
        absolute path and, when it differs, its real path (remembered approvals count).
        Nobody is asked: a tool drops what is denied and says what was left out. See
        :class:`ReadRules` for the fast form a directory walk uses."""
        return ReadRules(self, self.runtime.ruleset(self.agent, self.session_id))

    def protected_entry(self, path: str | Path) -> str | None:
        """The protected entry (:mod:`hookcode.protected`) that writing ``path`` would touch:
        checked as spelled and with every symlink resolved. None for an ordinary path."""
        from hookcode.fileio import realpath_nearest

        spelled = self.resolve(path)
        return self.runtime.protected.entry(spelled, realpath_nearest(spelled))

    async def run_blocking(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (say, a front end waiting for a person) in the runtime's worker pool;
        its result, or ToolAborted as soon as this call's abort signal fires."""
        import asyncio

        from hookcode.errors import ToolAborted

        future = asyncio.get_running_loop().run_in_executor(self.runtime.executor, fn)
        abort = asyncio.ensure_future(self.abort.wait())
        try:
            done, _ = await asyncio.wait({future, abort}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abort.cancel()
        if future not in done:
            raise ToolAborted()
        return future.result()

    def ask_sync(
        self,
        permission: str,
        patterns: list[str] | None = None,
        always: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """:meth:`ask` for sync tools running in a worker thread."""
        self._run_sync(self.ask(permission, patterns, always, metadata))

    # -- calling other tools ------------------------------------------------------------------
    async def invoke(self, tool: str, args: dict[str, Any] | str | None = None) -> ToolResult:
        """Call another tool through the whole pipeline (hooks, permissions, truncation).

        Returns its result; raises the :class:`~hookcode.errors.ToolError` it failed with.
        """
        outcome = await self.invoke_outcome(tool, args)
        if outcome.error is not None:
            raise outcome.error
        assert outcome.result is not None
        return outcome.result

    async def invoke_outcome(self, tool: str, args: dict[str, Any] | str | None = None) -> Outcome:
        """:meth:`invoke`, returning the :class:`~hookcode.pipeline.Outcome` (result or error)
        instead of raising: the call runs as this call's agent and model, with its own call id,
        this call as its parent, and an abort signal that follows this call's."""
        call = ToolCall(
            tool=tool,
            args=args if args is not None else {},
            call_id=self.runtime.new_id("call"),
            session_id=self.session_id,
            agent=self.agent,
            message_id=self.message_id,
            model=self.model,
        )
        return await self.runtime.invoke(call, parent=self)

    def invoke_sync(self, tool: str, args: dict[str, Any] | str | None = None) -> ToolResult:
        """:meth:`invoke` for sync tools running in a worker thread."""
        return self._run_sync(self.invoke(tool, args))

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (a sync tool's body) in the runtime's worker pool, where it may call
        :meth:`ask_sync` and :meth:`invoke_sync` back on this loop."""
        import asyncio

        loop = self._loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.runtime.executor, fn)

    def _run_sync(self, coro: Any) -> Any:
        import asyncio

        loop = self._loop
        if loop is None or not loop.is_running():
            raise RuntimeError("ask_sync/invoke_sync need a running hookcode event loop")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError("ask_sync/invoke_sync called from the event loop; use await ctx.ask")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


def _normpath(path: str) -> str:
    import os.path

    return os.path.normpath(path)


class ReadRules:
    """What the ``read`` rules of one agent in one session say of paths (``ctx.read_rules()``).

    ``rules(path)`` judges one path: the absolute path as spelled and its real path (symlinks
    followed), deny if either is denied, else ask if either asks, else allow. A directory
    walk that knows both already (rg never descends into a symlink, so below a root whose
    real path is known every path's real path is that root's plus the rest) passes them:
    ``rules.judge(spelled, real)``, with no file-system call. ``allows_everything`` is true
    when one ``read`` rule for ``*`` decides every path as allow: a walk need not look."""

    __slots__ = ("_decide", "_resolve", "allows_everything")

    def __init__(self, ctx: ToolContext, ruleset: Any) -> None:
        self._resolve = ctx.resolve
        self._decide = ruleset.decider("read")
        self.allows_everything = _last_rule(ruleset, "read") == ("*", "allow")

    def __call__(self, path: str | Path) -> str:
        import os

        absolute = str(self._resolve(path))
        return self.judge(absolute, os.path.realpath(absolute))

    def judge(self, absolute: str, real: str) -> str:
        """The action for a path known as ``absolute`` (spelled) and ``real`` (resolved)."""
        action = self._decide(absolute)
        if action == "deny" or real == absolute:
            return action
        other = self._decide(real)
        if other == "deny" or (other == "ask" and action == "allow"):
            return other
        return action

    def under(self, root: str | Path) -> Callable[[str], str]:
        """The action for paths relative to the directory ``root`` (``/``-separated), as a
        walk that never descends into a symlink lists them: the root's real path is taken
        once, so judging a path costs no file-system call."""
        import os

        spelled = os.path.join(str(self._resolve(root)), "")
        real = os.path.join(os.path.realpath(spelled), "")
        judge = self.judge
        return lambda relative: judge(spelled + relative, real + relative)

    def visible_under(self, root: str | Path) -> Callable[[str], bool] | None:
        """For a walk of ``root`` that shows names (glob, list): a filter keeping the paths
        the read rules do not deny (names of ``ask`` paths may be shown: only contents need
        the read permission), or None when the rules allow everything."""
        if self.allows_everything:
            return None
        action = self.under(root)
        return lambda relative: action(relative) != "deny"


def _last_rule(ruleset: Any, permission: str) -> tuple[str, str] | None:
    """(pattern, action) of the last rule of ``permission``, None when there is none."""
    from hookcode.permission.rules import wildcard_match

    for rule in reversed(ruleset.rules):
        if wildcard_match(rule.permission, permission):
            return rule.pattern, rule.action
    return None
