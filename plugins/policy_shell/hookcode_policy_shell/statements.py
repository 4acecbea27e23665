"""Statements that assign (``X=1``, ``export``, ``declare``, ``unset``, prefixes) and test
commands (``[[ ]]``, ``[ ]``): the part of the analysis (:class:`Statements`, mixed into
:class:`hookcode_policy_shell.analyze.Analysis`) that judges what they assign and which
operands bash evaluates as arithmetic."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hookcode_policy_shell.commands import sensitive_variable
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.words import unquoted_problem

if TYPE_CHECKING:
    from hookcode_policy_shell.walker import Analyser as _Base
else:
    _Base = object

__all__ = ["Statements"]


class Statements(_Base):
    """Assignments and tests (see the module docstring)."""

    def _test(self, node: Any, depth: int) -> None:
        """``[[ ... ]]`` and ``[ ... ]``: operands are words; arithmetic comparisons in
        ``[[`` and ``-v`` in both evaluate names, so their operands must be plain."""
        double = bool(node.children) and node.children[0].type == "[["
        self.test_expression(node, depth, double)

    def test_expression(self, node: Any, depth: int, double: bool) -> None:
        for child in node.named_children:
            kind = child.type
            if kind in ("binary_expression", "unary_expression", "parenthesized_expression"):
                operator = child.child_by_field_name("operator")
                op = _text(operator) if operator is not None else ""
                operands = [c for c in child.named_children if c != operator]
                if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge") and double:
                    for operand in operands:
                        if not re.fullmatch(r"-?[0-9]+", _text(operand)):
                            self.opaque(
                                f"[[ ... {op} ... ]] evaluates its operands as arithmetic "
                                f"({_text(operand)!r} is not a plain number)"
                            )
                elif op in ("-v", "-R"):
                    for operand in operands:
                        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", _text(operand)):
                            self.opaque(
                                f"{op} {_text(operand)!r} evaluates a subscript or a name that "
                                "is not static"
                            )
                self.test_expression(child, depth, double)
            elif kind == "test_operator":
                continue
            elif kind == "regex":
                problem = unquoted_problem(_text(child))
                if problem:
                    self.opaque(problem)
            else:
                self.word(child, depth)

    def _declaration(self, node: Any, depth: int) -> None:
        """``declare``/``typeset``/``local``/``export``/``readonly``: a pattern of its own;
        an assignment to a variable that changes what runs, the integer or nameref
        attribute, or a name that is not static make it opaque."""
        keyword = node.children[0].type if node.children else ""
        flags = ""
        for child in node.named_children:
            if child.type == "word":
                value = _text(child)
                if value.startswith(("-", "+")):
                    flags += value[1:]
                    continue
                self.assigns(value, keyword)
            elif child.type == "variable_assignment":
                self.assignment(child, depth, keyword)
            elif child.type in ("variable_name",):
                self.assigns(_text(child), keyword)
            else:
                w = self.word(child, depth)
                if w.value is None:
                    self.opaque(f"{keyword} with a name that is not static")
                else:
                    self.assigns(w.value.split("=", 1)[0], keyword)
        if "i" in flags or "n" in flags:
            self.opaque(f"{keyword} -{flags}: the integer and nameref attributes evaluate values")
        if "f" in flags and keyword in ("export", "declare", "typeset"):
            pass  # listing or exporting functions: nothing runs
        self.emit_text(node)

    def _unset(self, node: Any, depth: int) -> None:
        for child in node.named_children:
            w = self.word(child, depth)
            if w.value is None:
                self.opaque("unset with a name that is not static")
            elif not w.value.startswith("-"):
                self.assigns(w.value, "unset")
        self.emit_text(node)

    def _assignment(self, node: Any, depth: int) -> None:
        self.assignment(node, depth, "an assignment")
        self.emit_text(node)

    def _assignments(self, node: Any, depth: int) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, depth, "an assignment")
            else:
                self.statement(child, depth)
        self.emit_text(node)

    def emit_text(self, node: Any) -> None:
        """A statement that is not a simple command but changes state (``export X=1``,
        ``X=1``): its text is a pattern of its own."""
        text = " ".join(_text(node).split())
        self.commands.setdefault(text, None)
        first = text.split(" ", 1)[0]
        self.always.setdefault(first if "=" in first else first + " *", None)

    def assigns(self, name: str, how: str) -> None:
        """``how`` assigns the variable ``name``."""
        if sensitive_variable(name):
            self.opaque(f"{how} assigns {name}, which changes what runs or how the shell reads")

    def assignment(self, node: Any, depth: int, how: str, *, prefix: bool = False) -> None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            index = name_node.child_by_field_name("index")
            if index is None or not re.fullmatch(r"[0-9]+", _text(index)):
                self.opaque(f"the subscript of {name} is evaluated as arithmetic")
            name = _text(name_node.child_by_field_name("name") or name_node)
        if prefix:
            # the full form is a pattern of its own (the rules judge it); PATH and the start-up
            # files change which program this very command is
            if name in ("PATH", "BASH_ENV", "ENV") or not re.fullmatch(r"\w+", name):
                self.opaque(f"{name}=... changes which program the command runs")
        else:
            self.assigns(name, how)
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) == "value":
                if child.type == "array":
                    for element in child.named_children:
                        text = _text(element)
                        if text.startswith("[") and not re.match(r"\[[0-9]+\]=", text):
                            self.opaque(f"the array index in {text!r} is evaluated as arithmetic")
                        self.word(element, depth)
                else:
                    self.word(child, depth)
