"""Small readers of tree-sitter nodes shared by the analysis and the command handlers."""

from __future__ import annotations

from typing import Any

__all__ = ["REDIRECTS", "operator", "text"]

#: the node types of a redirection
REDIRECTS = frozenset(("file_redirect", "heredoc_redirect", "herestring_redirect"))


def text(node: Any) -> str:
    """A node's source text (bytes that are not UTF-8 kept as surrogates)."""
    return node.text.decode("utf-8", "surrogateescape")


def operator(node: Any) -> str:
    """The last anonymous token of a node: a redirection's operator (``>``, ``>>``, ``<&``)."""
    found = ""
    for child in node.children:
        if not child.is_named:
            found = text(child)
    return found
