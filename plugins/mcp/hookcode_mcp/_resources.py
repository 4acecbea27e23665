"""The MCP servers' resources as two tools of the model, as Claude Code
(``ListMcpResourcesTool``, ``ReadMcpResourceTool``) and OpenCode offer them:

* ``mcp_list_resources`` (``server`` optional): each server's resources (URI, name, MIME type,
  description) and resource templates. Listing asks nothing: it reads names only.
* ``mcp_read_resource`` (``server``, ``uri``): the resource's contents: text as text (a
  ``text/*`` blob decoded), images and PDFs as attachments. Reading asks permission
  ``<server>_read_resource`` with the URI as its pattern: the server's own family, so the
  plugin's default (``"<server>_*"`` = ask) and a user's ``"<server>_*" = "allow"`` decide
  for its resources as for its tools.

They are registered when a configured server offers resources (``capabilities.resources``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from hookcode.errors import ToolError
from hookcode.tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from hookcode_mcp._client import Manager
    from hookcode_mcp._server import Server

__all__ = ["LIST_RESOURCES", "READ_RESOURCE", "ListResources", "ReadResource", "resource_tools"]

LIST_RESOURCES = "mcp_list_resources"
READ_RESOURCE = "mcp_read_resource"


def resource_tools(manager: Manager) -> list[Tool]:
    """The two tools, when a connected server offers resources; else none."""
    from hookcode_mcp._catalog import offers

    if not any(offers(server, "resources") for server in manager.servers.values()):
        return []
    return [ListResources(manager), ReadResource(manager)]


def _servers(manager: Manager, name: str | None) -> list[Server]:
    """The servers offering resources (``name``: that one, or an error naming the others)."""
    from hookcode_mcp._catalog import offers

    offering = [s for s in manager.servers.values() if offers(s, "resources")]
    if name is None:
        return offering
    for server in offering:
        if server.name == name:
            return [server]
    known = ", ".join(s.name for s in offering) or "none"
    raise ToolError(f"no connected MCP server {name!r} offers resources (servers: {known})")


class ListResources(Tool):
    """List the resources (files, records, documents) that the connected MCP servers offer,
    with their URIs; read one with mcp_read_resource. Give `server` to list one server's."""

    name = LIST_RESOURCES

    def __init__(self, manager: Manager) -> None:
        super().__init__()
        self.manager = manager

    async def run(
        self,
        ctx: ToolContext,
        server: Annotated[str | None, "The MCP server's name (default: every server)."] = None,
    ) -> ToolResult:
        from hookcode_mcp._catalog import list_resources

        lines: list[str] = []
        count = 0
        for each in _servers(self.manager, server):
            resources, templates = await list_resources(each)
            count += len(resources)
            lines.append(f"server {each.name}: {len(resources)} resources")
            for resource in resources:
                lines.append(_describe(resource.uri, resource))
            for template in templates:
                lines.append(_describe(template.uri_template, template) + " (template)")
        if not lines:
            lines.append("No connected MCP server offers resources.")
        return ToolResult(output="\n".join(lines), metadata={"count": count})


class ReadResource(Tool):
    """Read a resource of an MCP server by its URI (as listed by mcp_list_resources)."""

    name = READ_RESOURCE
    asks_permission = True

    def __init__(self, manager: Manager) -> None:
        super().__init__()
        self.manager = manager

    async def run(
        self,
        ctx: ToolContext,
        server: Annotated[str, "The MCP server's name."],
        uri: Annotated[str, "The resource's URI."],
    ) -> ToolResult:
        from hookcode_mcp._catalog import read_resource
        from hookcode_mcp._content import resource_parts
        from hookcode_mcp._tool import sanitize

        [found] = _servers(self.manager, server)
        await ctx.ask(
            f"{sanitize(found.name)}_read_resource",
            [uri],
            ["*"],
            {"server": found.name, "uri": uri},
        )
        result = await read_resource(found, uri)
        texts: list[str] = []
        attachments = []
        for contents in result.contents:
            more_texts, more_attachments = resource_parts(contents)
            texts += more_texts
            attachments += more_attachments
            texts += [f"[attached: {a.mime}, {a.filename}]" for a in more_attachments]
        return ToolResult(
            output="\n\n".join(texts),
            attachments=attachments,
            metadata={"server": found.name, "uri": uri},
        )


def _describe(uri: str, item: Any) -> str:
    line = f"- {uri}"
    name = getattr(item, "title", None) or getattr(item, "name", None)
    if name:
        line += f" {name}"
    if getattr(item, "mime_type", None):
        line += f" ({item.mime_type})"
    if getattr(item, "description", None):
        line += f": {' '.join(item.description.split())}"
    return line
