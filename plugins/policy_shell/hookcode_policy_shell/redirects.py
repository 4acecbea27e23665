"""Redirections as the analysis reads them (:class:`Redirections`, mixed into
:class:`hookcode_policy_shell.analyze.Analysis`): the files they read and write, and
here-documents checked the way bash ends and expands them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookcode_policy_shell.commands import READ, WRITE
from hookcode_policy_shell.nodes import OUTPUT_OPERATORS, REDIRECTS
from hookcode_policy_shell.nodes import operator as _operator
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.words import heredoc_body_problem, heredoc_delimiter

if TYPE_CHECKING:
    from hookcode_policy_shell.walker import Analyser as _Base
else:
    _Base = object

__all__ = ["INPUT_OPERATORS", "Redirections"]

INPUT_OPERATORS = frozenset(("<",))


class Redirections(_Base):
    """Reading redirections (see the module docstring)."""

    def redirect(self, node: Any, depth: int) -> None:
        kind = node.type
        if kind == "herestring_redirect":
            for child in node.named_children:
                self.word(child, depth)
            return
        if kind == "heredoc_redirect":
            self.heredoc(node, depth)
            return
        operator = _operator(node)
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            if child.is_named and field not in ("descriptor", "destination"):
                self.opaque(f"the redirection {_text(node)!r} is not understood")
        if operator in (">&-", "<&-"):
            return  # closing a descriptor
        destination = node.child_by_field_name("destination")
        if destination is None:
            self.opaque(f"the redirection {_text(node)!r} is not understood")
            return
        if destination.type == "process_substitution":
            self.word(destination, depth)  # `> >(cmd)`: the commands inside are judged
            return
        if operator in (">&", "<&") and destination.type == "number":
            return  # a file descriptor
        w = self.word(destination, depth)
        if operator in (">&", "<&") and w.value == "-":
            return
        if operator in OUTPUT_OPERATORS:
            self.path_argument(w, WRITE)
        elif operator in INPUT_OPERATORS:
            self.path_argument(w, READ)
        else:
            self.opaque(f"the redirection operator {operator!r} is not understood")

    def heredoc(self, node: Any, depth: int) -> None:
        start = body = end = None
        dash = False
        for child in node.children:
            if child.type == "heredoc_start":
                start = child
            elif child.type == "heredoc_body":
                body = child
            elif child.type == "heredoc_end":
                end = child
            elif child.type == "<<-":
                dash = True
            elif child.type in REDIRECTS or child.type == "file_redirect":
                self.redirect(child, depth)
            elif child.is_named and child.type not in ("heredoc_content",):
                # `cat <<EOF | cmd`, `<<EOF > out`: what follows the start on its line
                self.statement(child, depth)
        if start is None:
            self.opaque("a here-document without a delimiter")
            return
        parsed = heredoc_delimiter(_text(start))
        if parsed is None:
            self.opaque(f"the here-document delimiter {_text(start)!r} is not a plain word")
            return
        delimiter, literal = parsed
        content = _text(body) if body is not None else ""
        lines = content.split("\n")
        for line in lines[:-1] if content.endswith("\n") else lines:
            if (line.lstrip("\t") if dash else line) == delimiter:
                self.opaque("bash would end the here-document earlier than the parser does")
                return
        if end is None or _text(end) != delimiter:
            self.opaque("the here-document is not closed by its delimiter")
            return
        if not literal and body is not None:
            problem = heredoc_body_problem(content)
            if problem:
                self.opaque(problem)
                self.block(body, depth)
