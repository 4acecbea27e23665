"""What an MCP server returns (a tool's ``CallToolResult``, a resource's contents) as a
hookcode :class:`~hookcode.tools.ToolResult`: the text the model reads and the attachments.

* Text parts are joined by a blank line.
* An image is an attachment (a data URL) and one line of text says what it is
  (``[image attached: image/png, 1234 bytes]``): the base64 never reaches the text.
* ``structuredContent`` is the text only when the result has no content at all: a server that
  returns both sends the same data twice (the MCP specification asks servers to mirror the
  structured result in a text block), and dumping it would repeat an image's base64 as text.
* A resource's text is the text; a ``text/*`` (or JSON, XML...) blob is decoded with the
  charset its MIME type names (UTF-8 by default); an image or PDF blob is an attachment; any
  other blob is named, not shown (``[Binary MCP resource omitted: ...]``).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hookcode.tools import Attachment, ToolResult

__all__ = ["ATTACHABLE", "MAX_ATTACHMENT_BYTES", "flatten", "resource_parts"]

#: binary resources a provider accepts as attachments (later reference releases)
ATTACHABLE = {"application/pdf", "image/gif", "image/jpeg", "image/png", "image/webp"}
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
#: MIME types outside ``text/*`` whose content is text
_TEXTUAL = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
}


def flatten(result: Any) -> ToolResult:
    """A ``CallToolResult`` as a ToolResult (see the module's docstring)."""
    texts: list[str] = []
    attachments: list[Attachment] = []
    content = getattr(result, "content", None) or []
    for part in content:
        kind = getattr(part, "type", None)
        if kind == "text":
            texts.append(part.text)
        elif kind == "image":
            size = _size(part.data)
            if size <= MAX_ATTACHMENT_BYTES:
                url = f"data:{part.mime_type};base64,{part.data}"
                attachments.append(Attachment(part.mime_type, url))
                texts.append(f"[image attached: {part.mime_type}, {size} bytes]")
            else:
                texts.append(_omitted(part.mime_type, size, "image"))
        elif kind == "audio":
            texts.append(_omitted(part.mime_type, _size(part.data), "audio"))
        elif kind == "resource":
            more_texts, more_attachments = resource_parts(part.resource)
            texts += more_texts
            attachments += more_attachments
        elif kind == "resource_link":
            label = part.title or part.name
            texts.append(f"[resource: {part.uri}]" + (f" {label}" if label else ""))
    structured = getattr(result, "structured_content", None)
    if not content and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False))
    return ToolResult(output="\n\n".join(texts), attachments=attachments)


def resource_parts(resource: Any) -> tuple[list[str], list[Attachment]]:
    """One resource's contents (``TextResourceContents`` or ``BlobResourceContents``): the
    texts and attachments it becomes."""
    text = getattr(resource, "text", None)
    if text is not None:
        return [text], []
    blob = getattr(resource, "blob", "") or ""
    mime = resource.mime_type or "application/octet-stream"
    uri = str(resource.uri)
    if _is_text(mime):
        decoded = _decode(blob, mime)
        if decoded is not None:
            return [decoded], []
    size = _size(blob)
    if mime.split(";")[0].strip().lower() in ATTACHABLE and size <= MAX_ATTACHMENT_BYTES:
        return [], [Attachment(mime, f"data:{mime};base64,{blob}", filename=uri)]
    return [_omitted(mime, size, uri)], []


def _is_text(mime: str) -> bool:
    kind = mime.split(";")[0].strip().lower()
    return kind.startswith("text/") or kind in _TEXTUAL or kind.endswith(("+json", "+xml"))


def _charset(mime: str) -> str:
    """The ``charset`` parameter of a MIME type, else UTF-8."""
    for param in mime.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def _decode(blob: str, mime: str) -> str | None:
    """A text blob decoded with its charset; None when it is not base64 or not that text."""
    try:
        raw = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        return raw.decode(_charset(mime))
    except (LookupError, UnicodeDecodeError):
        return None


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _omitted(mime: str, size: int, what: str) -> str:
    return f"[Binary MCP resource omitted: {what} ({mime}, {size} bytes)]"
