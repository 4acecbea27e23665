"""Core's own hook implementations, registered first under the plugin name ``core``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

from hookcode.hookspecs import PROJECT_NAME

if TYPE_CHECKING:
    from hookcode.tools import ToolCall, ToolContext, ToolResult

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookimpl(trylast=True)
async def tool_execute(call: ToolCall, ctx: ToolContext) -> ToolResult:
    """Run the tool's body with the validated arguments (the innermost ``tool_execute``)."""
    tool, args = ctx.tool, ctx.args
    assert tool is not None and args is not None, "invoke resolves and validates first"
    return await tool.execute(args, ctx)
