"""Words of a shell command: their static values, and the checks that tell whether tree-sitter
read a piece of text the way bash will.

Everything here is pure: no parsing, no file system. :mod:`hookcode_policy_shell.analyze`
builds :class:`Word` objects from tree-sitter nodes and uses these helpers to decide whether a
node is in the understood subset.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = [
    "Word",
    "ansi_c",
    "arithmetic_is_static",
    "assigned_value",
    "backtick_body",
    "expansion_choices",
    "expansion_problem",
    "heredoc_delimiter",
    "input_problem",
    "unescape_double",
    "unescape_word",
    "unquoted_problem",
]

#: characters that make an unquoted static argument keep its quotes in a pattern
KEEP_QUOTED = re.compile(r"[\s;&|<>()`$\"'\\*?\[\]{}#~!]")
BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
GLOB = re.compile(r"[*?\[]")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Word:
    """One token of a command: its source text, and its value when it is static.

    ``mask`` is the value with every quoted or escaped character replaced by NUL, so glob,
    brace and tilde characters that the shell would expand can be told apart."""

    __slots__ = ("_expands", "choices", "mask", "node", "text", "value")

    def __init__(
        self,
        text: str,
        value: str | None,
        mask: str = "",
        node: Any = None,
        choices: list[Word] | None = None,
    ) -> None:
        self.text = text
        self.value = value
        self.mask = mask if value is not None else ""
        self.node = node
        #: for a dynamic word whose possible values are known (a loop variable over a static
        #: list): the static words it may become, after splitting when it is unquoted
        self.choices = choices
        self._expands: bool | None = None

    @property
    def known(self) -> bool:
        """Static, or one of known static words."""
        return self.value is not None or self.choices is not None

    @property
    def harmless(self) -> bool:
        """Static, or a loop variable none of whose values could be an option: nothing a
        read-only command could take for an option that writes or runs something."""
        if self.value is not None:
            return True
        return self.choices is not None and not any(v.startswith("-") for v in self.values())

    def values(self) -> list[str]:
        """Its value, or every value it may have (empty when unknown)."""
        if self.value is not None:
            return [self.value]
        return [c.value for c in self.choices or () if c.value is not None]

    @property
    def static(self) -> bool:
        return self.value is not None

    @property
    def glob(self) -> bool:
        return bool(GLOB.search(self.mask))

    @property
    def expands(self) -> bool:
        """Glob, brace or tilde expansion would change the value."""
        if self._expands is None:
            m = self.mask
            self._expands = bool(
                m
                and ("*" in m or "?" in m or "[" in m or "{" in m or m[0] == "~")
                and (GLOB.search(m) or BRACE.search(m) or m.startswith("~"))
            )
        return self._expands

    def pattern_text(self) -> str:
        """How the word appears in a permission pattern: unquoted when that is unambiguous."""
        if self.value is None:
            return self.text
        if self.value and not KEEP_QUOTED.search(self.value):
            return self.value
        return self.text

    def __repr__(self) -> str:
        return f"Word({self.text!r}, {self.value!r})"


def expansion_choices(values: list[str], quoted: bool) -> list[Word]:
    """The words a variable with these possible values becomes: as it is when quoted; split
    on blanks (and open to globbing, but not to tilde expansion) when it is not."""
    if quoted:
        return [Word(v, v, "\0" * len(v)) for v in values]
    words: list[Word] = []
    for value in values:
        for piece in value.split():
            mask = ("\0" + piece[1:]) if piece.startswith("~") else piece
            words.append(Word(piece, piece, mask))
    return words


def assigned_value(value: str) -> Word:
    """The value after ``name=`` in a word bash treats like an assignment (``dd of=~/x``):
    a leading ``~`` is expanded there, nothing else."""
    mask = ("~" + "\0" * (len(value) - 1)) if value.startswith("~") else "\0" * len(value)
    return Word(value, value, mask)


# ---------------------------------------------------------------------------------------------
# the input as a whole
# ---------------------------------------------------------------------------------------------


def input_problem(source: str) -> str | None:
    """Why ``source`` may be read differently by tree-sitter and by bash, or None.

    Carriage returns, NUL and other control characters, bytes that are not valid UTF-8 (kept
    as surrogates), Unicode blanks other than space and tab, and invisible format characters
    are refused: bash and the parser disagree on some of them, and a person reading the
    command in a prompt cannot see them."""
    for ch in source:
        if ch in "\t\n" or " " <= ch < "\x7f":
            continue
        code = ord(ch)
        if ch == "\r":
            return "it contains a carriage return (bash and the parser disagree on CR)"
        if ch == "\0":
            return "it contains a NUL character"
        if 0xD800 <= code <= 0xDFFF:
            return "it contains bytes that are not valid UTF-8"
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp") or (category == "Zs" and ch != " "):
            return f"it contains the invisible or control character U+{code:04X}"
    return None


# ---------------------------------------------------------------------------------------------
# static values
# ---------------------------------------------------------------------------------------------


def unescape_word(text: str) -> tuple[str, str]:
    """(value, mask) of an unquoted word: backslashes escape the next character."""
    if "\\" not in text:
        return text, text
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


def unescape_double(text: str) -> str:
    """The value of literal text inside double quotes: ``\\`` escapes only ``$ ` " \\`` and
    newline (a backslash-newline disappears)."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def ansi_c(body: str) -> str | None:
    """The value of a ``$'...'`` body, or None for escapes not worth modelling (``\\c``)."""
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
            code = int(m.group(0), 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                return None
            out.append(chr(code))
            i += 2 + len(m.group(0))
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif e == "c":
            return None
        else:
            out.append("\\" + e)
            i += 2
    value = "".join(out)
    return None if "\0" in value else value


# ---------------------------------------------------------------------------------------------
# does the text hide an expansion the parser did not see?
# ---------------------------------------------------------------------------------------------

#: what may follow ``$`` to start an expansion in bash
_EXPANSION_START = re.compile(r"[A-Za-z_0-9{(\[@*#?$!\-'\"]")


def unquoted_problem(text: str) -> str | None:
    """For the text of an unquoted word leaf: an unescaped backtick or ``$`` that starts an
    expansion means tree-sitter took for literal text what bash will expand."""
    return _hidden_expansion(text, quoted=False)


def double_quoted_problem(text: str) -> str | None:
    """The same check for literal text inside double quotes: there a backslash escapes only
    ``$ ` " \\`` and newline, and ``$'`` / ``$"`` are literal."""
    return _hidden_expansion(text, quoted=True)


def _hidden_expansion(text: str, *, quoted: bool) -> str | None:
    if "`" not in text and "$" not in text:
        return None
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            escapes = not quoted or (i + 1 < len(text) and text[i + 1] in '$`"\\\n')
            i += 2 if escapes else 1
            continue
        if c == "`":
            return "a backtick the parser did not read as a command substitution"
        if c == "$" and i + 1 < len(text) and _EXPANSION_START.match(text[i + 1]):
            if quoted and text[i + 1] in "'\"":
                i += 1
                continue
            return f"an expansion the parser did not read as one ({text[i : i + 12]!r})"
        i += 1
    return None


def heredoc_body_problem(text: str) -> str | None:
    """An unquoted here-document body is expanded like a double-quoted string: command
    substitution, arithmetic and parameter expansion with operators are not followed there
    (the parser drops backticks in bodies), plain ``$name`` / ``${name}`` are fine."""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2 if i + 1 < len(text) and text[i + 1] in "$`\\\n" else 1
            continue
        if c == "`":
            return "a backtick command substitution in a here-document"
        if c == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "([":
                return "a command substitution or arithmetic in a here-document"
            if nxt == "{":
                end = text.find("}", i)
                body = text[i + 2 : end] if end != -1 else ""
                if end == -1 or not (NAME.fullmatch(body) or body in _SPECIAL_PARAMS):
                    return "a parameter expansion with an operator in a here-document"
                i = end + 1
                continue
        i += 1
    return None


_SPECIAL_PARAMS = frozenset("@*#?-$!0123456789")

_PARAM = r"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])(?:\[(?:[0-9]+|@|\*)\])?"
#: ``${name}``, ``${#name}``, ``${a[0]}``, ``${a[@]}``
_EXPANSION_PLAIN = re.compile(r"\$\{#?" + _PARAM + r"\}")
#: ``${name OP operand}`` with an operator that neither assigns nor evaluates
_EXPANSION_OP = re.compile(
    r"\$\{" + _PARAM + r"(?:(?::-|-|:\+|\+|:\?|\?|##|#|%%|%|//|/#|/%|/|\^\^|\^|,,|,)"
    r"(?P<arg>[^}]*))\}"
)
_STATIC_OPERAND = re.compile(r"[^$`\\\"'{}()\[\]<>;&|\s]*")


def expansion_problem(text: str) -> str | None:
    """Why the ``${...}`` text is outside the understood subset, or None.

    Understood: ``${name}``, ``${#name}``, ``${name[N]}``, ``${name[@]}``, and the operators
    ``:- - :+ + :? ? # ## % %% / // /# /% ^ ^^ , ,,`` with a plain static operand. Not: an
    operand that expands (``${x:-$(cmd)}``), assignment (``${x:=v}``), indirection
    (``${!x}``), transformations (``${x@P}`` runs prompt expansion), substrings (their
    offsets are arithmetic) or subscripts that are not plain numbers (arithmetic again)."""
    if _EXPANSION_PLAIN.fullmatch(text):
        return None
    m = _EXPANSION_OP.fullmatch(text)
    if m is None:
        return (
            f"the expansion {text} is not understood (expansions that assign, indirect, "
            "transform, take substrings or index with expressions make a command opaque)"
        )
    if not _STATIC_OPERAND.fullmatch(m.group("arg")):
        return f"the operand of {text} expands or quotes (only plain text is followed)"
    return None


_ARITH_STATIC = re.compile(r"[0-9\s+\-*/%<>=!&|^~(),?:]*")


def arithmetic_is_static(inner: str) -> bool:
    """Whether arithmetic text holds only numbers and operators: any name is looked up and
    its value evaluated in turn (``x='a[$(cmd)]'; echo $((x))`` runs ``cmd``)."""
    return bool(_ARITH_STATIC.fullmatch(inner))


def backtick_body(text: str, in_double_quotes: bool) -> str | None:
    """The command text of a backtick substitution as bash reads it (``\\$ \\` \\\\`` lose
    their backslash, and ``\\"`` too inside double quotes), or None when the node's end is
    not where bash ends the substitution (the first unescaped backtick)."""
    if len(text) < 2 or text[0] != "`" or text[-1] != "`":
        return None
    body = text[1:-1]
    out: list[str] = []
    i = 0
    specials = '$`\\"' if in_double_quotes else "$`\\"
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(nxt if nxt in specials else c + nxt)
            i += 2
            continue
        if c == "`":
            return None  # bash ends the substitution here, before the node's end
        out.append(c)
        i += 1
    if body.endswith("\\") and not body.endswith("\\\\"):
        return None
    return "".join(out)


def heredoc_delimiter(start: str) -> tuple[str, bool] | None:
    """(the delimiter bash looks for, whether the body is literal) for a here-document's
    start word; None when it is not a plain word that bash and the parser surely read alike."""
    if not start:
        return None
    if re.fullmatch(r"[A-Za-z0-9_.\-]+", start):
        return start, False
    for quote in ("'", '"'):
        if start.startswith(quote) and start.endswith(quote) and len(start) >= 2:
            inner = start[1:-1]
            if re.fullmatch(r"[A-Za-z0-9_.\- ]*", inner) and inner:
                return inner, True
    if start.startswith("\\") and re.fullmatch(r"[A-Za-z0-9_.\-]+", start[1:]):
        return start[1:], True
    return None
