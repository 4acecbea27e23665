"""An MCP server's tool as a hookcode :class:`~hookcode.Tool`.

Arguments are checked against the server's JSON schema with ``jsonschema`` (already a
dependency of the ``mcp`` SDK, which uses it for output schemas): pydantic validates models,
not arbitrary JSON Schema, and translating every schema into a model would lose keywords.
The pipeline still sees a pydantic object (a permissive model holding the validated dict),
so ``validate`` / ``dump`` / ``execute`` keep the base class's contract.

Paths core can see: a top-level argument whose name says it holds a path (``path``, ``paths``,
``filePath``, ``file_path``, ``source``, ``destination``, ``directory``, ``root``, ``repo_path``,
...: its last word is one of :data:`PATH_WORDS`), a string or a list of strings, is resolved
against the working directory (the server's) and:

* checked against the ``read`` rules, as every reader is: a denied path refuses the call,
  naming it; a path whose reading asks is asked for (``read``) before the call;
* for a tool that writes (:func:`writes`: its annotations say it is not read-only, or they say
  nothing and its name has a word such as ``write``, ``edit``, ``move``, ``create``), added to
  the tool's own ask as ``edit``-style patterns (worktree-relative, as spelled and resolved),
  and a protected one (``hookcode.toml``, ``.git/**``, ...) marks the ask
  ``metadata["protected"]``: only a person or a rule naming the path allows it.

A server sees paths its own way (its roots, its own symlink handling); these checks are what
core can do with what it sees in the arguments.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hookcode.errors import InvalidArguments, ToolError
from hookcode.tools import Tool, ToolResult

if TYPE_CHECKING:
    from hookcode.tools import ToolContext
    from pydantic import BaseModel

    from hookcode_mcp._config import McpServerConfig

__all__ = [
    "McpTool",
    "ToolServer",
    "path_arguments",
    "sanitize",
    "tool_schema",
    "unsupported",
    "writes",
]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
#: the words of a name: runs of lower-case letters and digits, split at ``_``, ``-``, ``.``,
#: spaces and camelCase humps (``filePath`` -> file, path; ``repo_path`` -> repo, path)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: an argument whose name ends with one of these words holds a path (or a list of them)
PATH_WORDS = frozenset(
    {
        "path", "paths", "file", "files", "filename", "filenames", "dir", "dirs", "directory",
        "directories", "folder", "folders", "root", "roots", "source", "destination", "dest",
        "cwd", "workdir",
    }
)  # fmt: skip
#: a tool whose name has one of these words writes the paths it is given
WRITE_WORDS = frozenset(
    {
        "write", "edit", "move", "mv", "rename", "create", "delete", "remove", "rm", "unlink",
        "mkdir", "rmdir", "copy", "cp", "append", "save", "put", "patch", "replace", "update",
        "insert", "touch", "chmod", "upload", "overwrite", "modify", "set",
    }
)  # fmt: skip


def sanitize(name: str) -> str:
    """Every character outside ``[a-zA-Z0-9_-]`` becomes ``_``."""
    return _UNSAFE.sub("_", name)


def tool_schema(input_schema: Any) -> dict[str, Any]:
    """The server's input schema forced to ``type: object`` with ``additionalProperties:
    false`` (reference agent-loop.md §11)."""
    schema = copy.deepcopy(input_schema) if isinstance(input_schema, dict) else {}
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


class ToolServer(Protocol):
    """What a tool needs of its server (``hookcode_mcp._server.Server`` is one)."""

    name: str
    config: McpServerConfig

    def before_call(self) -> None:
        """Called on the runtime's thread before each call, ahead of the permission ask."""

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """``tools/call``; raises :class:`ToolError` naming the server when it fails."""


