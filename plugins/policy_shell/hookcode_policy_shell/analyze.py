"""The shell analyser: what a bash command runs, as the permission system needs to know it.

``analyze(command, cwd)`` parses the command with tree-sitter-bash and returns a
:class:`~hookcode.permission.ShellAnalysis`. The rule it follows:

    **A command is judged only if every node of its tree is in the understood subset.**

Anything else makes the command *opaque*, with a reason: the rules can deny an opaque command
(the patterns that could be seen are still reported) but never allow it. The understood subset:

* lists, pipelines, ``!``, subshells, ``{ }`` groups, if/while/until/for/select/case, comments;
* simple commands whose name is static, with static or expanded arguments, prefix assignments,
  redirections to files or file descriptors, here-strings, and here-documents whose delimiter
  is a plain word that bash and the parser end at the same line;
* words: literal text, quotes (``'' "" $''``), ``$name``/``${name}`` and ``${name OP text}``
  with a plain operand, ``$(...)``, backticks (re-read the way bash reads them, nested ones
  included), ``<(...)``/``>(...)``, arithmetic of numbers and operators only, globs, braces,
  tilde;
* assignments to variables that do not change what runs.

Outside the subset (opaque): parse errors and anything tree-sitter may read differently from
bash (carriage returns, NUL and control characters, invalid UTF-8, unusual blanks, ``ERROR`` or
``MISSING`` nodes, an expansion or backtick the parser took for text, here-documents it ends
elsewhere); expansions that assign, indirect, transform (``${x@P}``) or evaluate arithmetic;
arithmetic with names (``$((x))``, ``(( ))``, ``let``, ``[[ a -eq b ]]``, ``[[ -v a[i] ]]``: a
name's value is evaluated in turn and can run commands); command substitution inside a
here-document; assignments (``for``, ``read``, ``export``, ``declare``, ``printf -v``,
prefixes...) to variables that change what runs (``PATH``, ``HOME``, ``BASH_ENV``, ``IFS``,
``LD_*``, ``PYTHON*``, ``GIT_*``, ``PAGER``, ``EDITOR``, ...; see :mod:`.commands`); shell
options that read startup files or change parsing (``bash -i``, ``-l``, ``--rcfile``,
``shopt -s``, ``set -k``); functions, aliases, ``enable``, ``hash -p``, ``coproc``; a command
name or sub-command that is not static; strings run by a shell that is not bash or sh;
a path that a file command reads or writes and that cannot be resolved statically; commands
that write files named inside their input (``tar x``, ``unzip``, ``patch``).

What the analysis reports:

* ``commands``: one pattern per simple command anywhere in the tree (lists, pipelines,
  substitutions, bodies, strings given to ``bash -c``/``eval``/``trap``/``find -exec``/...),
  wrappers (sudo, env, timeout, nice, xargs, ...) seen through, the name unquoted and reduced to
  its basename when it lives in a system ``bin`` directory, redirections appended. A prefix
  assignment or a privilege wrapper keeps its full form as a pattern too.
* ``always``: the arity prefix (arity.py) of each pattern plus `` *``.
* ``outside_dirs``: directories outside the project that a path argument or redirection
  names (symlinks followed, dangling ones too; ``cd`` tracked conservatively).
* ``reads``: files whose contents a command shows or copies (``cat``, ``grep``, ``<``, ``cp``'s
  sources, any existing file given to an unknown program); ``DIR/**`` for a recursive read.
* ``writes``: files a command creates, changes or deletes (redirections, ``tee``, ``cp``/``mv``
  targets, ``rm``, ``git config`` ...); ``DIR/**`` for a recursive write.
* ``read_only``: the patterns proven read-only (a command of the read-only list, no option that
  writes or runs a program, no output redirection to a file).
* ``opaque`` and ``reasons``.
"""

from __future__ import annotations

import re
from typing import Any

from hookcode.permission import ShellAnalysis

