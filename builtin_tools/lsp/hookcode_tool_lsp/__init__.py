"""lsp: code intelligence from language servers, and their errors after edits
(reference/tools.md §15 and §23).

The ``lsp`` tool. Order of a call: resolve the path -> ``external_directory`` (file; symlinks
followed, dangling ones too) -> ask ``lsp`` (patterns ``["*"]``) -> the ``read`` rules on the
file, as the read tool asks them (a deny refuses, an ask asks ``read``: the file's text goes to
a server and its answers quote it) -> ``File not found: <abs>`` -> ``No LSP server available for
this file type.`` -> the file is opened (or its new text sent) in every server for it -> the
operation at ``line``/``character`` (1-based, sent 0-based) -> the results flattened over the
servers as 2-space-indented JSON (results that point into a file the ``read`` rules deny are
left out), or ``No results found for <operation>``. Title
``<operation> <rel>:<line>:<character>``. An error answer or a missing capability counts as
no result (as the reference); a server that cannot start or dies is an error naming it.
``incomingCalls``/``outgoingCalls`` prepare the call hierarchy at the position first and ask
about its first item. ``workspaceSymbol`` searches for the identifier at the position (the
reference sends an empty query, which some servers answer with nothing); like the reference it
keeps classes, functions, methods, interfaces, variables, constants, structs and enums, 10 per
server.

Diagnostics after ``write``, ``edit``, ``multiedit`` and ``apply_patch`` come from this
plugin's ``tool_execute_after`` (the file tools contain no LSP code): every changed file is
opened or changed in each matching server, deleted files are closed, then we wait for each
changed file's ``publishDiagnostics`` (150 ms without a new one ends the wait, ``[lsp]
diagnostics_ready_wait`` (3 s) at most once the server runs) and append the errors (severity 1, 20 per file) in §23's format; a
``write`` also shows up to 5 other files with errors (never one the ``read`` rules deny).
``metadata["diagnostics"]`` holds the
errors shown, by absolute path. A server that is configured but cannot start, or that dies
on the way, does not fail the edit: a line ``LSP diagnostics skipped: server 'NAME' ...``
says why (``metadata["lsp_skipped"]`` too), and a dead server is started again on its next
use. A ``read`` of a file warms its servers (start, open the file) without waiting. Files
larger than ``[lsp] max_file_bytes`` (512 KiB) are never sent to a server (noted in
``metadata["lsp_skipped"]`` only). An abort ends the wait; the edit stands.

Servers live on a background event loop (:mod:`hookcode_tool_lsp.manager`) and are shut down
when the runtime closes, at exit, or with hookcode itself (``PR_SET_PDEATHSIG`` on Linux).
This module imports only the standard library and hookcode.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from collections.abc import Callable

    from hookcode.runtime import Runtime
    from hookcode.tools import ToolCall

__all__ = ["lsp"]

OPERATION_NAMES = (
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
)
Operation = Literal[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
]
NO_SERVER = "No LSP server available for this file type."
#: the tools whose writes get diagnostics
WRITERS = frozenset({"write", "edit", "multiedit", "apply_patch"})

DESCRIPTION = """\
Interact with Language Server Protocol (LSP) servers to get code intelligence features.

Supported operations:
- goToDefinition: Find where a symbol is defined
- findReferences: Find all references to a symbol
- hover: Get hover information (documentation, type info) for a symbol
- documentSymbol: Get all symbols (functions, classes, variables) in a document
- workspaceSymbol: Search for symbols across the entire workspace (the identifier at the
  position is the query)
- goToImplementation: Find implementations of an interface or abstract method
- prepareCallHierarchy: Get call hierarchy item at a position (functions/methods)
- incomingCalls: Find all functions/methods that call the function at a position
- outgoingCalls: Find all functions/methods called by the function at a position

All operations require:
- filePath: The file to operate on
- line: The line number (1-based, as shown in editors)
- character: The character offset (1-based, as shown in editors)

