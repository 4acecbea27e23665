"""Core's own hook implementations, registered first under the plugin name ``core``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookcode.plugin_manager import hookimpl

if TYPE_CHECKING:
    from hookcode.tools import ToolCall, ToolContext, ToolResult


@hookimpl(trylast=True)
async def tool_execute(call: ToolCall, ctx: ToolContext) -> ToolResult:
    """Run the tool's body with the validated arguments (the innermost ``tool_execute``)."""
    tool, args = ctx.tool, ctx.args
    assert tool is not None and args is not None, "invoke resolves and validates first"
    return await tool.execute(args, ctx)
