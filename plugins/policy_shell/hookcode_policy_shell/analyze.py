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
)
from hookcode_policy_shell.expand import Expansions
from hookcode_policy_shell.nodes import REDIRECTS
from hookcode_policy_shell.nodes import enclosing_redirects as _enclosing_redirects
from hookcode_policy_shell.nodes import norm_word as _norm_word
from hookcode_policy_shell.nodes import redirect_text as _redirect_text
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.nodes import writes_file as _writes_file
from hookcode_policy_shell.paths import Places
from hookcode_policy_shell.programs import judge
from hookcode_policy_shell.redirects import Redirections
from hookcode_policy_shell.source import parse, read_source
from hookcode_policy_shell.statements import Statements
from hookcode_policy_shell.words import (
    Word,
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
#: combinations of a loop variable's values inside one word that are followed
MAX_COMBINATIONS = 64
#: how deeply strings given to shells are parsed
MAX_DEPTH = 8


def analyze(command: str, cwd: str) -> ShellAnalysis:
    """Analyse ``command`` as bash would run it in ``cwd`` (see the module docstring)."""
    analysis = Analysis(cwd)
    if command.strip():
        analysis.source(command)
    return analysis.result()


# ---------------------------------------------------------------------------------------------
# line continuations
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# the analysis
# ---------------------------------------------------------------------------------------------


class Analysis(Expansions, Redirections, Statements):
    """One analysis: the state of the walk and what it found (words: :class:`Expansions`,
    redirections: :class:`Redirections`, assignments and tests: :class:`Statements`)."""

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
        root, problems = read_source(source)
        for problem in problems:
            self.opaque(problem)
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

    # -- assignments ------------------------------------------------------------------------
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
