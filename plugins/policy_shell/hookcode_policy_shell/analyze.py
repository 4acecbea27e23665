"""The shell analyser: what a bash command runs, as the permission system needs to know it.

``analyze(command, cwd)`` parses the command with tree-sitter-bash and returns a
:class:`~hookcode.permission.ShellAnalysis`:

* ``commands``: one pattern per simple command anywhere in the tree (lists, pipelines,
  subshells, ``$(...)`` and backticks, ``<(...)``/``>(...)``, bodies of if/while/for/case and
  functions, statement-level assignments, ``export``/``declare``/``unset``), de-duplicated, in
  order; ``cd`` is left out. Wrappers (sudo, doas, env, nohup, timeout, nice, time, command,
  exec, builtin, stdbuf, ionice, setsid, coproc, xargs, watch) are seen through, and the
  strings given to ``bash -c``/``sh -c``/``zsh -c``/``eval``/``trap``/``sudo -s``/``env -S``,
  alias values, here-documents and here-strings fed to a shell, and the commands of
  ``find -exec/-execdir/-ok/-okdir`` are parsed as commands too. The pattern is the command
  with its wrappers stripped, its name unquoted (``r""m``, ``\\rm``, ``'rm'``, ``$'\\x72m'``
  are all ``rm``) and reduced to its basename when it lives in a system ``bin`` directory
  (``/bin/rm`` -> ``rm``), its static arguments unquoted (unless they hold blanks or shell
  metacharacters), and its redirections appended. ``sudo``/``doas`` and environment
  assignments (``FOO=1 cmd``, ``env FOO=1 cmd``) change what a command does, so their full
  form is a pattern as well; a command run by a path outside the system directories
  (``./ls``) keeps its spelled form as a pattern beside the basename one.
* ``always``: the arity prefix (arity.py) of each pattern plus `` *``.
* ``outside_dirs``: for ``cd pushd rm cp mv mkdir touch chmod chown cat tee`` every argument
  not starting with ``-`` (nor ``+`` for chmod; the value of ``--opt=value``), and every
  redirection target, resolved (symlinks, ``..``; a missing path by its nearest existing
  ancestor) against every directory the command may be in by then (``cd`` is tracked
  conservatively: each ``cd`` adds a possible directory, it never removes one), when it is
  not inside the project (cwd, or its git worktree unless that is ``/``): the directory
  itself, or its parent for a file.
* ``opaque`` + ``reasons``: whatever could not be seen through: a parse error, a command name
  that is not static (``$X``, ``$(echo rm)``, a glob or brace expansion), a dynamic token
  that decides the subcommand (``git $X``), a path of a file command or a redirection that
  cannot be resolved statically (``rm $X``, ``> $OUT``, ``~nobody``, ``{a,b}``), function and
  alias definitions, a shell reading commands from its standard input, a ``-c`` string or an
  ``eval`` that is not static, ``git -c``, here-documents with expansions fed to a shell.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from hookcode.configfiles import find_worktree
from hookcode.fileio import realpath_nearest
from hookcode.permission import ShellAnalysis

from hookcode_policy_shell import arity

__all__ = ["FILE_COMMANDS", "analyze", "parse", "writes_output"]

#: commands whose path arguments are checked against the project
FILE_COMMANDS = frozenset(
    ["cd", "pushd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "tee"]
)
#: shells whose ``-c`` string (or here-document) is parsed as commands
SHELLS = frozenset(["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"])
#: directories whose programs are judged by their basename alone
SYSTEM_BIN = frozenset(
    [
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/usr/local/bin",
        "/usr/local/sbin",
        "/opt/homebrew/bin",
        "/usr/libexec",
        "/run/current-system/sw/bin",
    ]
)
#: redirection targets that are never "outside the project"
SPECIAL_FILES = frozenset(
    [
        "/dev/null",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/stdin",
        "/dev/tty",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
    ]
)
OUTPUT_OPERATORS = frozenset((">", ">>", "&>", "&>>", ">|", "<>", ">&"))
#: characters that make an unquoted static argument keep its quotes in a pattern
_KEEP_QUOTED = re.compile(r"[\s;&|<>()`$\"'\\*?\[\]{}#~!]")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_GLOB = re.compile(r"[*?\[]")
#: how deeply strings given to shells are parsed
MAX_DEPTH = 8
#: how many possible working directories are followed; past that, only the first ones are,
#: and a relative path that climbs (``..``) is opaque (or any relative path, when one of the
#: dropped directories was outside the project)
MAX_CWDS = 8

_parser: Any = None


def parse(source: str) -> Any:
    """The tree-sitter tree of ``source`` (the parser is created on first use)."""
    global _parser
    if _parser is None:
        import tree_sitter
        import tree_sitter_bash

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _parser.parse(source.encode("utf-8", "surrogateescape"))


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# words: static values
# ---------------------------------------------------------------------------------------------


class Word:
    """One token of a command: its source text, and its value when it is static.

    ``mask`` is the value with every quoted or escaped character replaced by NUL, so glob,
    brace and tilde characters that the shell would expand can be told apart."""

    __slots__ = ("mask", "node", "text", "value")

    def __init__(self, text: str, value: str | None, mask: str = "", node: Any = None) -> None:
        self.text = text
        self.value = value
        self.mask = mask
        self.node = node

    @property
    def static(self) -> bool:
        return self.value is not None

    @property
    def expands(self) -> bool:
        """Glob, brace or tilde expansion would change the value."""
        m = self.mask
        return bool(_GLOB.search(m) or _BRACE.search(m) or m.startswith("~"))

    def pattern_text(self) -> str:
        if self.value is None:
            return self.text
        if self.value and not _KEEP_QUOTED.search(self.value):
            return self.value
        return self.text


def _unescape_word(text: str) -> tuple[str, str]:
    out: list[str] = []
    mask: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            mask.append("\0")
            i += 2
            continue
        out.append(c)
        mask.append(c)
        i += 1
    return "".join(out), "".join(mask)


def _unescape_double(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
         "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


def _ansi_c(body: str) -> str | None:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _ANSI:
            out.append(_ANSI[e])
            i += 2
        elif e in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(rf"[0-9a-fA-F]{{1,{limit}}}", body[i + 2 :])
            if not m:
                return None
            out.append(chr(int(m.group(0), 16)))
            i += 2 + len(m.group(0))
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif e == "c":
            return None  # control characters: not worth guessing
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


def word(node: Any) -> Word:
    """The :class:`Word` of an argument / command-name node."""
    value, mask = _value(node)
    return Word(_text(node), value, mask if value is not None else "", node)


def _value(node: Any) -> tuple[str | None, str]:
    kind = node.type
    if kind == "word":
        return _unescape_word(_text(node))
    if kind == "number":
        text = _text(node)
        return text, text
    if kind == "raw_string":
        body = _text(node)[1:-1]
        return body, "\0" * len(body)
    if kind == "string":
        parts: list[str] = []
        for child in node.named_children:
            if child.type != "string_content":
                return None, ""
            parts.append(_unescape_double(_text(child)))
        body = "".join(parts)
        return body, "\0" * len(body)
    if kind == "ansi_c_string":
        decoded = _ansi_c(_text(node)[2:-1])
        if decoded is None:
            return None, ""
        return decoded, "\0" * len(decoded)
    if kind in ("concatenation", "command_name"):
        values: list[str] = []
        masks: list[str] = []
        for child in node.named_children:
            value, mask = _value(child)
            if value is None:
                return None, ""
            values.append(value)
            masks.append(mask)
        if kind == "concatenation" and len(node.children) != len(node.named_children):
            return None, ""  # anonymous pieces we do not model
        return "".join(values), "".join(masks)
    return None, ""


# ---------------------------------------------------------------------------------------------
# the analysis
# ---------------------------------------------------------------------------------------------


def _join_continuations(source: str) -> str | None:
    """``source`` with every backslash-newline the shell would remove removed (tree-sitter
    splits ``r\\<newline>m`` into two words where bash sees ``rm``); None when there is none."""
    if "\\\n" not in source:
        return None
    tree = parse(source)
    data = source.encode("utf-8", "surrogateescape")
    cut: list[int] = []
    for m in re.finditer(rb"(\\+)\n", data):
        if len(m.group(1)) % 2 == 0:
            continue
        at = m.end() - 2
        node = tree.root_node.descendant_for_byte_range(at, at + 1)
        skip = False
        while node is not None:
            if node.type in ("raw_string", "comment", "heredoc_body", "ansi_c_string"):
                skip = True
                break
            node = node.parent
        if not skip:
            cut.append(at)
    if not cut:
        return None
    out = bytearray()
    last = 0
    for at in cut:
        out += data[last:at]
        last = at + 2
    out += data[last:]
    return out.decode("utf-8", "surrogateescape")


class _Analysis:
    def __init__(self, cwd: str) -> None:
        self.cwd = str(realpath_nearest(Path(os.path.abspath(cwd))))
        self.worktree = str(find_worktree(Path(self.cwd)))
        #: the directories the command may be in at this point of the walk
        self.cwds: list[str] = [self.cwd]
        self.cwd_known = True
        self.overflow = False
        self._resolved: dict[tuple[str, str], list[str]] = {}
        self.commands: dict[str, None] = {}
        self.always: dict[str, None] = {}
        self.outside: dict[str, None] = {}
        self.reasons: dict[str, None] = {}

    def result(self) -> ShellAnalysis:
        return ShellAnalysis(
            commands=list(self.commands),
            always=list(self.always),
            outside_dirs=list(self.outside),
            opaque=bool(self.reasons),
            reasons=list(self.reasons),
        )

    def opaque(self, reason: str) -> None:
        self.reasons.setdefault(reason, None)

    # -- parsing --------------------------------------------------------------------------
    def source(self, source: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            self.opaque("commands nested too deeply to follow")
            return
        joined = _join_continuations(source)
        if joined is not None:
            source = joined
        tree = parse(source)
        if tree.root_node.has_error:
            self.opaque("the command could not be parsed")
        if depth == 0:
            self.walk(tree.root_node, depth)
            return
        # a string run by another shell (or eval'ed in this one): its `cd`s may or may not
        # outlive it, so afterwards every directory it may have left counts as well
        before = list(self.cwds)
        self.walk(tree.root_node, depth)
        self.cwds = _union(before, self.cwds)

    def walk(self, node: Any, depth: int) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, depth)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            self.opaque(f"defines a function ({_text(name) if name else '?'})")
        elif kind in ("declaration_command", "unset_command"):
            self.emit_text(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            parent = node.parent
            if parent is not None and parent.type not in (
                "command",
                "declaration_command",
                "variable_assignments",
            ):
                self.emit_text(node)
        elif kind == "file_redirect":
            self.redirect(node)
        elif kind in ("ERROR",) or node.is_missing:
            self.opaque("the command could not be parsed")
        if kind in _SCOPES:
            # a subshell (or a pipeline's part): its `cd` ends with it
            saved = (list(self.cwds), self.cwd_known)
            for child in node.children:
                self.walk(child, depth)
            self.cwds, self.cwd_known = saved
            return
        for child in node.children:
            self.walk(child, depth)

    def emit_text(self, node: Any) -> None:
        """A statement that is not a simple command but changes state (``export PATH=...``,
        ``X=1``): its text is a pattern of its own."""
        text = " ".join(_text(node).split())
        self.commands.setdefault(text, None)
        first = text.split(" ", 1)[0]
        self.always.setdefault(first if "=" in first else first + " *", None)

    # -- simple commands ------------------------------------------------------------------
    def command(self, node: Any, depth: int) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        redirects: list[Any] = []
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            if field == "name" or field == "argument":
                words.append(word(child))
            elif child.type == "variable_assignment":
                assignments.append(" ".join(_text(child).split()))
            elif field == "redirect" or child.type.endswith("redirect"):
                redirects.append(child)
        redirects += _enclosing_redirects(node)
        if not words:
            return
        self.simple(words, assignments, redirects, depth, wrapped=bool(assignments))

    def simple(
        self,
        words: list[Word],
        assignments: list[str],
        redirects: list[Any],
        depth: int,
        *,
        wrapped: bool = False,
        outer: list[str] | None = None,
        tail_dynamic: bool = False,
    ) -> None:
        """Judge one simple command (``words[0]`` is its name)."""
        outer = list(outer or [])
        keep_outer = wrapped
        redirect_text = [_redirect_text(r) for r in redirects]
        while True:
            name_word = words[0]
            name = self.name_of(name_word, words, redirect_text)
            if name is None:
                return
            handler = _WRAPPERS.get(name)
            if handler is None:
                break
            step = handler(self, words, depth)
            if step is None:
                break  # the wrapper runs nothing else: it is the command
            if step is _DONE:
                # the rest was parsed as commands of its own (``bash -c``, ``eval``, ...);
                # a privilege or environment change keeps the whole form as a pattern too
                if keep_outer or assignments or name in _OUTER:
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
        self.emit(name, words, outer if keep_outer else [], assignments, redirect_text,
                  depth, tail_dynamic=tail_dynamic)  # fmt: skip

    def name_of(self, w: Word, words: list[Word], redirect_text: list[str]) -> str | None:
        """The normalised command name, or None (after marking opaque and emitting the raw
        text as a pattern) when it cannot be known."""
        if w.value is None or w.expands or not w.value:
            self.opaque(f"the command name {w.text!r} is not static")
            text = " ".join([*(x.text for x in words), *redirect_text])
            self.commands.setdefault(" ".join(text.split()), None)
            return None
        value = w.value
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
    ) -> None:
        args = words[1:]
        tokens: list[str | None] = [name, *(w.value if not w.expands else None for w in args)]
        if tail_dynamic:
            tokens.append(None)
        for index, token in enumerate(tokens):
            if token is None and arity.decisive(tokens, index):
                shown = args[index - 1].text if index - 1 < len(args) else "(appended arguments)"
                self.opaque(f"{shown} may decide what {name!r} does and is not static")
                break
        self.special(name, words, redirect_text, depth)
        if name in FILE_COMMANDS:
            self.paths(name, args)
            if tail_dynamic and name != "cd":
                self.opaque(f"xargs gives {name!r} paths that cannot be resolved statically")
        if name == "cd":
            return
        static_prefix = []
        for token in tokens:
            if token is None:
                break
            static_prefix.append(token)
        keep = arity.prefix(static_prefix) if static_prefix else [name]
        inner = " ".join([name, *(w.pattern_text() for w in args), *redirect_text])
        self.commands.setdefault(inner, None)
        self.always.setdefault(" ".join(keep) + " *", None)
        if outer or assignments:
            head = [*assignments, *outer]
            self.commands.setdefault(" ".join([*head, inner]), None)
            self.always.setdefault(" ".join([*head, *keep]) + " *", None)

    def special(self, name: str, words: list[Word], redirect_text: list[str], depth: int) -> None:
        """Commands that run other commands in ways that are not wrappers."""
        args = words[1:]
        if name == "find":
            self.find_exec(words, depth)
        elif name == "alias":
            for w in args:
                if w.value is not None and "=" in w.value:
                    self.opaque("defines an alias")
                    self.source(w.value.split("=", 1)[1], depth + 1)
                elif w.value is None:
                    self.opaque("defines an alias")
        elif name == "git":
            for w in args:
                v = w.value or ""
                if not v.startswith("-"):
                    break
                if v in ("-c", "--config-env") or v.startswith(("--exec-path", "--config-env=")):
                    self.opaque("git -c/--config-env/--exec-path can run arbitrary commands")
                    break
        elif name == "trap" and args:
            action = args[0]
            if action.value is None:
                self.opaque("trap with an action that is not static")
            elif not action.value.startswith("-"):
                self.source(action.value, depth + 1)
        elif name in SHELLS:
            self.shell_stdin(name, words, depth)
        elif name in ("source", "."):
            pass  # the script is the command: judged by its pattern

    def shell_stdin(self, name: str, words: list[Word], depth: int) -> None:
        """A shell without ``-c``: a script file is a command like any other; commands read
        from a here-document or here-string are parsed; from anywhere else: opaque."""
        script = False
        skip = False
        for w in words[1:]:
            if skip:
                skip = False
                continue
            v = w.value
            if v is None:
                script = True
                break
            if v in ("-o", "-O", "+O", "+o", "--rcfile", "--init-file"):
                skip = True
                continue
            if v.startswith(("-", "+")) and v not in ("-", "--"):
                if v.startswith("-") and not v.startswith("--") and "s" in v[1:]:
                    break  # -s: commands from stdin
                continue
            if v == "--":
                continue
            script = v != "-"
            break
        if script:
            return
        bodies = self._stdin_bodies(words)
        if bodies is None:
            self.opaque(f"{name} reads commands from its standard input")
            return
        for body in bodies:
            self.source(body, depth + 1)

    def _stdin_bodies(self, words: list[Word]) -> list[str] | None:
        node = words[0].node
        command = node.parent if node is not None else None
        if command is None:
            return None
        redirects = [c for c in command.children if c.type.endswith("redirect")]
        parent = command.parent
        if parent is not None and parent.type == "redirected_statement":
            redirects += [c for c in parent.children if c.type.endswith("redirect")]
        bodies: list[str] = []
        for r in redirects:
            if r.type == "herestring_redirect":
                target = r.named_children[-1] if r.named_children else None
                w = word(target) if target is not None else None
                if w is None or w.value is None:
                    self.opaque("a here-string that is not static is fed to a shell")
                    bodies.append(_text(target) if target is not None else "")
                else:
                    bodies.append(w.value)
            elif r.type == "heredoc_redirect":
                for child in r.named_children:
                    if child.type == "heredoc_body":
                        if any(c.type != "heredoc_content" for c in child.named_children):
                            self.opaque("a here-document with expansions is fed to a shell")
                        bodies.append(_text(child))
        return bodies or None

    def find_exec(self, words: list[Word], depth: int) -> None:
        i = 1
        while i < len(words):
            v = words[i].value
            if v in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(words) and words[j].value not in (";", "+"):
                    j += 1
                inner = [
                    Word(w.text, None) if w.value is None or "{}" in w.value else w
                    for w in words[i + 1 : j]
                ]
                if inner:
                    self.simple(inner, [], [], depth)
                i = j + 1
            else:
                i += 1

    # -- paths ----------------------------------------------------------------------------
    def paths(self, name: str, args: list[Word]) -> None:
        options_done = False
        targets: list[Word] = []
        for w in args:
            v = w.value
            if w.node is not None and w.node.type == "process_substitution":
                continue
            if v is not None and not options_done:
                if v == "--":
                    options_done = True
                    continue
                if v.startswith("-") and v != "-":
                    if v.startswith("--") and "=" in v:
                        _, _, rest = v.partition("=")
                        targets.append(Word(rest, rest, w.mask.partition("=")[2]))
                    elif name in ("cp", "mv") and v.startswith("-t") and len(v) > 2:
                        targets.append(Word(v[2:], v[2:], w.mask[2:]))
                    continue
                if name == "chmod" and v.startswith("+"):
                    continue
            targets.append(w)
        if name in ("cd", "pushd"):
            if not targets:
                if name == "cd":
                    self.chdir(Word("~", "~", "~"))
                return
            if targets[0].value == "-":
                self.cwd_known = False
                self.opaque("cd - goes to a directory the analysis does not know")
                return
            self.check_path(targets[0])
            node = targets[0].node
            self.chdir(targets[0], node.parent if node is not None else None)
            return
        for w in targets:
            if w.value == "-" and name in ("cat", "tee"):
                continue
            self.check_path(w)

    def chdir(self, w: Word, node: Any = None) -> None:
        """Follow ``cd``: an unconditional ``cd`` to an existing directory replaces the
        possible directories; any other (conditional, or to a directory that may not exist)
        adds to them."""
        if w.value is None or (w.expands and not w.mask.startswith("~")):
            self.cwd_known = False
            self.opaque(f"cd {w.text}: the directory is not known statically")
            return
        value = _expand_tilde(w)
        if value is None:
            self.cwd_known = False
            self.opaque(f"cd {w.text}: the directory is not known statically")
            return
        new = [self.resolve(base, value)[0] for base in self.cwds]
        if all(os.path.isdir(p) for p in new) and _unconditional(node):
            self.cwds = list(dict.fromkeys(new))
        else:
            self.cwds = _union(self.cwds, new)
        if len(self.cwds) > MAX_CWDS:
            dropped = self.cwds[MAX_CWDS:]
            self.cwds = self.cwds[:MAX_CWDS]
            self.overflow = True
            if not all(self.inside(d) for d in dropped):
                self.cwd_known = False

    def redirect(self, node: Any) -> None:
        operator = ""
        for child in node.children:
            if not child.is_named:
                operator = _text(child)
        for i, child in enumerate(node.children):
            if node.field_name_for_child(i) != "destination":
                continue
            if child.type == "process_substitution":
                continue  # `> >(cmd)`: the commands inside are walked like any other
            if child.type == "number" and operator in (">&", "<&"):
                continue  # a file descriptor
            w = word(child)
            if w.value == "-" and operator in (">&", "<&"):
                continue
            self.check_path(w)

    def check_path(self, w: Word) -> None:
        if w.value is None:
            self.opaque(f"the path {w.text} cannot be resolved statically")
            return
        value = w.value
        if not value:
            return
        if _BRACE.search(w.mask):
            self.opaque(f"the path {w.text} uses brace expansion")
            return
        if w.mask.startswith("~"):
            expanded = _expand_tilde(w)
            if expanded is None:
                self.opaque(f"the path {w.text} cannot be resolved statically")
                return
            value = expanded
        directory_only = False
        glob = _GLOB.search(w.mask)
        if glob:
            head = value[: glob.start()]
            value = head if head.endswith("/") or not head else os.path.dirname(head)
            value = value or "."
            directory_only = True
        if value in SPECIAL_FILES:
            return
        if not value.startswith("/"):
            if not self.cwd_known:
                self.opaque(
                    f"the path {w.text} is relative to a directory the analysis does not know"
                )
            elif self.overflow and ".." in value.split("/"):
                self.opaque(f"the path {w.text} climbs out of one of too many directories")
        for base in self.cwds:
            for resolved in self.resolve(base, value):
                if self.inside(resolved) or resolved in SPECIAL_FILES:
                    continue
                if directory_only or os.path.isdir(resolved):
                    directory = resolved
                else:
                    directory = os.path.dirname(resolved)
                self.outside.setdefault(directory, None)

    def inside(self, path: str) -> bool:
        if _within(path, self.cwd):
            return True
        return self.worktree != "/" and _within(path, self.worktree)

    def resolve(self, base: str, value: str) -> list[str]:
        """Where ``value`` may point from ``base``: symlinks followed, and ``..`` taken both
        physically and lexically (a missing directory followed by ``..``); the physical one
        first."""
        key = (base, value)
        found = self._resolved.get(key)
        if found is None:
            joined = os.path.join(base, value)
            first = os.path.normpath(str(realpath_nearest(Path(joined))))
            second = os.path.normpath(str(realpath_nearest(Path(os.path.normpath(joined)))))
            found = self._resolved[key] = [first] if first == second else [first, second]
        return found


# -- helpers --------------------------------------------------------------------------------


def _expand_tilde(w: Word) -> str | None:
    value = w.value or ""
    if not w.mask.startswith("~"):
        return value
    expanded = os.path.expanduser(value)
    if expanded.startswith("~"):
        return None
    return expanded


def _within(path: str, directory: str) -> bool:
    if directory == "/":
        return path.startswith("/")
    return path == directory or path.startswith(directory + "/")


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


#: nodes whose `cd` does not outlive them (bash runs a pipeline's parts in subshells)
_SCOPES = frozenset({"subshell", "command_substitution", "process_substitution", "pipeline"})
#: nodes a `cd` passes through and still runs for certain before what follows
_TRANSPARENT = frozenset({"redirected_statement", "compound_statement", "negated_command"})


def _unconditional(node: Any) -> bool:
    """Whether the command at ``node`` runs whenever what follows it in its scope runs:
    not on the right of ``&&``/``||``, not in an if/while/for/case body or a function."""
    if node is None:
        return False
    child = node
    parent = node.parent
    while parent is not None:
        kind = parent.type
        if kind == "program" or kind in _SCOPES:
            return True
        if kind == "list":
            if parent.named_children[0] != child:
                return False
        elif kind not in _TRANSPARENT:
            return False
        child = parent
        parent = parent.parent
    return True


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
            found += [c for c in parent.children if c.type.endswith("redirect")]
        elif kind.endswith("redirect"):
            break
        child = parent
        parent = parent.parent
    return found


def writes_output(pattern: str) -> bool:
    """Whether a pattern (a command text) redirects output to a file."""
    tree = parse(pattern)
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "file_redirect":
            operator = ""
            for child in node.children:
                if not child.is_named:
                    operator = _text(child)
            destination = node.child_by_field_name("destination")
            if operator in OUTPUT_OPERATORS and destination is not None:
                target = _text(destination)
                duplicate = operator == ">&" and (destination.type == "number" or target == "-")
                if not duplicate and target.strip("'\"") not in SPECIAL_FILES:
                    return True
        stack.extend(node.children)
    return False


# ---------------------------------------------------------------------------------------------
# wrappers: each returns (index of the wrapped command's name, flags), None when the wrapper
# runs nothing else (it is the command itself), or _DONE when it handled everything
# ---------------------------------------------------------------------------------------------

_DONE: Any = object()
#: wrappers whose own form stays a pattern beside the wrapped command's
_OUTER = frozenset({"sudo", "doas"})


def _skip_options(
    words: list[Word],
    with_arg: frozenset[str] = frozenset(),
    *,
    long_with_arg: frozenset[str] = frozenset(),
    stop_at: frozenset[str] = frozenset(),
) -> int | None:
    """Index of the first word after the options (None when an option is not static)."""
    i = 1
    while i < len(words):
        v = words[i].value
        if v is None:
            return i
        if v == "--":
            return i + 1
        if not v.startswith("-") or v == "-":
            return i
        if v in stop_at:
            return None
        if v.startswith("--"):
            if "=" not in v and v in long_with_arg:
                i += 1
        elif v in with_arg:
            i += 1
        i += 1
    return i


def _w_sudo(a: _Analysis, words: list[Word], depth: int) -> Any:
    shell = False
    i = 1
    with_arg = {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}
    while i < len(words):
        v = words[i].value
        if v is None:
            break
        if v == "--":
            i += 1
            break
        if not v.startswith("-") or v == "-":
            break
        if v in ("-e", "--edit", "-l", "--list", "-v", "-k", "-K", "-V", "--help"):
            return None
        if v.startswith("--"):
            if "=" not in v and v in ("--user", "--group", "--host", "--prompt", "--chdir",
                                      "--role", "--type", "--other-user", "--close-from",
                                      "--command-timeout", "--chroot"):  # fmt: skip
                i += 1
            if v in ("--shell", "--login"):
                shell = True
        else:
            if v in with_arg:
                i += 1
            elif "s" in v[1:] or "i" in v[1:]:
                shell = True
        i += 1
    if shell and i < len(words):
        return _as_shell_string(a, words, i, depth, "outer")
    return (i, {"outer"})


def _w_doas(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = _skip_options(words, frozenset({"-u", "-C"}))
    return None if i is None else (i, {"outer"})


def _as_shell_string(a: _Analysis, words: list[Word], start: int, depth: int, *flags: str) -> Any:
    """The rest of the words joined and run by a shell (``sudo -s``, ``watch``)."""
    rest = words[start:]
    if any(w.value is None for w in rest):
        a.opaque("a command run through a shell is not static")
        a.simple(rest, [], [], depth)
        return _DONE
    a.source(" ".join(w.value or "" for w in rest), depth + 1)
    return _DONE


def _w_env(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = 1
    flags: set[str] = set()
    while i < len(words):
        w = words[i]
        v = w.value
        if v is None:
            break
        if v == "--":
            i += 1
            continue
        if v in ("-i", "-0", "-v", "--ignore-environment", "--null", "--debug", "-"):
            flags.add("outer")
            i += 1
            continue
        if v in ("-u", "--unset"):
            flags.add("outer")
            i += 2
            continue
        if v.startswith(("--unset=", "-u")):
            flags.add("outer")
            i += 1
            continue
        if v in ("-S", "--split-string") or v.startswith(("--split-string=", "-S")):
            if v in ("-S", "--split-string"):
                string = words[i + 1] if i + 1 < len(words) else None
                rest = words[i + 2 :]
                text = string.value if string is not None else ""
            else:
                text = v.split("=", 1)[1] if v.startswith("--") else v[2:]
                rest = words[i + 1 :]
            if text is None or any(x.value is None for x in rest):
                a.opaque("env -S with a string that is not static")
                return _DONE
            a.source(" ".join([text, *(x.value or "" for x in rest)]), depth + 1)
            return _DONE
        if v.startswith("-"):
            a.opaque(f"env option {v} is not understood")
            return None
        if "=" in v and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", v):
            flags.add("outer")
            i += 1
            continue
        break
    return (i, flags)


def _w_plain(with_arg: frozenset[str] = frozenset(), long_with_arg: frozenset[str] = frozenset()):
    def handler(a: _Analysis, words: list[Word], depth: int) -> Any:
        i = _skip_options(words, with_arg, long_with_arg=long_with_arg)
        return None if i is None else (i, set())

    return handler


def _w_timeout(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = _skip_options(words, frozenset({"-s", "-k"}), long_with_arg=frozenset(
        {"--signal", "--kill-after"}))  # fmt: skip
    if i is None:
        return None
    return (i + 1, set())  # the duration


def _w_nice(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = 1
    while i < len(words):
        v = words[i].value
        if v is None:
            break
        if v == "--":
            i += 1
            break
        if v in ("-n", "--adjustment"):
            i += 2
            continue
        if v.startswith("-") and v != "-":
            i += 1
            continue
        break
    return (i, set())


def _w_command(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = 1
    while i < len(words):
        v = words[i].value
        if v in ("-v", "-V") or (v and v.startswith("-") and ("v" in v or "V" in v)):
            return None  # a look-up, nothing runs
        if v == "-p":
            i += 1
            continue
        if v == "--":
            i += 1
        break
    return (i, set())


def _w_xargs(a: _Analysis, words: list[Word], depth: int) -> Any:
    with_arg = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"}
    long_arg = {"--arg-file", "--delimiter", "--eof", "--max-lines", "--max-args",
                "--max-procs", "--max-chars", "--process-slot-var", "--replace"}  # fmt: skip
    replace: str | None = None
    i = 1
    while i < len(words):
        v = words[i].value
        if v is None:
            a.opaque("xargs option is not static")
            return None
        if v == "--":
            i += 1
            break
        if not v.startswith("-") or v == "-":
            break
        if v == "-I":
            replace = words[i + 1].value if i + 1 < len(words) else None
            i += 2
            continue
        if v.startswith("-I"):
            replace = v[2:]
        elif v.startswith("-i") or v.startswith("--replace"):
            replace = v.split("=", 1)[1] if "=" in v else (v[2:] or "{}")
        elif v in with_arg or (v.startswith("--") and "=" not in v and v in long_arg):
            i += 1
        i += 1
    if i >= len(words):
        return None
    if replace is None:
        return (i, {"tail"})
    for j in range(i, len(words)):
        if words[j].value is None or replace in (words[j].value or ""):
            words[j] = Word(words[j].text, None, "", words[j].node)
    return (i, set())


def _w_shell_c(a: _Analysis, words: list[Word], depth: int) -> Any:
    """``bash -c STRING``: the string is parsed; without -c the shell is a command."""
    i = 1
    has_c = False
    while i < len(words):
        v = words[i].value
        if v is None:
            break
        if v in ("-o", "-O", "+O", "+o", "--rcfile", "--init-file"):
            i += 2
            continue
        if v == "--":
            i += 1
            break
        if v.startswith(("-", "+")) and v != "-":
            if v.startswith("-") and not v.startswith("--") and "c" in v[1:]:
                has_c = True
            i += 1
            continue
        break
    if not has_c:
        return None
    if i >= len(words):
        return None
    string = words[i]
    if string.value is None:
        a.opaque(f"{words[0].text} -c with a string that is not static")
        a.commands.setdefault(" ".join(w.text for w in words), None)
        return _DONE
    a.source(string.value, depth + 1)
    return _DONE


def _w_eval(a: _Analysis, words: list[Word], depth: int) -> Any:
    rest = words[1:]
    if not rest:
        return None
    if any(w.value is None for w in rest):
        a.opaque("eval of a string that is not static")
        a.commands.setdefault(" ".join(w.text for w in words), None)
        return _DONE
    a.source(" ".join(w.value or "" for w in rest), depth + 1)
    return _DONE


def _w_watch(a: _Analysis, words: list[Word], depth: int) -> Any:
    i = _skip_options(words, frozenset({"-n", "-q"}), long_with_arg=frozenset({"--interval"}))
    if i is None or i >= len(words):
        return None
    return _as_shell_string(a, words, i, depth)


_WRAPPERS: dict[str, Any] = {
    "sudo": _w_sudo,
    "doas": _w_doas,
    "env": _w_env,
    "nohup": _w_plain(),
    "timeout": _w_timeout,
    "nice": _w_nice,
    "time": _w_plain(frozenset({"-o", "-f"}), frozenset({"--output", "--format"})),
    "command": _w_command,
    "exec": _w_plain(frozenset({"-a"})),
    "builtin": _w_plain(),
    "stdbuf": _w_plain(
        frozenset({"-i", "-o", "-e"}), frozenset({"--input", "--output", "--error"})
    ),
    "ionice": _w_plain(frozenset({"-c", "-n", "-p", "-P", "-u"})),
    "setsid": _w_plain(),
    "coproc": _w_plain(),
    "xargs": _w_xargs,
    "watch": _w_watch,
    "eval": _w_eval,
    **dict.fromkeys(SHELLS, _w_shell_c),
}


def analyze(command: str, cwd: str) -> ShellAnalysis:
    """Analyse ``command`` as it would run in ``cwd`` (see the module docstring)."""
    analysis = _Analysis(cwd)
    if not command.strip():
        return analysis.result()
    analysis.source(command)
    return analysis.result()