Note: LSP servers must be configured for the file type. If no server is available, an error
will be returned."""


class _AtLeast:
    """``Annotated`` metadata: an integer ``>= minimum`` (``minimum`` in the JSON schema),
    without importing pydantic at module level."""

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema["ge"] = self.minimum
        return schema


@tool(
    name="lsp",
    description=DESCRIPTION,
    permission="lsp",
    asks_permission=True,
    aliases={"file_path": "filePath"},
)
async def lsp(
    ctx: ToolContext,
    operation: Annotated[Operation, "The LSP operation to perform"],
    file_path: Annotated[str, "The absolute or relative path to the file"],
    line: Annotated[int, "The line number (1-based, as shown in editors)", _AtLeast(1)],
    character: Annotated[int, "The character offset (1-based, as shown in editors)", _AtLeast(1)],
) -> ToolResult:
    from hookcode_tool_lsp.manager import (
        NoServer,
        NotSupported,
        TooLarge,
        Unavailable,
        call,
        manager_for,
        settings_of,
    )

    path = ctx.resolve(file_path)
    relative = os.path.relpath(path, ctx.worktree).replace(os.sep, "/")
    title = f"{operation} {relative}:{line}:{character}"
    await ctx.ask_external_directory(path, "file")
    await ctx.ask("lsp", ["*"], ["*"], {})
    rules = ctx.read_rules()
    await _ask_read(ctx, rules, path)
    if not path.is_file():
        raise ToolError(f"File not found: {path}")
    settings = settings_of(ctx.runtime.config)
    manager = manager_for(ctx.runtime)
    if not settings.enabled or not manager.specs_for(path):
        raise ToolError(NO_SERVER)
    try:
        results = await call(
            manager.request(
                str(path),
                operation,
                line - 1,
                character - 1,
                timeout=float(settings.request_timeout),
            )
        )
    except NoServer:
        raise ToolError(NO_SERVER) from None
    except NotSupported as exc:
        output = f"No results for {operation}: {exc}, so nothing was searched"
        return ToolResult(title=title, output=output, metadata={"result": [], "unsupported": True})
    except Unavailable as exc:
        raise ToolError(f"No LSP server could answer: {exc}") from None
    except TooLarge as exc:
        raise ToolError(f"File too large for the language server: {path} ({exc})") from None
    if not rules.allows_everything:
        results = [item for item in results if not _denied_location(item, rules)]
    if not results:
        output = f"No results found for {operation}"
    else:
        import json

        output = json.dumps(results, indent=2, ensure_ascii=False)
    return ToolResult(title=title, output=output, metadata={"result": results})


async def _ask_read(ctx: ToolContext, rules: Any, path: Path) -> None:
    """The file is read and sent to a server: the read rules apply as for the read tool (a
    deny refuses, an ask asks ``read`` with the same patterns)."""
    from hookcode.errors import PermissionDenied

    verdict = rules(path)
    if verdict == "deny":
        raise PermissionDenied(f"The read rules deny {path}: it is not sent to a language server.")
    if verdict == "ask":
        patterns = [str(path)]
        real = os.path.realpath(path)
        if real != str(path):
            patterns.append(real)
        await ctx.ask("read", patterns, ["*"], {"filepath": str(path)})


def _denied_location(item: Any, rules: Any) -> bool:
    """Whether a result (a location, a symbol, a call-hierarchy item or call) points into a
    file the read rules deny: such results are left out."""
    if not isinstance(item, dict):
        return False
    uris = [item.get("uri"), item.get("targetUri")]
    for key in ("location", "from", "to"):
        inner = item.get(key)
        if isinstance(inner, dict):
            uris.append(inner.get("uri"))
    for uri in uris:
        if isinstance(uri, str) and uri.startswith("file:"):
            from urllib.parse import unquote, urlsplit

            if rules(unquote(urlsplit(uri).path)) == "deny":
                return True
    return False


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------


@hookimpl
def register_tools(register: Callable[..., None], runtime: Runtime) -> None:
    # no [lsp] section means the defaults (enabled): then neither the server manager nor the
    # config model is needed to answer (this hook runs on every start-up)
    section: Any = runtime.config.section("lsp")
    if section is None or section.enabled:
        register(lsp)


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_tool_lsp._config import LspConfig

    return {"lsp": LspConfig}


@hookimpl
async def tool_execute_after(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    if call.tool == "read":
        _warm(call, result, ctx)
    elif call.tool in WRITERS:
        await _diagnostics(call, result, ctx)


def _warm(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    """A text file was read: start its servers and open it, without waiting."""
    if result.attachments or "<type>file</type>" not in result.output[:8192]:
        return
    args = call.args if isinstance(call.args, dict) else {}
    file_path = args.get("filePath")
    if not isinstance(file_path, str) or not file_path:
        return
    from hookcode_tool_lsp.manager import manager_for, settings_of, submit

    if not settings_of(ctx.runtime.config).enabled:
        return
    path = str(ctx.resolve(file_path))
    manager = manager_for(ctx.runtime)
    if manager.specs_for(path):
        submit(manager.warm(path))  # fire and forget: the read does not wait


async def _diagnostics(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    import asyncio

    from hookcode_tool_lsp import report as fmt
    from hookcode_tool_lsp.manager import call as on_loop
    from hookcode_tool_lsp.manager import manager_for, settings_of

    settings = settings_of(ctx.runtime.config)
    if not settings.enabled or not settings.diagnostics:
        return
    changed, deleted, created, shown = _touched(call, result, ctx)
    manager = manager_for(ctx.runtime)
    if not any(manager.specs_for(p) for p in (*changed, *deleted)):
        return
    work = asyncio.ensure_future(
        on_loop(
            manager.diagnose(
                changed,
                deleted,
                created=frozenset(created),
                other_files=call.tool in ("write", "apply_patch"),
            )
        )
    )
    aborted = asyncio.ensure_future(ctx.abort.wait())
    try:
        await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not work.done():
            work.cancel()  # aborted: the edit stands, without diagnostics
    if not work.done() or work.cancelled():
        return
    report = work.result()
    late = {path for path, _ in report.late}
    # what a late server published for a file was about its text before the change: not shown
    files = {p: d for p, d in report.files.items() if p not in late}
    rules = ctx.read_rules()
    if not rules.allows_everything:  # other files' errors quote them: not those denied
        files = {p: d for p, d in files.items() if p in changed or rules(p) != "deny"}
    if call.tool == "write":
        text = fmt.render_write(changed[0], files) if changed else ""
    elif call.tool == "apply_patch":
        text = fmt.render_apply_patch(shown, files)
    else:
        text = fmt.render_edit(changed[0], files) if changed else ""
    shown_paths = [changed[0]] if call.tool in ("edit", "multiedit") and changed else None
    if call.tool == "apply_patch":
        shown_paths = [p for p, _ in shown]
    metadata: dict[str, list[Any]] = {}
    for path, diagnostics in files.items():
        if shown_paths is not None and path not in shown_paths:
            continue
        found = fmt.errors(diagnostics)
        if found:
            metadata[path] = list(found)
    if call.tool == "write" and changed:
        # this file first, then the other files shown (at most 5)
        ordered = {p: metadata[p] for p in [changed[0]] if p in metadata}
        for path, found in metadata.items():
            if path != changed[0] and len(ordered) < 1 + fmt.MAX_OTHER_FILES:
                ordered[path] = found
        metadata = ordered
    problems = [*manager.config_problems, *report.problems]
    for problem in problems:
        text += f"\n\nLSP diagnostics skipped: {problem}"
    for _path, line in report.late:
        text += f"\n\nLSP {line}: the file was not checked (it may still have errors)"
    result.output += text
    result.metadata["diagnostics"] = metadata
    if late:
        # no diagnostics for these files: not the same as a clean file
        result.metadata["diagnostics_missing"] = sorted(late)
    if problems or report.large or report.late:
        # a file too large for the servers is noted in metadata only: nothing went wrong
        result.metadata["lsp_skipped"] = [
            *problems,
            *report.large,
            *(line for _, line in report.late),
        ]


def _touched(
    call: ToolCall, result: ToolResult, ctx: ToolContext
) -> tuple[list[str], list[str], list[str], list[tuple[str, str]]]:
    """(changed absolute paths, deleted ones, the changed ones that are new files, (path,
    relative path) shown per changed file)."""
    meta = result.metadata
    changed: list[str] = []
    deleted: list[str] = []
    created: list[str] = []
    shown: list[tuple[str, str]] = []
    if call.tool == "apply_patch":
        for entry in meta.get("files") or []:
            kind = entry.get("type")
            source = str(entry.get("filePath") or "")
            if kind == "delete":
                deleted.append(source)
            elif kind == "move" and entry.get("movePath"):
                deleted.append(source)
                target = str(entry["movePath"])
                changed.append(target)
                created.append(target)
                shown.append((target, str(entry.get("relativePath") or target)))
            elif source:
                changed.append(source)
                if kind == "add" and not entry.get("before"):
                    created.append(source)
                shown.append((source, str(entry.get("relativePath") or source)))
        return changed, deleted, created, shown
    path = meta.get("filepath") or (meta.get("filediff") or {}).get("file")
    if not path:
        args = call.args if isinstance(call.args, dict) else {}
        if isinstance(args.get("filePath"), str):
            path = str(ctx.resolve(args["filePath"]))
    if path:
        changed.append(str(Path(path)))
        if call.tool == "write" and meta.get("exists") is False:
            created.append(changed[0])
    return changed, deleted, created, shown