from hookcode_policy_shell import arity
from hookcode_policy_shell.commands import (
    NONE,
    READ,
    READ_ONLY,
    SPECS,
    WRITE,
    sensitive_variable,
)
from hookcode_policy_shell.nodes import REDIRECTS
from hookcode_policy_shell.nodes import operator as _operator
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.paths import SPECIAL_FILES, Places
from hookcode_policy_shell.programs import judge
from hookcode_policy_shell.words import (
    BRACE,
    Word,
    ansi_c,
    arithmetic_is_static,
    backtick_body,
    double_quoted_problem,
    expansion_choices,
    expansion_problem,
    heredoc_body_problem,
    heredoc_delimiter,
    input_problem,
    unescape_double,
    unescape_word,
    unquoted_problem,
)
from hookcode_policy_shell.wrappers import DONE, WRAPPERS

__all__ = ["Analysis", "analyze", "parse"]

# fmt: off
#: directories whose programs are judged by their basename alone
SYSTEM_BIN = frozenset([
    "/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin",
    "/opt/homebrew/bin", "/usr/libexec", "/run/current-system/sw/bin",
])
OUTPUT_OPERATORS = frozenset((">", ">>", "&>", "&>>", ">|", ">&", "&>|"))
INPUT_OPERATORS = frozenset(("<",))
#: bash's reserved words: seen where a command name should be, the parser and bash disagree
RESERVED = frozenset([
    "{", "}", "!", "[[", "]]", "case", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "until", "while", "((", "))",
])
# fmt: on
#: wrappers whose own form stays a pattern beside what they run (they change privileges)
OUTER = frozenset({"sudo", "doas"})
#: in a loop body, what may assign a variable behind the analysis's back (or run code that
#: may): the builtins that assign by name, and sourcing a file
_MAY_ASSIGN = re.compile(
    r"\b(read|mapfile|readarray|printf|getopts|declare|typeset|local|export|unset|eval|source|"
    r"let|wait)\b|(^|[\s;&|(])\.\s"
)
_BLANKS = re.compile(r"[ \t\n]")
#: what tree-sitter-bash may skip as "extra" text besides blanks: a backslash before a blank
_DROPPED = re.compile(r"\\[ \t\v\f\r]")
#: combinations of a loop variable's values inside one word that are followed
MAX_COMBINATIONS = 64
#: how deeply strings given to shells are parsed
MAX_DEPTH = 8

_parser: Any = None


def parse(source: str) -> Any:
    """The tree-sitter tree of ``source`` (the parser is created on first use)."""
    global _parser
    if _parser is None:
        import tree_sitter
        import tree_sitter_bash

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _parser.parse(source.encode("utf-8", "surrogateescape"))


def analyze(command: str, cwd: str) -> ShellAnalysis:
    """Analyse ``command`` as bash would run it in ``cwd`` (see the module docstring)."""
    analysis = Analysis(cwd)
    if command.strip():
        analysis.source(command)
    return analysis.result()


# ---------------------------------------------------------------------------------------------
# line continuations
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# the analysis
# ---------------------------------------------------------------------------------------------


