"""sed as the analysis reads it (:func:`judge_sed`), and what a ``sed`` script does besides
filtering text: the files its ``w``/``W`` commands and
``s///w`` flags write, the files ``r``/``R`` read, and whether it runs commands (``e``,
``s///e``). GNU sed's syntax; a script this reader does not follow is reported as such."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hookcode_policy_shell.commands import READ, RW, WRITE
from hookcode_policy_shell.walker import Walker
from hookcode_policy_shell.words import Word

__all__ = ["SedScript", "judge_sed", "read_script"]


@dataclass
class SedScript:
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    runs: bool = False


class _Unreadable(Exception):
    pass


def read_script(script: str) -> SedScript | None:
    """What ``script`` writes, reads and runs; None when it cannot be followed."""
    try:
        return _Reader(script).read()
    except _Unreadable:
        return None


class _Reader:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0
        self.found = SedScript()

    def read(self) -> SedScript:
        s = self.s
        while self.i < len(s):
            if s[self.i] in " \t\n;":
                self.i += 1
                continue
            self.address()
            self.blanks()
            if self.peek() == ",":
                self.i += 1
                self.blanks()
                self.address(second=True)
            self.blanks()
            while self.peek() == "!":
                self.i += 1
                self.blanks()
            if self.i >= len(s):
                raise _Unreadable
            self.command(s[self.i])
        return self.found

    # -- pieces ----------------------------------------------------------------------------
    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def digits(self) -> None:
        while self.peek().isdigit():
            self.i += 1

    def delimited(self, delimiter: str) -> None:
        """Skip text up to an unescaped ``delimiter`` (consumed)."""
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "\n" and delimiter != "\n":
                raise _Unreadable
            self.i += 1
            if c == delimiter:
                return
        raise _Unreadable

    def address(self, second: bool = False) -> None:
        c = self.peek()
        if c.isdigit():
            self.digits()
            if self.peek() == "~":
                self.i += 1
                self.digits()
        elif c == "$":
            self.i += 1
        elif c == "/":
            self.i += 1
            self.delimited("/")
            while self.peek() in ("I", "M"):
                self.i += 1
        elif c == "\\":
            if self.i + 1 >= len(self.s):
                raise _Unreadable
            delimiter = self.s[self.i + 1]
            self.i += 2
            self.delimited(delimiter)
            while self.peek() in ("I", "M"):
                self.i += 1
        elif second and c in "+~":
            self.i += 1
            self.digits()

    def rest_of_line(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end == -1 else end
        text = self.s[self.i : end]
        self.i = end
        return text

    def until_separator(self) -> None:
        while self.peek() not in ("", ";", "\n", "}"):
            self.i += 1

    def command(self, c: str) -> None:
        self.i += 1
        found = self.found
        if c in "{}":
            return
        if c == "#":
            self.rest_of_line()
        elif c in "aic":
            self.text()
        elif c in ":bTt":
            self.blanks()
            self.until_separator()
        elif c in "rRwW":
            self.blanks()
            name = self.rest_of_line().strip()
            if not name:
                raise _Unreadable
            (found.reads if c in "rR" else found.writes).append(name)
        elif c == "e":
            found.runs = True
            self.rest_of_line()
        elif c in "sy":
            self.substitute(c)
        elif c in "qQlL":
            self.blanks()
            self.digits()
        elif c in "dDgGhHnNpPxz=F":
            return
        elif c == "v":
            self.until_separator()
        else:
            raise _Unreadable

    def text(self) -> None:
        """The text of ``a``, ``i``, ``c``: to the end of the line, a backslash-newline going
        on to the next."""
        s = self.s
        while self.i < len(s):
            if s[self.i] == "\\" and self.i + 1 < len(s):
                self.i += 2
                continue
            if s[self.i] == "\n":
                return
            self.i += 1

    def substitute(self, c: str) -> None:
        delimiter = self.peek()
        if not delimiter or delimiter in "\\\n":
            raise _Unreadable
        self.i += 1
        self.delimited(delimiter)
        self.delimited(delimiter)
        if c == "y":
            return
        while self.peek() not in ("", ";", "\n", "}"):
            flag = self.peek()
            if flag == "w":
                self.i += 1
                self.blanks()
                name = self.rest_of_line().strip()
                if not name:
                    raise _Unreadable
                self.found.writes.append(name)
                return
            if flag == "e":
                self.found.runs = True
            elif not (flag.isdigit() or flag in "gpiImM "):
                raise _Unreadable
            self.i += 1


def judge_sed(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    """sed: the files given are read (and written with ``-i``); the script's own ``w``/``W``
    writes and ``r``/``R`` reads are paths like any other; ``e`` runs commands (opaque)."""
    scripts: list[str | None] = []
    files: list[Word] = []
    in_place = sandbox = False
    k = 0
    done = False
    while k < len(args):
        w = args[k]
        v = w.value
        if done or v is None or v == "-" or not v.startswith("-"):
            files.append(w)
            k += 1
            continue
        if v == "--":
            done = True
        elif v in ("-e", "--expression"):
            scripts.append(args[k + 1].value if k + 1 < len(args) else None)
            k += 1
        elif v.startswith("--expression="):
            scripts.append(v.split("=", 1)[1])
        elif v in ("-f", "--file") or v.startswith("--file="):
            target = (
                v.split("=", 1)[1]
                if "=" in v
                else (args[k + 1].value if k + 1 < len(args) else None)
            )
            if "=" not in v:
                k += 1
            scripts.append(_script_file(a, target))
        elif v in ("-l", "--line-length"):
            k += 1
        elif v.startswith("--in-place") or (v.startswith("-i") and not v.startswith("--")):
            in_place = True
        elif v == "--sandbox":
            sandbox = True
        elif not v.startswith("--") and len(v) > 2:
            # a bundle of short options: -ne 'script', -i.bak is handled above, -nE
            letters = v[1:]
            if "i" in letters:
                in_place = True
            if letters.endswith("e"):
                scripts.append(args[k + 1].value if k + 1 < len(args) else None)
                k += 1
            elif letters.endswith("f"):
                scripts.append(_script_file(a, args[k + 1].value if k + 1 < len(args) else None))
                k += 1
        k += 1
    if not scripts and files:
        first = files.pop(0)
        scripts.append(first.value)
    safe = not in_place
    for script in scripts:
        found = read_script(script) if script is not None else None
        if found is None:
            a.opaque("a sed script that is not static or not understood can write files and run "
                     "commands")  # fmt: skip
            return False
        if found.runs and not sandbox:
            a.opaque("the sed script runs commands (e)")
            safe = False
        for path in [] if sandbox else found.writes:
            if path not in ("/dev/stdout", "/dev/stderr"):
                a.path_argument(Word(path, path), WRITE)
                safe = False
        for path in [] if sandbox else found.reads:
            a.path_argument(Word(path, path), READ)
    for w in files:
        if w.value != "-":
            a.path_argument(w, RW if in_place else READ)
    return safe and all(w.harmless for w in args)


def _script_file(a: Walker, path: str | None) -> str | None:
    """The text of a ``sed -f`` script (checked as a file read), or None when it cannot be
    read now."""
    if path is None:
        return None
    a.path_argument(Word(path, path), READ)
    full = os.path.join(a.places.cwds[0], path) if len(a.places.cwds) == 1 else None
    try:
        if full is None or os.path.getsize(full) > 1 << 16:
            return None
        with open(full, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None
