"""Small readers of tree-sitter nodes shared by the analysis and the command handlers."""

from __future__ import annotations

from typing import Any

from hookcode_policy_shell.paths import SPECIAL_FILES
from hookcode_policy_shell.words import Word

__all__ = [
    "OUTPUT_OPERATORS",
    "REDIRECTS",
    "enclosing_redirects",
    "norm_word",
    "operator",
    "redirect_text",
    "text",
    "writes_file",
]

OUTPUT_OPERATORS = frozenset((">", ">>", "&>", "&>>", ">|", ">&", "&>|"))

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


def writes_file(node: Any) -> bool:
    """Whether a redirection writes a file (not a descriptor, not /dev/null)."""
    if node.type != "file_redirect":
        return False
    op = operator(node)
    if op not in OUTPUT_OPERATORS:
        return False
    destination = node.child_by_field_name("destination")
    if destination is None:
        return False
    target = text(destination)
    if op == ">&" and (destination.type == "number" or target == "-"):
        return False
    return target.strip("'\"") not in SPECIAL_FILES


def norm_word(w: Word, first: bool) -> str:
    """A word as it appears in a pattern; a command name (``first``) by its basename."""
    if first and w.value:
        return w.value.rpartition("/")[2] if "/" in w.value else w.value
    return w.pattern_text()


def redirect_text(node: Any) -> str:
    """A redirection as it appears in a pattern (a here-document without its body)."""
    if node.type == "heredoc_redirect":
        data = node.text
        for child in node.children:
            if child.type == "heredoc_body":
                data = data[: child.start_byte - node.start_byte]
                break
        shown = data.decode("utf-8", "surrogateescape")
    else:
        shown = text(node)
    return " ".join(shown.split())


def enclosing_redirects(node: Any) -> list[Any]:
    """Redirections of the statements that enclose ``node`` through their bodies
    (``cmd > out``, ``{ a; b; } > out``), innermost first; stops at substitutions."""
    found: list[Any] = []
    child = node
    parent = node.parent
    while parent is not None:
        kind = parent.type
        if kind in ("command_substitution", "process_substitution", "command", "program"):
            break
        if kind == "redirected_statement":
            if parent.child_by_field_name("body") != child:
                break
            found += [c for c in parent.children if c.type in REDIRECTS]
        elif kind in REDIRECTS:
            break
        child = parent
        parent = parent.parent
    return found
