"""Tools: the ``@tool`` decorator and the :class:`Tool` base class.

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

This module sits below :mod:`hookcode.tools` (the tool context, whose runtime's registry holds
tools): a tool's ``execute`` takes the context as ``Any`` (an override may name
:class:`hookcode.tools.ToolContext`), and ``@tool`` knows a context parameter by its class's
name. Everything here is re-exported by :mod:`hookcode.tools`.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from hookcode.calls import ToolResult
from hookcode.errors import InvalidArguments

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

#: the longest timeout a tool argument or a setting takes: 2**31 - 1 ms, about 24.8 days
#: (longer ones overflow the waits they end up in); larger values are refused, named
MAX_TIMEOUT_MS = 2**31 - 1
MAX_TIMEOUT_SECONDS = MAX_TIMEOUT_MS // 1000

#: the sentence that ends what the model reads about arguments that did not validate
REWRITE_HINT = "Please rewrite the input so it satisfies the expected schema."

#: the permission of every tool that edits files (``Tool.edits_files``), unless it names its own
EDIT_PERMISSION = "edit"

#: what ``Tool.edits_files`` declares: False, True (replacements or whole contents) or
#: ``"patch"`` (the tool takes patches)
EditsFiles = bool | Literal["patch"]

__all__ = [
    "EDIT_PERMISSION",
    "MAX_TIMEOUT_MS",
    "MAX_TIMEOUT_SECONDS",
    "EditsFiles",
    "FunctionTool",
    "Tool",
    "tool",
    "valid_tool_name",
]

_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _serialise_output(value: Any, tool_name: str) -> str:
    """The model-visible text of a value a tool returned (anything but a :class:`ToolResult`).

    A ``str`` as it is; ``None`` -> empty; ``int``, ``float``, ``bool`` -> ``str(value)``; a
    dict, list, tuple, set, dataclass or pydantic model (or any mix of them) -> JSON, as
    pydantic-ai and llm do. Anything JSON cannot carry is a ``TypeError`` naming the tool.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, int | float | bool):
        return str(value)
    from pydantic_core import PydanticSerializationError, to_json

    try:
        return to_json(value).decode()
    except PydanticSerializationError as exc:
        raise TypeError(
            f"tool {tool_name!r} returned {type(value).__name__}, which cannot be serialised "
            f"to JSON ({exc}); return a str, a ToolResult, or JSON-compatible data"
        ) from None


def valid_tool_name(name: str) -> bool:
    """Whether ``name`` may name a tool: letters, digits, ``_`` and ``-``, 1 to 64 characters
    (what every provider accepts). The registry skips a tool whose name is not valid."""
    return _NAME_RE.match(name) is not None


class Tool:
    """Base class of every tool.

    Subclasses set ``name`` and ``description`` (default: the class docstring) and define
    ``run(self, ctx, **typed_arguments)`` (sync or async), or set ``Args`` to a pydantic model
    and define ``run(self, args, ctx)``. ``run`` returns a ``str`` (the output), a
    :class:`ToolResult`, or any other value, serialised for the model: numbers as ``str``,
    dicts, lists, dataclasses and pydantic models as JSON (see ``docs/tool-packs.md``).

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
                raise InvalidArguments(
                    self.format_validation_error(exc), problem=_problems(exc)
                ) from None
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
                problem = (
                    f"the arguments are not valid JSON ({exc.msg} at line {exc.lineno} "
                    f"column {exc.colno})"
                )
                raise InvalidArguments(
                    f"The {self.name} tool was called with invalid arguments: {problem}.\n"
                    f"{REWRITE_HINT}",
                    problem=problem,
                ) from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            problem = f"expected a JSON object, got {type(args).__name__}"
            raise InvalidArguments(
                f"The {self.name} tool was called with invalid arguments: {problem}.\n"
                f"{REWRITE_HINT}",
                problem=problem,
            )
        return args

    def format_validation_error(self, error: ValidationError) -> str:
        """The model-visible text for a validation failure (override to format your own)."""
        return (
            f"The {self.name} tool was called with invalid arguments: {_problems(error)}.\n"
            f"{REWRITE_HINT}"
        )

    def dump(self, validated: BaseModel) -> dict[str, Any]:
        """The JSON-compatible, model-facing dict of validated arguments."""
        return validated.model_dump(mode="json", by_alias=True)

    # -- running ------------------------------------------------------------------------------
    async def execute(self, validated: BaseModel, ctx: Any) -> ToolResult:
        """Run the tool with validated arguments and the call's
        :class:`~hookcode.tools.ToolContext`; sync tools run in the runtime's thread pool."""
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
            value = await ctx.in_thread(lambda: fn(*call_args, **call_kwargs))
            if inspect.isawaitable(value):
                value = await value
        return self._to_result(value)

    def _to_result(self, value: Any) -> ToolResult:
        if isinstance(value, ToolResult):
            return value
        return ToolResult(output=_serialise_output(value, self.name))

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
        if not valid_tool_name(self.name):
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
    """Whether a parameter's annotation is the tool context (:class:`hookcode.tools.ToolContext`
    or a subclass), known by its class's name: the context lives above this module."""
    if isinstance(annotation, str):
        return annotation.split(".")[-1].strip("'\"") == "ToolContext"
    return any(
        k.__module__ == "hookcode.tools" and k.__qualname__ == "ToolContext"
        for k in getattr(annotation, "__mro__", ())
    )


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


def _problems(error: ValidationError) -> str:
    """Each bad field with what is wrong with it: ``path: required argument is missing; ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {_error_message(e)}"
        for e in error.errors()
    )


def _error_message(error: Any) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown argument (not in the tool's schema)"
    if error.get("type") == "missing":
        return "required argument is missing"
    return str(error.get("msg", "invalid value"))
