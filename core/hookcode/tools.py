"""Tools: the ``@tool`` decorator, the :class:`Tool` base class, results and calls.

A tool is a typed function (sync or async)::

    from typing import Annotated
    from hookcode import ToolContext, tool

    @tool(aliases={"file_path": "filePath"})
    def count_lines(ctx: ToolContext, file_path: Annotated[str, "File to count"]) -> str:
        "Count the lines of a file."
        return str(sum(1 for _ in open(ctx.resolve(file_path))))

or a subclass of :class:`Tool` with a ``run`` method (for tools with state). Either way the
argument model (pydantic) and the JSON schema are built from the signature the first time they
are needed, never at import: decorating a function costs next to nothing, so plugin modules
stay cheap to import.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from hookcode.errors import InvalidArguments

if TYPE_CHECKING:
    import asyncio

    from pydantic import BaseModel, ValidationError

    from hookcode.edits import EditTransaction
    from hookcode.filetime import FileTimes
    from hookcode.pipeline import Outcome
    from hookcode.runtime import Runtime

T = TypeVar("T")

#: the longest timeout a tool argument or a setting takes: 2**31 - 1 ms, about 24.8 days
#: (longer ones overflow the waits they end up in); larger values are refused, named
MAX_TIMEOUT_MS = 2**31 - 1
MAX_TIMEOUT_SECONDS = MAX_TIMEOUT_MS // 1000

#: the permission of every tool that edits files (``Tool.edits_files``), unless it names its own
EDIT_PERMISSION = "edit"

#: what ``Tool.edits_files`` declares: False, True (replacements or whole contents) or
#: ``"patch"`` (the tool takes patches)
EditsFiles = bool | Literal["patch"]

__all__ = [
    "EDIT_PERMISSION",
    "MAX_TIMEOUT_MS",
    "MAX_TIMEOUT_SECONDS",
    "AbortSignal",
    "Attachment",
    "EditsFiles",
    "FunctionTool",
    "ReadRules",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "tool",
    "valid_tool_name",
]


@dataclass
class Attachment:
    """A file attached to a result (image, PDF): ``url`` is usually a base64 data URL."""

    mime: str
    url: str
    filename: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mime": self.mime, "url": self.url, "filename": self.filename}


@dataclass
class ToolResult:
    """What a tool call produced: ``output`` is what the model reads."""

    output: str = ""
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "output": self.output,
            "metadata": self.metadata,
            "attachments": [a.to_dict() for a in self.attachments],
        }


@dataclass
class ToolCall:
    """One call of a tool, as hooks see it.

    ``args`` is the raw input until the pipeline has validated it; from then on (every hook
    sees it after validation) it is a JSON-compatible dict keyed by the model-facing names,
    defaults applied. Hooks may mutate it or assign a new dict; core re-validates it after
    the ``tool_execute_before`` hooks.
    """

    tool: str
    args: Any
    call_id: str
    session_id: str
    agent: str = "build"
    message_id: str | None = None
    model: str | None = None
    parent_call_id: str | None = None


class AbortSignal:
    """A thread-safe abort flag that async code can await and sync code can poll."""

    def __init__(self, parent: AbortSignal | None = None) -> None:
        self._set = False  # written under the lock; read without it (a bool read is atomic)
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.reason: str | None = None
        if parent is not None:
            parent.add_callback(lambda: self.abort(parent.reason))

    def is_set(self) -> bool:
        return self._set

    @property
    def aborted(self) -> bool:
        return self._set

    def abort(self, reason: str | None = None) -> None:
        with self._lock:
            if self._set:
                return
            self.reason = reason
            self._set = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from whichever thread aborts) once the signal fires."""
        with self._lock:
            if not self._set:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        """Forget a callback that is no longer wanted (the signal has not fired; a session's
        signal outlives many calls)."""
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    async def wait(self) -> None:
        """Return once the signal fires."""
        import asyncio

        if self._set:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(None))

        self.add_callback(wake)
        await future


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
        runtime: Runtime,
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
        from hookcode.pipeline import invoke

        call = ToolCall(
            tool=tool,
            args=args if args is not None else {},
            call_id=self.runtime.new_id("call"),
            session_id=self.session_id,
            agent=self.agent,
            message_id=self.message_id,
            model=self.model,
        )
        return await invoke(self.runtime, call, parent=self)

    def invoke_sync(self, tool: str, args: dict[str, Any] | str | None = None) -> ToolResult:
        """:meth:`invoke` for sync tools running in a worker thread."""
        return self._run_sync(self.invoke(tool, args))

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


# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def valid_tool_name(name: str) -> bool:
    """Whether ``name`` may name a tool: letters, digits, ``_`` and ``-``, 1 to 64 characters
    (what every provider accepts). The registry skips a tool whose name is not valid."""
    return _NAME_RE.match(name) is not None


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
    from hookcode.permission import wildcard_match

    for rule in reversed(ruleset.rules):
        if wildcard_match(rule.permission, permission):
            return rule.pattern, rule.action
    return None


class Tool:
    """Base class of every tool.

    Subclasses set ``name`` and ``description`` (default: the class docstring) and define
    ``run(self, ctx, **typed_arguments)`` (sync or async), or set ``Args`` to a pydantic model
    and define ``run(self, args, ctx)``. ``run`` returns a ``str`` (the output) or a
    :class:`ToolResult`.

    Attributes:
        name: model-facing name (``[a-zA-Z0-9_-]``, at most 64 characters).
        description: what the model reads about the tool.
        permission: permission name used for the pipeline's pre-check and for hiding the
            tool; default: the tool's name.
        asks_permission: the tool asks for permission itself (``ctx.ask``), so the pipeline
            does not pre-check it.
        timeout: seconds; None means no limit.
        aliases: python parameter name -> model-facing name.
        never_replaces: the tool never replaces (shadows) another tool of the same name:
            when the name is taken, before or after, this one is skipped and reported
            (MCP tools).
        edits_files: the tool creates, changes or deletes files: ``True`` for a tool that
            takes exact replacements or whole contents (edit, write, multiedit), ``"patch"``
            for one that takes patches (apply_patch). Its permission defaults to ``edit``
            (the family every editing tool shares: ``edit = "deny"`` hides them all), a
            legacy ``[tools]`` switch naming it (or ``patch``, for the patch kind) governs
            ``edit``, and the model rule offers a model one kind or the other
            (``edit_tools`` in the config; the ``model_tools`` hook).
        prunable: whether pruning may clear the tool's old outputs from the history sent to
            the model (:mod:`hookcode.compaction`); False keeps them (skill: the instructions
            it loaded stay in force).
        truncation_hint: a line of advice for the model after a tool output was cut (where
            the full output is saved): while this tool is offered to the agent, its line
            replaces the default advice (use Grep, or Read with offset/limit). The task tool
            uses it to suggest searching the saved file with a sub-agent.
    """

    name: str = ""
    description: str = ""
    permission: str | None = None
    asks_permission: bool = False
    timeout: float | None = None
    aliases: dict[str, str] = {}  # noqa: RUF012 - never mutated; instances assign their own
    Args: ClassVar[type[BaseModel] | None] = None
    never_replaces: bool = False
    edits_files: EditsFiles = False
    prunable: bool = True
    truncation_hint: str | None = None

    #: the plugin that registered this tool (set by the registry)
    plugin: str | None = None
    distribution: str | None = None

    def __init__(self) -> None:
        self._model: type[BaseModel] | None = None
        self._schema: dict[str, Any] | None = None
        self._ctx_param: str | None = None
        self._fields: dict[str, str] = {}  # python name -> model-facing name
        self._init_description()

    def _init_description(self) -> None:
        if not self.description and type(self).__doc__ and type(self) is not Tool:
            self.description = inspect.cleandoc(type(self).__doc__ or "")

    # -- what the tool does -------------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError(f"tool {self.name!r} defines no run() method")

    def _callable(self) -> Callable[..., Any]:
        return self.run

    # -- argument model -----------------------------------------------------------------------
    @property
    def permission_name(self) -> str:
        """The permission checked and used for hiding: ``permission``, else ``edit`` for a
        tool that edits files, else the tool's name."""
        if self.permission:
            return self.permission
        return EDIT_PERMISSION if self.edits_files else self.name

    @property
    def args_model(self) -> type[BaseModel]:
        """The pydantic model of the arguments, built on first use."""
        if self._model is None:
            self._model = self._build_model()
        return self._model

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (model-facing names), built on first use."""
        if self._schema is None:
            self._schema = _clean_schema(self.args_model.model_json_schema(by_alias=True))
        return self._schema

    def definition(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}`` as the model will see it."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def _build_model(self) -> type[BaseModel]:
        from pydantic import ConfigDict, Field, create_model

        if self.Args is not None:
            self._ctx_param = None
            return self.Args
        fn = self._callable()
        sig = inspect.signature(fn)
        hints = _type_hints(fn)
        doc_params = _docstring_params(inspect.getdoc(fn) or "")
        fields: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = hints.get(pname, param.annotation)
            if _is_context(annotation):
                self._ctx_param = pname
                continue
            if annotation is inspect.Parameter.empty:
                annotation = Any
            annotation, description = _split_annotated(annotation)
            description = description or doc_params.get(pname)
            alias = self.aliases.get(pname, pname)
            self._fields[pname] = alias
            default = ... if param.default is inspect.Parameter.empty else param.default
            kwargs: dict[str, Any] = {"alias": alias}
            if description:
                kwargs["description"] = description
            fields[pname] = (annotation, Field(default, **kwargs))
        model_name = "".join(p.capitalize() for p in re.split(r"[_\-]", self.name)) + "Args"
        return create_model(  # type: ignore[call-overload]
            model_name or "Args",
            __config__=ConfigDict(
                extra="forbid",
                validate_by_alias=True,
                validate_by_name=False,
                serialize_by_alias=True,
                arbitrary_types_allowed=True,
            ),
            **fields,
        )

    def validate(self, args: Any) -> BaseModel:
        """Validate raw arguments (dict or JSON string); raise InvalidArguments naming each
        bad field."""
        model = self.args_model
        if type(args) is not dict:
            args = self.parse_arguments(args)
        try:
            return model.model_validate(args)
        except Exception as exc:
            from pydantic import ValidationError

            if isinstance(exc, ValidationError):
                raise InvalidArguments(self.format_validation_error(exc)) from None
            raise

    def parse_arguments(self, args: Any) -> dict[str, Any]:
        """Raw arguments as a dict: a JSON string is decoded, None is ``{}``; anything that is
        not an object raises InvalidArguments with the model-visible message."""
        if isinstance(args, str):
            import json

            text = args.strip() or "{}"
            try:
                args = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidArguments(
                    f"The {self.name} tool was called with invalid arguments: the arguments are "
                    f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}).\n"
                    "Please rewrite the input so it satisfies the expected schema."
                ) from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArguments(
                f"The {self.name} tool was called with invalid arguments: expected a JSON object, "
                f"got {type(args).__name__}.\n"
                "Please rewrite the input so it satisfies the expected schema."
            )
        return args

    def format_validation_error(self, error: ValidationError) -> str:
        """The model-visible text for a validation failure (override to format your own)."""
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {_error_message(e)}"
            for e in error.errors()
        )
        return (
            f"The {self.name} tool was called with invalid arguments: {problems}.\n"
            "Please rewrite the input so it satisfies the expected schema."
        )

    def dump(self, validated: BaseModel) -> dict[str, Any]:
        """The JSON-compatible, model-facing dict of validated arguments."""
        return validated.model_dump(mode="json", by_alias=True)

    # -- running ------------------------------------------------------------------------------
    async def execute(self, validated: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run the tool with validated arguments; sync tools run in the runtime's thread pool."""
        import asyncio

        _ = self.args_model  # make sure _fields/_ctx_param are known
        fn = self._callable()
        if self.Args is not None:
            call_args: tuple[Any, ...] = (validated, ctx)
            call_kwargs: dict[str, Any] = {}
        else:
            call_args = ()
            call_kwargs = {pname: getattr(validated, pname) for pname in self._fields}
            if self._ctx_param:
                call_kwargs[self._ctx_param] = ctx
        if inspect.iscoroutinefunction(fn):
            value = await fn(*call_args, **call_kwargs)
        else:
            loop = asyncio.get_running_loop()
            ctx._loop = loop
            value = await loop.run_in_executor(
                ctx.runtime.executor, lambda: fn(*call_args, **call_kwargs)
            )
            if inspect.isawaitable(value):
                value = await value
        return self._to_result(value)

    def _to_result(self, value: Any) -> ToolResult:
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            return ToolResult(output=value)
        if value is None:
            return ToolResult(output="")
        raise TypeError(
            f"tool {self.name!r} returned {type(value).__name__}; return a str or a ToolResult"
        )

    def __str__(self) -> str:
        """The tool's name (``f"{ctx.tool}"`` reads as the name, as ``ctx.call.tool`` does)."""
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A tool made by the :func:`tool` decorator from a function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        permission: str | None = None,
        asks_permission: bool = False,
        timeout: float | None = None,
        aliases: dict[str, str] | None = None,
        edits_files: EditsFiles = False,
        prunable: bool = True,
        truncation_hint: str | None = None,
    ) -> None:
        self.fn = fn
        self._description: str | None = description
        super().__init__()
        self.name = name or fn.__name__
        if not _NAME_RE.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} is invalid: use letters, digits, '_' and '-' "
                "(at most 64 characters)"
            )
        self.permission = permission
        self.asks_permission = asks_permission
        self.timeout = timeout
        self.aliases = dict(aliases or {})
        self.edits_files = edits_files
        self.prunable = prunable
        self.truncation_hint = truncation_hint
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def _init_description(self) -> None:
        if self._description is None:
            self._description = _strip_args_section(inspect.getdoc(self.fn) or "")
        self.description = self._description

    def _callable(self) -> Callable[..., Any]:
        return self.fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the decorated object calls the plain function (handy in tests)."""
        return self.fn(*args, **kwargs)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    permission: str | None = None,
    asks_permission: bool = False,
    timeout: float | None = None,
    aliases: dict[str, str] | None = None,
    edits_files: EditsFiles = False,
    prunable: bool = True,
    truncation_hint: str | None = None,
) -> Any:
    """Turn a typed function (sync or async) into a :class:`Tool`.

    Usable bare (``@tool``) or with options (``@tool(name="x", aliases={"file_path":
    "filePath"})``). The description is the docstring (without its ``Args:`` section);
    parameter descriptions come from ``Annotated[type, "text"]`` or the docstring's ``Args:``
    section. A parameter annotated :class:`ToolContext` receives the context and is not part
    of the schema. Unknown argument names are rejected.

    Args:
        name: tool name (default: the function's name).
        description: overrides the docstring.
        permission: permission name checked before the call and used for hiding
            (default: the tool's name).
        asks_permission: the tool calls ``ctx.ask`` itself; the pipeline does not pre-check.
        timeout: seconds before the call fails with a timeout.
        aliases: python parameter name -> model-facing name (e.g. camelCase).
        edits_files: the tool edits files (``True``, or ``"patch"`` when it takes patches):
            the ``edit`` permission family and the model rule apply (:class:`Tool`).
        prunable: False keeps the tool's old outputs from being pruned from the history.
        truncation_hint: the advice line after a cut output while this tool is offered.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            permission=permission,
            asks_permission=asks_permission,
            timeout=timeout,
            aliases=aliases,
            edits_files=edits_files,
            prunable=prunable,
            truncation_hint=truncation_hint,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


# ---------------------------------------------------------------------------------------------
# helpers for building models
# ---------------------------------------------------------------------------------------------


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        # A forward reference we cannot resolve: fall back to the raw annotations, resolving
        # the ToolContext name ourselves.
        return dict(getattr(fn, "__annotations__", {}))


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if isinstance(annotation, str):
        return annotation.split(".")[-1].strip("'\"") == "ToolContext"
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    """``Annotated[T, "text", ...]`` -> (Annotated[T, ...rest], "text")."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        texts = [e for e in extras if isinstance(e, str)]
        others = [e for e in extras if not isinstance(e, str)]
        description = texts[0] if texts else None
        if others:
            return typing.Annotated[tuple([base, *others])], description  # type: ignore[misc]
        return base, description
    return annotation, None


def _docstring_params(doc: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    match = _ARGS_SECTION.search(doc)
    if not match:
        return {}
    params: dict[str, str] = {}
    current: str | None = None
    base_indent: int | None = None
    for line in doc[match.end() :].splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if base_indent is None:
            base_indent = indent
        if indent < base_indent or (indent == 0 and line.rstrip().endswith(":")):
            break
        entry = re.match(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
        if indent == base_indent and entry:
            name: str = entry.group(1)
            current = name
            params[name] = entry.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
    return params


def _strip_args_section(doc: str) -> str:
    match = _ARGS_SECTION.search(doc)
    if not match:
        return doc.strip()
    rest = doc[match.end() :].splitlines()
    tail: list[str] = []
    for i, line in enumerate(rest):
        if line and not line[0].isspace() and line.strip():
            tail = rest[i:]
            break
    return (doc[: match.start()].rstrip() + ("\n\n" + "\n".join(tail) if tail else "")).strip()


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's auto-generated titles: models do not need them."""

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "title" and not in_properties and isinstance(value, str):
                    continue
                out[key] = walk(value, in_properties=(key == "properties" and not in_properties))
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned = walk(schema)
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned


def _error_message(error: Any) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown argument (not in the tool's schema)"
    if error.get("type") == "missing":
        return "required argument is missing"
    return str(error.get("msg", "invalid value"))
