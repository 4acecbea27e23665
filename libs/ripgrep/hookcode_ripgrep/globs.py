"""ripgrep's ``--glob`` semantics, for globs that must not override the ignore files.

A positive ``--glob`` is an rg *override*: the files it matches are listed even where an ignore
file excludes them. The tools give rg no such glob; they filter rg's ignore-honouring listing
with :func:`glob_filter` (which agrees with ``rg --glob``), or let rg select files by name with
a file type (:func:`name_glob`), which honours the ignore files.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["glob_filter", "name_glob"]


def name_glob(pattern: str) -> str | None:
    """The file-name glob that selects exactly the files ``pattern`` matches, when the pattern
    looks at names only (``*.py``, ``**/*.{ts,tsx}``), else None. rg matches a glob without a
    ``/`` against the file name at any depth, and ``**/`` in front changes nothing."""
    name = pattern[3:] if pattern.startswith("**/") else pattern
    if (
        not name
        or name != name.strip()
        or name.startswith(("!", "#", "\\"))
        or "/" in name
        or ":" in name  # --type-add is NAME:GLOB
        or "**" in name
    ):
        return None
    return name


def glob_filter(pattern: str) -> Callable[[str], bool] | None:
    """A matcher for relative ``/``-separated file paths that agrees with ``rg --glob=PATTERN``,
    or None when the pattern is best given to rg as a ``--glob`` itself.

    Why: a positive ``--glob`` is an rg *override*; a file it matches is listed even when an
    ignore file (``.gitignore``) excludes it, and a directory it matches is walked even when
    ignored. Filtering rg's plain (ignore-honouring) listing with this matcher keeps the glob's
    meaning and honours the ignore files. Negated globs (``!x``), comments and empty patterns
    never override ignore files, and a glob this parser rejects is left to rg (which reports
    its own error), so those return None.

    The translation follows ripgrep 14's ``ignore``/``globset`` crates: a gitignore-style line
    (a pattern without ``/`` matches at any depth, a leading ``/`` anchors it, a trailing ``/``
    matches directories only, ``dir/**`` matches what is inside ``dir``), then globset syntax
    with ``*`` and ``?`` not crossing ``/``, ``**`` for any number of directories, ``[...]``
    classes (``[!...]``/``[^...]`` negated), ``{a,b}`` alternatives and ``\\`` escapes.
    """
    line = pattern
    if line.startswith("#"):
        return None  # a comment: rg ignores it, so every file is listed
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    absolute = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        absolute = line.startswith("/")
    else:
        if line.startswith("!"):
            return None  # an exclusion: rg applies it without overriding ignore files
        if line.startswith("/"):
            line = line[1:]
            absolute = True
    if line.endswith("/"):
        return lambda _path: False  # directories only: never a file
    if not absolute and "/" not in line and not (line.startswith("**/") or line == "**"):
        line = "**/" + line
    if line.endswith("/**"):
        line += "/*"
    try:
        regex = re.compile(_glob_regex(line), re.DOTALL)
    except (ValueError, re.error):
        return None
    return lambda path: regex.fullmatch(path) is not None


def _glob_regex(glob: str) -> str:
    """globset's regex for ``glob`` (literal separators, backslash escapes); ValueError for a
    glob globset rejects."""
    # tokens: ("lit", c) ("any",) ("star",) ("rprefix",) ("rsuffix",) ("rzero",)
    #         ("class", negated, ranges) ("alt", [branches])
    stack: list[list[tuple]] = [[]]
    alternates: list[list[list[tuple]]] = []
    chars = list(glob)
    i = 0
    prev: str | None = None

    def peek() -> str | None:
        return chars[i] if i < len(chars) else None

    while i < len(chars):
        c = chars[i]
        i += 1
        tokens = stack[-1]
        if c == "?":
            tokens.append(("any",))
        elif c == "*":
            if peek() != "*":
                tokens.append(("star",))
            else:
                i += 1
                if not tokens:
                    if peek() not in (None, "/"):
                        tokens += [("star",), ("star",)]
                    else:
                        tokens.append(("rprefix",))
                        if peek() == "/":
                            i += 1
                elif prev != "/" and (len(stack) <= 1 or prev not in (",", "{")):
                    tokens += [("star",), ("star",)]
                else:
                    nxt = peek()
                    if nxt is None or (nxt in (",", "}") and len(stack) >= 2):
                        suffix = True
                    elif nxt == "/":
                        i += 1
                        suffix = False
                    else:
                        tokens += [("star",), ("star",)]
                        prev = chars[i - 1]
                        continue
                    last = tokens.pop()
                    if last[0] in ("rprefix", "rsuffix"):
                        tokens.append(last)
                    else:
                        tokens.append(("rsuffix",) if suffix else ("rzero",))
        elif c == "[":
            negated = peek() in ("!", "^")
            if negated:
                i += 1
            ranges: list[tuple[str, str]] = []
            first, in_range = True, False
            while True:
                if i >= len(chars):
                    raise ValueError("unclosed character class")
                k = chars[i]
                i += 1
                if k == "]" and not first:
                    break
                if k == "-" and not first:
                    if in_range:
                        ranges[-1] = _range(ranges[-1][0], "-")
                        in_range = False
                    else:
                        in_range = True
                elif in_range:
                    ranges[-1] = _range(ranges[-1][0], k)
                    in_range = False
                else:
                    ranges.append((k, k))
                first = False
            if in_range:
                ranges.append(("-", "-"))
            tokens.append(("class", negated, ranges))
        elif c == "{":
            if len(stack) > 1:
                raise ValueError("nested alternate groups are not allowed")
            alternates.append([])
            stack.append([])
        elif c == "}":
            if len(stack) <= 1:
                raise ValueError("unopened alternate group")
            branches = alternates.pop()
            branches.append(stack.pop())
            stack[-1].append(("alt", branches))
        elif c == "," and len(stack) > 1:
            alternates[-1].append(stack.pop())
            stack.append([])
        elif c == "\\":
            if i >= len(chars):
                raise ValueError("dangling '\\'")
            tokens.append(("lit", chars[i]))
            i += 1
        else:
            tokens.append(("lit", c))
        prev = chars[i - 1]  # the last character consumed, as globset's parser tracks it
    if len(stack) > 1:
        raise ValueError("unclosed alternate group")
    return _render(stack[0])


def _range(start: str, end: str) -> tuple[str, str]:
    if end < start:
        raise ValueError(f"invalid range {start}-{end}")
    return (start, end)


def _render(tokens: list[tuple]) -> str:
    if tokens == [("rprefix",)]:
        return ".*"  # a glob (or alternative) that is just `**` matches everything
    out: list[str] = []
    for token in tokens:
        kind = token[0]
        if kind == "lit":
            out.append(re.escape(token[1]))
        elif kind == "any":
            out.append("[^/]")
        elif kind == "star":
            out.append("[^/]*")
        elif kind == "rprefix":
            out.append("(?:/?|.*/)")
        elif kind == "rsuffix":
            out.append("/.*")
        elif kind == "rzero":
            out.append("(?:/|/.*/)")
        elif kind == "class":
            body = "".join(
                _class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}"
                for a, b in token[2]
            )
            out.append(f"[{'^' if token[1] else ''}{body}]")
        else:  # alternates; empty branches are dropped, as globset does
            parts = [p for p in (_render(branch) for branch in token[1]) if p]
            if parts:
                out.append("(?:" + "|".join(parts) + ")")
    return "".join(out)


def _class_char(c: str) -> str:
    return re.escape(c)  # also escapes & ~ | (Python warns about them as set operations)
