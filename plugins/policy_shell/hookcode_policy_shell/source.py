"""Reading a command text the way bash will, before the walk: the parser (tree-sitter-bash,
created on first use), backslash-newlines removed where bash removes them, and the ways the
parser and bash may disagree turned into reasons for opacity."""

from __future__ import annotations

import re
from typing import Any

from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.words import heredoc_delimiter, input_problem

__all__ = ["parse", "read_source"]

_parser: Any = None
#: what tree-sitter-bash may skip as "extra" text besides blanks: a backslash before a blank
_DROPPED = re.compile(r"\\[ \t\v\f\r]")


def parse(source: str) -> Any:
    """The tree-sitter tree of ``source`` (the parser is created on first use)."""
    global _parser
    if _parser is None:
        import tree_sitter
        import tree_sitter_bash

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _parser.parse(source.encode("utf-8", "surrogateescape"))


def read_source(source: str) -> tuple[Any, list[str]]:
    """(the tree of ``source`` as bash will read it, the reasons bash and the parser may
    read it differently)."""
    problems: list[str] = []
    problem = input_problem(source)
    if problem is not None:
        problems.append(f"the command may be read differently by bash: {problem}")
    joined, why = _join_continuations(source)
    if why is not None:
        problems.append(f"the command may be read differently by bash: {why}")
    if joined is not None:
        source = joined
    tree = parse(source)
    root = tree.root_node
    if root.has_error:
        problems.append("the command could not be parsed")
    elif _DROPPED.search(source):
        ignored = _ignored_text(root, source.encode("utf-8", "surrogateescape"))
        if ignored is not None:
            problems.append(
                f"the parser skipped {ignored!r}, which bash reads (a backslash before a "
                "blank, say): they would not see the same command"
            )
    return root, problems


def _join_continuations(source: str) -> tuple[str | None, str | None]:
    """(``source`` with every backslash-newline that bash removes removed, or None when there
    is none; a reason when one sits where bash's handling is not modelled).

    Bash removes a backslash-newline everywhere except inside single quotes, ``$'...'``,
    comments and the bodies of here-documents with a quoted delimiter; tree-sitter instead
    splits ``r\\<newline>m`` into two words."""
    if "\\\n" not in source:
        return None, None
    tree = parse(source)
    data = source.encode("utf-8", "surrogateescape")
    cut: list[int] = []
    for m in re.finditer(rb"(\\+)\n", data):
        if len(m.group(1)) % 2 == 0:
            continue
        at = m.end() - 2
        node = tree.root_node.descendant_for_byte_range(at, at + 1)
        keep = False
        while node is not None:
            if node.type in ("raw_string", "ansi_c_string", "comment"):
                keep = True
                break
            if node.type == "heredoc_redirect":
                start = next((c for c in node.children if c.type == "heredoc_start"), None)
                parsed = heredoc_delimiter(_text(start)) if start is not None else None
                if parsed is not None and parsed[1]:
                    keep = True  # a quoted delimiter: the body is literal
                    break
                return None, "a backslash-newline inside a here-document"
            node = node.parent
        if not keep:
            cut.append(at)
    if not cut:
        return None, None
    out = bytearray()
    last = 0
    for at in cut:
        out += data[last:at]
        last = at + 2
    out += data[last:]
    return out.decode("utf-8", "surrogateescape"), None


def _ignored_text(root: Any, data: bytes) -> str | None:
    """Text outside every token of the tree that is not a blank: tree-sitter dropped it (it
    drops ``\\ `` at the start of a word, so ``ls \\ #x; rm y`` looks like ``ls`` and a
    comment, while bash runs ``rm y``)."""
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type in ("comment", "heredoc_body", "raw_string"):
            spans.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    spans.sort()
    position = 0
    for start, end in [*spans, (len(data), len(data))]:
        if start > position and data[position:start].strip(b" \t\n"):
            gap = data[position:start].lstrip(b" \t\n")
            return gap[:12].decode("utf-8", "replace")
        position = max(position, end)
    return None
