"""multiedit: several edits of one file, all or nothing (reference/tools.md §6).

Ours is atomic (the reference runs ``edit`` once per item and leaves earlier edits on disk when
a later one fails): one file-edit transaction (:mod:`hookcode.edits`), so ``external_directory``,
the directory check and the read-before-write rule once; every edit is applied in memory, in
order, each to the previous result, with ``edit``'s rules and messages (an empty ``oldString``
creates or overwrites); the first failure aborts with nothing written, message
``Edit <i> of <n> failed: <edit message>`` (1-based); then one ``edit`` ask with the combined
diff and one write. The per-edit ``filePath`` is ignored: the top-level one is used.

metadata: ``results`` (per edit: ``additions``, ``deletions``) plus ``edit``'s fields (``diff``,
``filediff``, ``diagnostics``).
"""

# No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict only sees
# ``NotRequired`` in real (not string) annotations.

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, TypedDict

from hookcode import ToolContext, ToolError, ToolResult, hookimpl, tool

if TYPE_CHECKING:
    from hookcode.edits import EditTransaction

__all__ = ["EditItem", "multiedit"]

DESCRIPTION = """\
This is a tool for making multiple edits to a single file in one operation. It is built on top
of the Edit tool and allows you to perform multiple find-and-replace operations efficiently.
Prefer this tool over the Edit tool when you need to make multiple edits to the same file.

Before using this tool:
1. Use the Read tool to understand the file's contents and context.
2. Verify the directory path is correct.

To make multiple file edits, provide:
1. filePath: the absolute path to the file to modify
2. edits: an array of edit operations, each with oldString, newString and optionally
   replaceAll (each also carries a filePath, which is ignored: the top-level one is used).

IMPORTANT:
- All edits are applied in sequence, in the order they are provided.
- Each edit operates on the result of the previous edit.
- All edits must be valid for the operation to succeed: if any edit fails, none are applied.
- Plan your edits carefully: an earlier edit changes the text that later edits must find.
- Each oldString must match the file exactly (whitespace and indentation included) and must be
  unique unless replaceAll is true. Use replaceAll to rename a variable across the file.

To create a new file: use a new file path, and as the first edit an empty oldString with the
new file's contents as newString; subsequent edits apply to that content."""


class EditItem(TypedDict):
    """One edit of a ``multiedit`` call (model-facing keys)."""

    filePath: str
    oldString: str
    newString: str
    replaceAll: NotRequired[bool]


_ITEM_DESCRIPTIONS = {
    "filePath": "The absolute path to the file to modify (ignored: the top-level one is used)",
    "oldString": "The text to replace",
    "newString": "The text to replace it with (must be different from oldString)",
    "replaceAll": "Replace all occurrences of oldString (default false)",
}


def _item_core_schema(cls: type, source: Any, handler: Any) -> Any:
    """Hand pydantic an equivalent ``typing_extensions`` TypedDict with field descriptions:
    pydantic refuses a ``typing.TypedDict`` before Python 3.12, and this module must not
    import pydantic or typing_extensions at import time (this runs when the schema is built)."""
    from pydantic import Field
    from typing_extensions import TypedDict as TypedDictX

    fields: dict[str, Any] = {}
    for key, kind in (("filePath", str), ("oldString", str), ("newString", str)):
        fields[key] = Annotated[kind, Field(description=_ITEM_DESCRIPTIONS[key])]
    fields["replaceAll"] = NotRequired[
        Annotated[bool, Field(description=_ITEM_DESCRIPTIONS["replaceAll"])]
    ]
    item = TypedDictX("EditItem", fields)  # type: ignore[operator]
    return handler.generate_schema(item)


EditItem.__get_pydantic_core_schema__ = classmethod(_item_core_schema)  # type: ignore[attr-defined]


class _MinItems:
    """``Annotated`` metadata: at least ``count`` items (``minItems`` in the JSON schema),
    without importing pydantic at module level."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema["min_length"] = self.count
        return schema


@tool(
    name="multiedit",
    description=DESCRIPTION,
    permission="edit",
    asks_permission=True,
    edits_files=True,
    aliases={"file_path": "filePath"},
)
async def multiedit(
    ctx: ToolContext,
    file_path: Annotated[str, "The absolute path to the file to modify"],
    edits: Annotated[
        list[EditItem],
        "Array of edit operations to perform sequentially on the file",
        _MinItems(1),
    ],
) -> ToolResult:
    import asyncio

    from hookcode_tool_edit import OUTPUT, require_path, result_metadata

    require_path(file_path)
    if not edits:
        raise ToolError("edits must contain at least one edit")
    path = ctx.resolve(file_path)
    async with ctx.edit_files(path) as tx:
        results = await asyncio.to_thread(_apply_all, tx, path, edits)
    return ToolResult(
        output=OUTPUT,
        title=ctx.relative(path),
        metadata={"results": results, **result_metadata(tx)},
    )


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(multiedit)


def _apply_all(tx: "EditTransaction", path: Path, edits: list[EditItem]) -> list[dict[str, int]]:
    """Every edit in memory, in order, then one write; the first failure raises
    ``Edit i of n failed: ...``. Returns each edit's diff stats."""
    from hookcode.fileio import diff_stats
    from hookcode_tool_edit import apply_edit

    current = tx.read(path)
    text = current.text if current.exists else None
    results: list[dict[str, int]] = []
    total = len(edits)
    for index, item in enumerate(edits, 1):
        try:
            after = apply_edit(
                path,
                text,
                item["oldString"],
                item["newString"],
                bool(item.get("replaceAll", False)),
            )
        except ToolError as exc:
            raise ToolError(f"Edit {index} of {total} failed: {exc}") from None
        additions, deletions = diff_stats(text or "", after)
        results.append({"additions": additions, "deletions": deletions})
        text = after
    assert text is not None
    tx.write(path, text)
    return results