class Analysis:
    """One analysis: the state of the walk and what it found."""

    def __init__(self, cwd: str) -> None:
        self.places = Places(cwd, self.opaque)
        self.commands: dict[str, None] = {}
        self.always: dict[str, None] = {}
        self.reasons: dict[str, None] = {}
        self.read_only: dict[str, None] = {}
        #: inside ``find -exec``: find's starting points (what ``{}`` stands for)
        self.found: list[Word] | None = None
        #: loop variables whose values are known, inside their loops
        self.loops: dict[str, list[str]] = {}
        #: every simple command seen: (name, argument values; None for a dynamic one)
        self.seen: list[tuple[str, tuple[str | None, ...]]] = []

    def result(self) -> ShellAnalysis:
        return ShellAnalysis(
            commands=list(self.commands),
            always=list(self.always),
            outside_dirs=list(self.places.outside),
            opaque=bool(self.reasons),
            reasons=list(self.reasons),
            reads=list(self.places.reads),
            writes=list(self.places.writes),
            read_only=[p for p in self.read_only if p in self.commands],
        )

    def opaque(self, reason: str) -> None:
        self.reasons.setdefault(reason, None)

    # -- sources ----------------------------------------------------------------------------
    def source(self, source: str, depth: int = 0) -> None:
        """Analyse a command text (the whole command, or a string some command runs)."""
        if depth > MAX_DEPTH:
            self.opaque("commands nested too deeply to follow")
            return
        problem = input_problem(source)
        if problem is not None:
            self.opaque(f"the command may be read differently by bash: {problem}")
        joined, why = _join_continuations(source)
        if why is not None:
            self.opaque(f"the command may be read differently by bash: {why}")
        if joined is not None:
            source = joined
        tree = parse(source)
        root = tree.root_node
        if root.has_error:
            self.opaque("the command could not be parsed")
        elif _DROPPED.search(source):
            ignored = _ignored_text(root, source.encode("utf-8", "surrogateescape"))
            if ignored is not None:
                self.opaque(
                    f"the parser skipped {ignored!r}, which bash reads (a backslash before a "
                    "blank, say): they would not see the same command"
                )
        if depth == 0:
            self.block(root, depth)
            return
        # a string run by another shell (or eval'ed in this one): its `cd`s may or may not
        # outlive it, so afterwards every directory it may have left counts as well
        before = list(self.places.cwds)
        self.block(root, depth)
        self.places.cwds = list(dict.fromkeys([*before, *self.places.cwds]))

    def block(self, node: Any, depth: int) -> None:
        for child in node.children:
            self.statement(child, depth)

    def extract(self, node: Any, depth: int) -> None:
        """Walk what could not be judged for the commands that can still be seen in it (so
        deny rules apply to them): statements and substitutions anywhere below ``node``."""
        for child in node.children:
            kind = child.type
            if kind in ("command_substitution", "process_substitution"):
                self.scoped(child, depth)
            elif kind in _STATEMENTS and kind not in ("program", "list"):
                self.statement(child, depth)
            else:
                self.extract(child, depth)

    def scoped(self, node: Any, depth: int) -> None:
        """Statements whose ``cd`` ends with them (subshells, substitutions)."""
        saved = self.places.save()
        self.block(node, depth)
        self.places.restore(saved)

    # -- statements -------------------------------------------------------------------------
    def statement(self, node: Any, depth: int) -> None:
        kind = node.type
        if not node.is_named:
            if node.is_missing:
                self.opaque("the command could not be parsed (something is missing)")
            return
        if node.is_missing or kind == "ERROR":
            self.opaque("the command could not be parsed")
            self.extract(node, depth)  # still report what can be seen, for deny rules
            return
        handler = _STATEMENTS.get(kind)
        if handler is None:
            self.opaque(f"the shell construct {kind!r} is not understood")
            self.extract(node, depth)
            return
        handler(self, node, depth)

    def _program(self, node: Any, depth: int) -> None:
        self.block(node, depth)

    def _comment(self, node: Any, depth: int) -> None:
        pass

    def _pipeline(self, node: Any, depth: int) -> None:
        self.scoped(node, depth)

    def _subshell(self, node: Any, depth: int) -> None:
        self.scoped(node, depth)

    def _compound(self, node: Any, depth: int) -> None:
        first = node.children[0] if node.children else None
        if first is not None and first.type == "((":
            self.arithmetic_text(_text(node)[2:-2], "an arithmetic command (( ))")
            return
        self.block(node, depth)

    def _redirected(self, node: Any, depth: int) -> None:
        for child in node.children:
            if child.type in REDIRECTS:
                self.redirect(child, depth)
            elif node.field_name_for_child(node.children.index(child)) == "body" or child.is_named:
                self.statement(child, depth)

    def _for(self, node: Any, depth: int) -> None:
        """``for NAME in WORDS``: when the words are static (globs expanded as bash will),
        ``$NAME`` in the body stands for each of them, so the paths it names are checked."""
        name = ""
        words: list[Word] = []
        body: list[Any] = []
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            if field == "variable":
                name = _text(child)
                self.assigns(name, "a for loop")
            elif field == "value":
                words.append(self.word(child, depth))
            elif child.is_named:
                body.append(child)
        bound = self.loop_values(name, words, body) if name else None
        saved = self.loops.get(name)
        if bound is not None:
            self.loops[name] = bound
        else:
            self.loops.pop(name, None)
        try:
            for child in body:
                self.statement(child, depth)
        finally:
            self.loops.pop(name, None)
            if saved is not None:
                self.loops[name] = saved

    def loop_values(self, name: str, words: list[Word], body: list[Any]) -> list[str] | None:
        """The values a loop variable takes, or None when they are not known statically or
        the body may assign the variable (or run code that may)."""
        if len(self.places.cwds) != 1 or not words:
            return None
        text = " ".join(_text(child) for child in body)
        assigns_name = re.compile(r"(^|[\s;&|(])" + re.escape(name) + r"(\[[^]]*\])?\+?=")
        if _MAY_ASSIGN.search(text) or assigns_name.search(text):
            return None
        values: list[str] = []
        for w in words:
            if w.value is None:
                if w.choices is None:
                    return None
                values += w.values()
            elif w.glob:
                values += self.places.expand_glob(self.places.cwds[0], w.value, w.mask)[1]
            elif w.expands:
                return None
            else:
                values.append(w.value)
        return values

    def _c_for(self, node: Any, depth: int) -> None:
        self.opaque("an arithmetic for loop evaluates names (for (( ... )))")
        for child in node.children:
            if child.type in ("do_group", "compound_statement"):
                self.statement(child, depth)

    def _case(self, node: Any, depth: int) -> None:
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            if field == "value":
                self.word(child, depth)
            elif child.type == "case_item":
                for j, part in enumerate(child.children):
                    if child.field_name_for_child(j) == "value":
                        self.word(part, depth)
                    elif part.is_named:
                        self.statement(part, depth)
            elif child.is_named:
                self.statement(child, depth)

    def _function(self, node: Any, depth: int) -> None:
        name = node.child_by_field_name("name")
        self.opaque(f"defines a function ({_text(name) if name else '?'})")
        saved = self.places.save()
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, depth)
        self.places.restore(saved)

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

    # -- assignments ------------------------------------------------------------------------
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

    def arithmetic_text(self, inner: str, where: str) -> None:
        if not arithmetic_is_static(inner):
            self.opaque(
                f"{where} holds names or expansions: arithmetic evaluates a name's value in "
                "turn, which can run commands"
            )

    # -- words ------------------------------------------------------------------------------
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

    # -- redirections -----------------------------------------------------------------------
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

    # -- simple commands --------------------------------------------------------------------
    def _command(self, node: Any, depth: int) -> None:
        words: list[Word] = []
        prefix: list[str] = []
        redirects: list[Any] = []
        last_end = -1
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            kind = child.type
            if field == "name":
                inner = child.named_children
                if len(inner) != 1:
                    self.opaque(f"the command name {_text(child)!r} is not understood")
                    words.append(Word(_text(child), None, node=child))
                else:
                    words.append(self.word(inner[0], depth))
            elif field == "argument":
                if not child.is_named:
                    self.opaque(f"the argument {_text(child)!r} is not understood")
                    words.append(Word(_text(child), None, node=child))
                else:
                    words.append(self.word(child, depth))
            elif kind == "variable_assignment":
                self.assignment(child, depth, "a prefix assignment", prefix=True)
                prefix.append(" ".join(_text(child).split()))
            elif kind in REDIRECTS:
                if (
                    words
                    and child.start_byte == last_end
                    and re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", words[-1].text)
                ):
                    self.opaque(f"a named file descriptor ({words[-1].text}) assigns a variable")
                redirects.append(child)
                self.redirect(child, depth)
            elif child.is_named:
                self.opaque(f"the command part {_text(child)!r} ({kind}) is not understood")
            last_end = child.end_byte
        redirects += _enclosing_redirects(node)
        if not words:
            if prefix:
                self.emit_text(node)
            return
        self.simple(words, prefix, redirects, depth)

    def simple(
        self,
        words: list[Word],
        assignments: list[str],
        redirects: list[Any],
        depth: int,
        *,
        outer: list[str] | None = None,
        tail_dynamic: bool = False,
    ) -> None:
        """Judge one simple command (``words[0]`` is its name)."""
        outer = list(outer or [])
        keep_outer = bool(assignments)
        redirect_text = [_redirect_text(r) for r in redirects]
        writes_file = any(_writes_file(r) for r in redirects)
        while True:
            name = self.name_of(words[0], words, redirect_text)
            if name is None:
                return
            handler = WRAPPERS.get(name)
            if handler is None:
                break
            step = handler(self, words, depth)
            if step is None:
                break  # the wrapper runs nothing else: it is the command
            if step is DONE:
                # the rest was parsed as commands of its own (``bash -c``, ``eval``, ...);
                # a privilege or environment change keeps the whole form as a pattern too
                if keep_outer or name in OUTER:
                    spelled = [_norm_word(w, i == 0) for i, w in enumerate(words)]
                    head = [*assignments, *outer]
                    self.commands.setdefault(" ".join([*head, *spelled, *redirect_text]), None)
                    self.always.setdefault(" ".join([*head, spelled[0]]) + " *", None)
                return
            start, flags = step
            if start >= len(words):
                break
            if "outer" in flags:
                keep_outer = True
            if "tail" in flags:
                tail_dynamic = True
            outer += [_norm_word(w, i == 0) for i, w in enumerate(words[:start])]
            words = words[start:]
        self.emit(
            name,
            words,
            outer if keep_outer else [],
            assignments,
            redirect_text,
            depth,
            tail_dynamic=tail_dynamic,
            writes_file=writes_file,
        )

    def name_of(self, w: Word, words: list[Word], redirect_text: list[str]) -> str | None:
        """The normalised command name, or None (after marking opaque and emitting the raw
        text as a pattern) when it cannot be known."""
        if w.value is None or w.expands or not w.value:
            self.opaque(f"the command name {w.text!r} is not static")
            text = " ".join([*(x.text for x in words), *redirect_text])
            self.commands.setdefault(" ".join(text.split()), None)
            return None
        value = w.value
        if value in RESERVED and w.value == w.text:
            self.opaque(f"{value!r} where a command name should be: the parser misread the command")
            self.commands.setdefault(" ".join(x.text for x in words), None)
            return None
        if "/" in value:
            directory, _, base = value.rpartition("/")
            if not base:
                self.opaque(f"the command name {w.text!r} is not a program")
                self.commands.setdefault(" ".join(x.text for x in words), None)
                return None
            if (directory or "/") not in SYSTEM_BIN:
                # a program of its own: judged by its basename AND by its spelled form
                spelled = " ".join([value, *(x.pattern_text() for x in words[1:]), *redirect_text])
                self.commands.setdefault(spelled, None)
                self.always.setdefault(value + " *", None)
                self.path_argument(w, READ)
            return base
        return value

    def emit(
        self,
        name: str,
        words: list[Word],
        outer: list[str],
        assignments: list[str],
        redirect_text: list[str],
        depth: int,
        *,
        tail_dynamic: bool = False,
        writes_file: bool = False,
    ) -> None:
        args = words[1:]
        values: list[str | None] = [w.value if not w.expands else None for w in args]
        self.seen.append((name, tuple(w.value for w in args)))
        tokens: list[str | None] = [name, *values]
        if tail_dynamic:
            tokens.append(None)
        for index, token in enumerate(tokens):
            if token is not None:
                continue
            # the first dynamic token: after it, what the command is has been decided
            if arity.decisive(tokens, index):
                shown = args[index - 1].text if index - 1 < len(args) else "(appended arguments)"
                self.opaque(f"{shown} may decide what {name!r} does and is not static")
            break
        safe = judge(self, name, words, depth)
        if name in ("cd", "pushd", "popd"):
            self.places.change_directory(name, args)
            return
        spec = SPECS.get(name)
        if tail_dynamic and spec is not None and spec.positional != NONE:
            self.opaque(f"xargs gives {name!r} arguments that cannot be resolved statically")
        static_prefix: list[str] = []
        for token in tokens:
            if token is None:
                break
            static_prefix.append(token)
        keep = arity.prefix(static_prefix) if static_prefix else [name]
        inner = " ".join([name, *(w.pattern_text() for w in args), *redirect_text])
        self.commands.setdefault(inner, None)
        self.always.setdefault(" ".join(keep) + " *", None)
        if (
            safe
            and name in READ_ONLY
            and not writes_file
            and not tail_dynamic
            and all(self.harmless(w) for w in args)
        ):
            self.read_only.setdefault(inner, None)
        if outer or assignments:
            head = [*assignments, *outer]
            self.commands.setdefault(" ".join([*head, inner]), None)
            self.always.setdefault(" ".join([*head, *keep]) + " *", None)

    # -- what particular commands do --------------------------------------------------------

    # -- paths ------------------------------------------------------------------------------
    def path_argument(
        self, w: Word, role: str, *, recursive: bool = False, quiet: bool = False
    ) -> None:
        """Check one path a command reads or writes (see :meth:`Places.argument`). Inside a
        ``find -exec``, ``{}`` stands for every file below find's starting points."""
        if w.value is None and w.text == "{}" and self.found is not None:
            for start in self.found:
                self.places.argument(start, role, recursive=True, quiet=quiet)
            return
        self.places.argument(w, role, recursive=recursive, quiet=quiet)


