"""What a ``sed`` script does besides filtering text: the files its ``w``/``W`` commands and
``s///w`` flags write, the files ``r``/``R`` read, and whether it runs commands (``e``,
``s///e``). GNU sed's syntax; a script this reader does not follow is reported as such."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SedScript", "read_script"]


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
