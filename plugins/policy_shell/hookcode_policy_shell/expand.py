"""Words as bash expands them: the part of the analysis (:class:`Expansions`, mixed into
:class:`hookcode_policy_shell.analyze.Analysis`) that reads a word node into a
:class:`~hookcode_policy_shell.words.Word`: its static value when it has one, the words a loop
variable stands for, and the substitutions inside it walked as commands. Anything outside the
understood subset makes the command opaque."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hookcode_policy_shell.commands import READ
from hookcode_policy_shell.nodes import operator as _operator
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.words import (
    BRACE,
    Word,
    ansi_c,
    arithmetic_is_static,
    backtick_body,
    double_quoted_problem,
    expansion_choices,
    expansion_problem,
    unescape_double,
    unescape_word,
    unquoted_problem,
)

if TYPE_CHECKING:
    from hookcode_policy_shell.walker import Analyser as _Base
else:
    _Base = object

__all__ = ["Expansions"]

_BLANKS = re.compile(r"[ \t\n]")
#: combinations of a loop variable's values inside one word that are followed
MAX_COMBINATIONS = 64


class Expansions(_Base):
    """Reading words (see the module docstring)."""

    def arithmetic_text(self, inner: str, where: str) -> None:
        if not arithmetic_is_static(inner):
            self.opaque(
                f"{where} holds names or expansions: arithmetic evaluates a name's value in "
                "turn, which can run commands"
            )

    def word(self, node: Any, depth: int, *, quoted: bool = False) -> Word:
        """The :class:`Word` of a node; nested substitutions are walked, and anything outside
        the understood subset makes the command opaque."""
        kind = node.type
        text = _text(node)
        if quoted:
            text = text.lstrip(" \t\n")  # blanks of the string, folded into the token
        if kind == "word":
            problem = unquoted_problem(text)
            if problem:
                self.opaque(problem)
                return Word(text, None, node=node)
            value, mask = unescape_word(text)
            return Word(text, value, mask, node)
        if kind == "number":
            if not re.fullmatch(r"[0-9]+", text):
                problem = unquoted_problem(text)
                if problem:
                    self.opaque(problem)
                    return Word(text, None, node=node)
            return Word(text, text, text, node)
        if kind == "raw_string":
            body = text[1:-1]
            return Word(text, body, "\0" * len(body), node)
        if kind == "ansi_c_string":
            decoded = ansi_c(text[2:-1])
            if decoded is None:
                return Word(text, None, node=node)
            return Word(text, decoded, "\0" * len(decoded), node)
        if kind == "string":
            return self.string(node, depth)
        if kind == "concatenation":
            return self.concatenation(node, depth)
        if kind == "simple_expansion":
            if any(
                c.type not in ("variable_name", "special_variable_name", "$") for c in node.children
            ):
                self.opaque(f"the expansion {text!r} is not understood")
            return self.variable(text, node, quoted)
        if kind == "expansion":
            problem = expansion_problem(text)
            if problem:
                self.opaque(problem)
                self.extract(node, depth)  # command substitutions inside, for deny rules
                return Word(text, None, node=node)
            return self.variable(text, node, quoted)
        if kind == "command_substitution":
            self.substitution(node, depth, quoted)
            return Word(text, None, node=node)
        if kind == "arithmetic_expansion":
            inner = text[3:-2] if text.startswith("$((") else text[2:-1]
            self.arithmetic_text(inner, f"the arithmetic {text}")
            self.extract(node, depth)
            return Word(text, None, node=node)
        if kind == "process_substitution":
            self.scoped(node, depth)
            return Word(text, None, node=node)
        if kind == "brace_expression":
            return Word(text, None, node=node)
        if kind in ("extglob_pattern", "regex"):
            problem = unquoted_problem(text)
            if problem:
                self.opaque(problem)
            return Word(text, None, node=node)
        self.opaque(f"the word {text!r} ({kind}) is not understood")
        self.extract(node, depth)
        return Word(text, None, node=node)

    def harmless(self, w: Word) -> bool:
        """Whether an argument cannot turn into an option of a read-only command: static, a
        loop variable with no option-like value, a glob whose matches (now) are not
        option-like (``sort *`` with a file named ``--output=x`` would write)."""
        if not w.harmless:
            return False
        if BRACE.search(w.mask):
            return False
        if w.value is not None and w.glob and w.mask[:1] in ("*", "?", "["):
            for base in self.places.cwds:
                matches = self.places.expand_glob(base, w.value, w.mask)[1]
                if any(m.rpartition("/")[2].startswith("-") for m in matches):
                    return False
        return True

    def variable(self, text: str, node: Any, quoted: bool) -> Word:
        """``$name`` / ``${name}``: dynamic; for a loop variable, the words it may become."""
        match = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text)
        bound = self.loops.get(match.group(1)) if match else None
        if bound is None or (not quoted and any(_BLANKS.search(v) for v in bound)):
            return Word(text, None, node=node)  # unknown, or split into more words
        return Word(text, None, node=node, choices=expansion_choices(bound, quoted))

    def string(self, node: Any, depth: int) -> Word:
        """A double-quoted string. Tree-sitter folds blanks into the tokens around them (the
        closing quote of ``" "``, the ``$`` of ``" $x"``), so a static string's value is read
        from its text, as bash reads it; with expansions inside, each part is checked."""
        text = _text(node)
        inner = [c for c in node.children if c.type != '"']
        if len(inner) == 1 and inner[0].type in ("simple_expansion", "expansion"):
            # "$name": the quoted value, one word
            only = self.word(inner[0], depth, quoted=True)
            return Word(text, None, node=node, choices=only.choices)
        if not (text.startswith('"') and text.endswith('"') and len(text) >= 2):
            self.opaque(f"the string {text!r} is not understood")
            return Word(text, None, node=node)
        if all(c.type == "string_content" for c in inner):
            body = text[1:-1]
            problem = double_quoted_problem(body)
            if problem:
                self.opaque(problem)
                return Word(text, None, node=node)
            value = unescape_double(body)
            return Word(text, value, "\0" * len(value), node)
        position = node.start_byte
        for child in node.children:
            gap = node.text[position - node.start_byte : child.start_byte - node.start_byte]
            if gap.strip():
                self.opaque(f"the string {text!r} is not understood")
            position = child.end_byte
            kind = child.type
            if not child.is_named:
                if _text(child).strip() != kind.strip():
                    self.opaque(f"the string {text!r} is not understood ({_text(child)!r})")
            elif kind == "string_content":
                problem = double_quoted_problem(_text(child))
                if problem:
                    self.opaque(problem)
            elif kind in (
                "simple_expansion",
                "expansion",
                "command_substitution",
                "arithmetic_expansion",
            ):
                self.word(child, depth, quoted=True)
            else:
                self.opaque(f"the string {text!r} is not understood ({kind})")
        return Word(text, None, node=node)

    def concatenation(self, node: Any, depth: int) -> Word:
        text = _text(node)
        parts: list[Word] = []
        understood = True
        position = node.start_byte
        for child in node.children:
            if child.start_byte != position or not child.is_named:
                self.opaque(f"the word {text!r} is not understood")
                understood = False
            position = child.end_byte
            if child.is_named:
                parts.append(self.word(child, depth))
        if position != node.end_byte:
            self.opaque(f"the word {text!r} is not understood")
            understood = False
        if understood and all(p.value is not None for p in parts):
            return Word(
                text, "".join(p.value or "" for p in parts), "".join(p.mask for p in parts), node
            )
        if understood and all(p.known for p in parts):
            # a loop variable inside a word (`-l$f`, `$dir/x`): each combination (its values
            # are single words: one with a blank, unquoted, is not followed)
            combos: list[tuple[str, str]] = [("", "")]
            for p in parts:
                options = [(p.value, p.mask)] if p.value is not None else []
                options += [(c.value or "", c.mask) for c in p.choices or ()]
                combos = [(v + w, m + n) for v, m in combos for w, n in options]
                if len(combos) > MAX_COMBINATIONS:
                    break
            else:
                choices = [Word(v, v, m) for v, m in combos]
                return Word(text, None, node=node, choices=choices)
        return Word(text, None, node=node)

    def substitution(self, node: Any, depth: int, quoted: bool) -> None:
        text = _text(node).lstrip(" \t\n") if quoted else _text(node)
        if text.startswith("`"):
            body = backtick_body(text, quoted)
            if body is None:
                self.opaque("a backtick substitution that bash and the parser end differently")
                self.scoped(node, depth)
                return
            saved = self.places.save()
            self.source(body, depth + 1)
            self.places.restore(saved)
            return
        if not (text.startswith("$(") and text.endswith(")")):
            self.opaque(f"the substitution {text!r} is not understood")
        named = node.named_children
        if len(named) == 1 and named[0].type == "file_redirect":
            # $(< file): the file's contents
            operator = _operator(named[0])
            if operator == "<":
                target = named[0].child_by_field_name("destination")
                if target is not None:
                    self.path_argument(self.word(target, depth), READ)
                    return
        self.scoped(node, depth)