# ---------------------------------------------------------------------------------------------
# statement dispatch
# ---------------------------------------------------------------------------------------------

_STATEMENTS: dict[str, Any] = {
    "program": Analysis._program,
    "comment": Analysis._comment,
    "list": Analysis._program,
    "pipeline": Analysis._pipeline,
    "subshell": Analysis._subshell,
    "compound_statement": Analysis._compound,
    "negated_command": Analysis._program,
    "redirected_statement": Analysis._redirected,
    "if_statement": Analysis._program,
    "elif_clause": Analysis._program,
    "else_clause": Analysis._program,
    "while_statement": Analysis._program,
    "do_group": Analysis._program,
    "for_statement": Analysis._for,
    "c_style_for_statement": Analysis._c_for,
    "case_statement": Analysis._case,
    "function_definition": Analysis._function,
    "test_command": Analysis._test,
    "declaration_command": Analysis._declaration,
    "unset_command": Analysis._unset,
    "variable_assignment": Analysis._assignment,
    "variable_assignments": Analysis._assignments,
    "command": Analysis._command,
}


# -- helpers --------------------------------------------------------------------------------


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


def _writes_file(node: Any) -> bool:
    """Whether a redirection writes a file (not a descriptor, not /dev/null)."""
    if node.type != "file_redirect":
        return False
    operator = _operator(node)
    if operator not in OUTPUT_OPERATORS:
        return False
    destination = node.child_by_field_name("destination")
    if destination is None:
        return False
    target = _text(destination)
    if operator == ">&" and (destination.type == "number" or target == "-"):
        return False
    return target.strip("'\"") not in SPECIAL_FILES


def _norm_word(w: Word, first: bool) -> str:
    if first and w.value:
        return w.value.rpartition("/")[2] if "/" in w.value else w.value
    return w.pattern_text()


def _redirect_text(node: Any) -> str:
    if node.type == "heredoc_redirect":
        data = node.text
        for child in node.children:
            if child.type == "heredoc_body":
                data = data[: child.start_byte - node.start_byte]
                break
        text = data.decode("utf-8", "surrogateescape")
    else:
        text = _text(node)
    return " ".join(text.split())


def _enclosing_redirects(node: Any) -> list[Any]:
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
