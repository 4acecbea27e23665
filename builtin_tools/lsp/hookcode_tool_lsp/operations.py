"""The nine operations of the lsp tool: which LSP request each one is, which capability it
needs, and how its parameters are made and its answer read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookcode_tool_lsp.client import LspClient

__all__ = [
    "OPERATIONS",
    "WORKSPACE_SYMBOL_KINDS",
    "WORKSPACE_SYMBOL_LIMIT",
    "NotSupported",
    "run_operation",
    "supports",
]


class NotSupported(Exception):
    """No server for the file offers the operation (its capabilities lack it): an empty
    result would read as "nothing found"."""


#: operation -> (method, the server capability it needs)
OPERATIONS: dict[str, tuple[str, str]] = {
    "goToDefinition": ("textDocument/definition", "definitionProvider"),
    "findReferences": ("textDocument/references", "referencesProvider"),
    "hover": ("textDocument/hover", "hoverProvider"),
    "documentSymbol": ("textDocument/documentSymbol", "documentSymbolProvider"),
    "workspaceSymbol": ("workspace/symbol", "workspaceSymbolProvider"),
    "goToImplementation": ("textDocument/implementation", "implementationProvider"),
    "prepareCallHierarchy": ("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
    "incomingCalls": ("callHierarchy/incomingCalls", "callHierarchyProvider"),
    "outgoingCalls": ("callHierarchy/outgoingCalls", "callHierarchyProvider"),
}
#: symbol kinds workspaceSymbol keeps (class, method, function, interface, variable,
#: constant, struct, enum) and how many per server, as the reference
WORKSPACE_SYMBOL_KINDS = frozenset({5, 6, 12, 11, 13, 14, 23, 10})
WORKSPACE_SYMBOL_LIMIT = 10


def supports(client: LspClient, operation: str) -> bool:
    """Whether the server offers ``operation`` (a capability, or registered dynamically)."""
    method, capability = OPERATIONS[operation]
    if method.startswith("callHierarchy/"):
        method = "textDocument/prepareCallHierarchy"
    return bool(client.capabilities.get(capability)) or method in client.registered


async def run_operation(
    client: LspClient,
    operation: str,
    path: str,
    text: str,
    line: int,
    character: int,
    timeout: float,
) -> list[Any]:
    """``operation`` at a 0-based position of ``path`` (whose text is ``text``): the
    server's answer as a list (empty for none); NotSupported when it lacks the operation."""
    if not supports(client, operation):
        raise NotSupported(operation)
    uri = Path(path).as_uri()
    position = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
    method = OPERATIONS[operation][0]
    if operation == "findReferences":
        params: Any = {**position, "context": {"includeDeclaration": True}}
    elif operation == "documentSymbol":
        params = {"textDocument": {"uri": uri}}
    elif operation == "workspaceSymbol":
        params = {"query": _word_at(text, line, character)}
    elif operation in ("incomingCalls", "outgoingCalls"):
        items = await client.request("textDocument/prepareCallHierarchy", position, timeout=timeout)
        if not items:
            return []
        params = {"item": items[0]}
    else:
        params = position
    result = await client.request(method, params, timeout=timeout)
    if result is None:
        return []
    found = result if isinstance(result, list) else [result]
    found = [item for item in found if item]
    if operation == "workspaceSymbol":
        found = [
            s for s in found if isinstance(s, dict) and s.get("kind") in WORKSPACE_SYMBOL_KINDS
        ][:WORKSPACE_SYMBOL_LIMIT]
    return found


def _word_at(text: str, line: int, character: int) -> str:
    """The identifier at a 0-based position ('' when there is none): workspaceSymbol's query."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return ""
    row = lines[line]
    if not 0 <= character <= len(row):
        return ""
    start = end = min(character, len(row))
    while start > 0 and (row[start - 1].isalnum() or row[start - 1] == "_"):
        start -= 1
    while end < len(row) and (row[end].isalnum() or row[end] == "_"):
        end += 1
    return row[start:end]