class McpTool(Tool):
    """One tool of one MCP server, named ``<server>_<tool>``."""

    asks_permission = True
    never_replaces = True

    def __init__(self, server: ToolServer, remote: Any) -> None:
        super().__init__()
        self.server = server
        self.remote_name: str = remote.name
        self.name = f"{sanitize(server.name)}_{sanitize(remote.name)}"
        self.description = remote.description or remote.title or ""
        self.input_schema = tool_schema(remote.input_schema)
        self.annotations = remote.annotations
        self.writes = writes(remote.name, remote.annotations)
        #: why the tool is not offered to the model (None: it is)
        self.unsupported: str | None = unsupported(remote)
        self._validator: Any = None

    # -- schema -------------------------------------------------------------------------------
    @property
    def parameters(self) -> dict[str, Any]:
        return self.input_schema

    @property
    def args_model(self) -> type[BaseModel]:
        """A permissive model: it only carries the dict that jsonschema validated."""
        if self._model is None:
            from pydantic import ConfigDict, create_model

            self._model = create_model(  # type: ignore[call-overload]
                "McpArgs", __config__=ConfigDict(extra="allow")
            )
        assert self._model is not None
        return self._model

    def _get_validator(self) -> Any:
        if self._validator is None:
            import jsonschema
            import jsonschema.validators

            cls = jsonschema.validators.validator_for(self.input_schema)
            try:
                cls.check_schema(self.input_schema)
                self._validator = cls(self.input_schema)
            except jsonschema.SchemaError:
                # a server with a broken schema: check only that the arguments are an object
                self._validator = jsonschema.Draft202012Validator({"type": "object"})
        return self._validator

    def validate(self, args: Any) -> BaseModel:
        args = self.parse_arguments(args)
        args = copy.deepcopy(args)
        # defaults applied, as for every tool (top-level properties)
        for key, spec in self.input_schema.get("properties", {}).items():
            if key not in args and isinstance(spec, dict) and "default" in spec:
                args[key] = copy.deepcopy(spec["default"])
        errors = sorted(self._get_validator().iter_errors(args), key=lambda e: list(e.path))
        if errors:
            problems = "; ".join(_describe(e) for e in errors)
            raise InvalidArguments(
                f"The {self.name} tool was called with invalid arguments: {problems}.\n"
                "Please rewrite the input so it satisfies the expected schema."
            )
        return self.args_model.model_validate(args)

    def dump(self, validated: BaseModel) -> dict[str, Any]:
        return dict(validated.model_extra or {})

    # -- running ------------------------------------------------------------------------------
    async def execute(self, validated: BaseModel, ctx: ToolContext) -> ToolResult:
        args = self.dump(validated)
        self.server.before_call()
        patterns, always = ["*"], ["*"]
        metadata: dict[str, Any] = {
            "server": self.server.name,
            "tool": self.remote_name,
            "arguments": args,
        }
        paths = path_arguments(ctx, args)
        if paths:
            await self._check_reads(ctx, paths)
            if self.writes:
                from hookcode.writes import edit_request

                request = edit_request(ctx, [path for _, path in paths])
                patterns = ["*", *request.patterns]
                if request.protected:
                    metadata["protected"] = request.protected
                    always = list(request.patterns)  # the exact paths, never `*`
        await ctx.ask(self.name, patterns, always, metadata)
        result = await self.server.call(self.remote_name, args)
        from hookcode_mcp._content import flatten

        flat = flatten(result)
        if getattr(result, "is_error", False):
            raise ToolError(flat.output or f"MCP tool {self.remote_name!r} reported an error")
        config = self.server.config
        if config.max_lines or config.max_bytes:
            _truncate(flat, self, ctx, config.max_lines, config.max_bytes)
        return flat

    async def _check_reads(self, ctx: ToolContext, paths: list[tuple[str, Path]]) -> None:
        """The read rules on every path argument: a deny refuses the call naming the path;
        paths whose reading asks are asked for (``read``, as the read tool asks)."""
        import os

        from hookcode.errors import PermissionDenied

        rules = ctx.read_rules()
        asked: list[str] = []
        for name, path in paths:
            action = rules(path)
            if action == "deny":
                raise PermissionDenied(
                    f"The read rules deny {path} (argument {name!r} of {self.name}): "
                    "the call was not made."
                )
            if action == "ask":
                for form in (str(path), os.path.realpath(path)):
                    if form not in asked:
                        asked.append(form)
        if asked:
            await ctx.ask(
                "read",
                asked,
                ["*"],
                {"filepath": asked[0], "tool": self.name, "server": self.server.name},
            )


def unsupported(remote: Any) -> str | None:
    """Why a server's tool cannot be called, else None: one whose ``execution.taskSupport``
    is ``required`` answers a plain ``tools/call`` with an error, and the ``mcp`` SDK (2.3)
    defines the task types only (no ``tasks/get`` / ``tasks/result`` client), so it is not
    offered to the model."""
    execution = getattr(remote, "execution", None)
    if getattr(execution, "task_support", None) == "required":
        return "needs MCP tasks (execution.taskSupport = required), which hookcode does not support"
    return None


def writes(name: str, annotations: Any = None) -> bool:
    """Whether a tool writes the paths it is given: not marked read-only (``readOnlyHint``),
    and its name has a word of :data:`WRITE_WORDS` or its annotations say it is not
    read-only."""
    read_only = getattr(annotations, "read_only_hint", None) if annotations is not None else None
    if read_only is True:
        return False
    if read_only is False:
        return True
    return any(word.lower() in WRITE_WORDS for word in _WORDS.findall(name))


def path_arguments(ctx: ToolContext, args: dict[str, Any]) -> list[tuple[str, Path]]:
    """``(argument name, absolute path)`` for every top-level argument that names a path
    (its name's last word is in :data:`PATH_WORDS`; a string, a ``file://`` URI or a list
    of them), resolved against the working directory."""
    found: list[tuple[str, Path]] = []
    for name, value in args.items():
        words = _WORDS.findall(name)
        if not words or words[-1].lower() not in PATH_WORDS:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, str) or not item:
                continue
            if "\0" in item:  # no file has that name: refuse rather than guess what is meant
                from hookcode.errors import ToolError

                raise ToolError(f"argument {name!r} holds a NUL character: not a path")
            if item.startswith("file://"):
                from urllib.parse import unquote, urlsplit

                item = unquote(urlsplit(item).path)
            found.append((name, ctx.resolve(item)))
    return found


def _describe(error: Any) -> str:
    where = ".".join(str(p) for p in error.path) or "(arguments)"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        names = ", ".join(extra)
        return f"{names}: unknown argument (not in the tool's schema)"
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        return "; ".join(f"{name}: required argument is missing" for name in missing)
    return f"{where}: {error.message}"


def _truncate(
    result: ToolResult, tool: Tool, ctx: ToolContext, max_lines: int | None, max_bytes: int | None
) -> None:
    """The server's own budget (``[mcp.NAME] max_lines / max_bytes``); a
    ``[truncation.tools.<tool>]`` entry still wins."""
    runtime = ctx.runtime
    limits = runtime.config.core.truncation
    lines, nbytes = max_lines or limits.max_lines, max_bytes or limits.max_bytes
    own = limits.tools.get(tool.name)
    if own is not None:
        lines, nbytes = own.max_lines or lines, own.max_bytes or nbytes
    cut = runtime.truncator.truncate(
        result.output,
        max_lines=lines,
        max_bytes=nbytes,
        advice=lambda: runtime.registry.truncation_hint(ctx.agent, ctx.session_id),
    )
    result.metadata["truncated"] = cut.truncated
    if cut.truncated:
        result.output = cut.content
        result.metadata["outputPath"] = str(cut.output_path)
