"""The replacer cascade of ``edit`` (reference/tools.md §5): a pure function of strings.

:func:`replace` tries nine replacers in the reference's order. Each proposes candidate
substrings of the content (the file's own text, so the replacement keeps whatever the file
had: indentation, spacing, escapes); the first candidate that occurs exactly once is replaced
(with ``replace_all``, every occurrence of the first candidate that occurs at all).

Deliberate details where the reference is JavaScript:

- ``new`` is inserted literally (the reference's ``replaceAll`` would expand ``$&``, ``$1``...).
- An empty candidate (a whitespace-only ``old`` trimmed to nothing) is never a match: it would
  "occur" everywhere.
- An empty ``old`` stands for the whole content: the result is ``new`` (the edit tool creates
  or overwrites the file with it, §5 step 4).

Line endings are the caller's business: the edit tool converts ``old`` and ``new`` to the
file's style before calling :func:`replace`.

Speed (budgets in docs/benchmarks.md: a fuzzy match in a 50,000-line file under 0.5 s, no match
under 2 s): each replacer yields exactly the candidates, in exactly the order, of the plain
"try every window" reading above, but skips windows that cannot match with a cheap necessary
test (the first line's trimmed text, the block's normalised length) before the exact test;
anchor lines are found through an index instead of a scan to the end of the file; Levenshtein
is rapidfuzz's (imported on first use); :func:`replace` looks up each distinct candidate once.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate

from hookcode.errors import ToolError

__all__ = [
    "AMBIGUOUS",
    "IDENTICAL",
    "NOT_FOUND",
    "REPLACERS",
    "block_anchor",
    "context_aware",
    "escape_normalized",
    "indentation_flexible",
    "levenshtein",
    "line_trimmed",
    "multi_occurrence",
    "replace",
    "simple",
    "trimmed_boundary",
    "whitespace_normalized",
]

IDENTICAL = "No changes to apply: oldString and newString are identical."
NOT_FOUND = (
    "Could not find oldString in the file. It must match exactly, including whitespace, "
    "indentation, and line endings."
)
AMBIGUOUS = (
    "Found multiple matches for oldString. Provide more surrounding context to make the match "
    "unique."
)

#: BlockAnchor: a single candidate block is accepted whatever its middle lines
SINGLE_CANDIDATE_SIMILARITY_THRESHOLD = 0.0
#: BlockAnchor: among several candidate blocks the best must reach this mean similarity
MULTIPLE_CANDIDATES_SIMILARITY_THRESHOLD = 0.3

Replacer = Callable[[str, str], Iterator[str]]


def replace(content: str, old: str, new: str, replace_all: bool = False) -> str:
    """``content`` with ``old`` replaced by ``new``; raises a ToolError with the reference's
    message when ``old`` equals ``new``, is not found, or is ambiguous."""
    if old == new:
        raise ToolError(IDENTICAL)
    if old == "":
        return new
    found = False
    seen: set[str] = set()  # a candidate proposed again has the same outcome: skip the lookups
    for replacer in REPLACERS:
        for candidate in replacer(content, old):
            if not candidate or candidate in seen:
                continue
            seen.add(candidate)
            index = content.find(candidate)
            if index == -1:
                continue
            found = True
            if replace_all:
                return content.replace(candidate, new)
            if content.rfind(candidate) != index:
                continue  # ambiguous: try the next candidate
            return content[:index] + new + content[index + len(candidate) :]
    raise ToolError(AMBIGUOUS if found else NOT_FOUND)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    """The edit distance of two strings (insertions, deletions, substitutions), by rapidfuzz."""
    return _levenshtein_distance()(a, b)


def _levenshtein_distance() -> Callable[[str, str], int]:
    # imported on first use: start-up never pays for rapidfuzz
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance


def _span(lines: list[str], start: int, end: int) -> str:
    """The text of ``lines[start..end]`` (inclusive), joined by newlines."""
    return "\n".join(lines[start : end + 1])


def _drop_trailing_empty(lines: list[str]) -> list[str]:
    return lines[:-1] if lines and lines[-1] == "" else lines


_WHITESPACE = re.compile(r"\s+")


def _normalize_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _stripped(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines]


def _anchored_blocks(stripped: list[str], first: str, last: str) -> Iterator[tuple[int, int]]:
    """For each line ``i`` whose trimmed text is ``first``, in order: ``(i, j)`` with ``j`` the
    first line at least two below ``i`` whose trimmed text is ``last`` (none: no pair). The
    ``last`` lines are indexed once, so a missing closing anchor costs a bisection, not a scan
    to the end of the file."""
    closers = [j for j, text in enumerate(stripped) if text == last]
    if not closers:
        return
    for i, text in enumerate(stripped):
        if text == first:
            k = bisect_left(closers, i + 2)
            if k < len(closers):
                yield i, closers[k]


# ---------------------------------------------------------------------------------------------
# the replacers, in the reference's order
# ---------------------------------------------------------------------------------------------


def simple(content: str, find: str) -> Iterator[str]:
    """1. ``find`` itself."""
    yield find


def line_trimmed(content: str, find: str) -> Iterator[str]:
    """2. A run of lines equal to the search lines once both ends are trimmed (one trailing
    empty search line dropped); yields the file's own text of the run."""
    lines = content.split("\n")
    search = _drop_trailing_empty(find.split("\n"))
    wanted = [s.strip() for s in search]
    size = len(search)
    if not size:  # only from a direct call with an empty ``find``: every empty run
        for i in range(len(lines) + 1):
            yield _span(lines, i, i - 1)
        return
    stripped = _stripped(lines)
    head = wanted[0]
    for i in range(len(lines) - size + 1):
        if stripped[i] == head and stripped[i : i + size] == wanted:
            yield _span(lines, i, i + size - 1)


def _middle_similarity(
    stripped: list[str],
    search: list[str],
    start: int,
    end: int,
    distance: Callable[[str, str], int],
) -> float:
    """Mean similarity (1 - Levenshtein / longer length, trimmed) of the middle lines of a
    block against the search's (trimmed) middle lines; 1.0 when there are none. Lines that are
    both empty count in the mean with similarity 0 (as the reference does)."""
    block_size = end - start + 1
    to_check = min(len(search) - 2, block_size - 2)
    if to_check <= 0:
        return 1.0
    total = 0.0
    for j in range(1, min(len(search) - 1, block_size - 1)):
        original = stripped[start + j]
        wanted = search[j]
        longest = max(len(original), len(wanted))
        if longest == 0:
            continue
        total += 1 - distance(original, wanted) / longest
    return total / to_check


def block_anchor(content: str, find: str) -> Iterator[str]:
    """3. At least three search lines: the first and last (trimmed) are anchors. A block runs
    from a line equal to the first anchor to the first line at least two lines below it equal
    to the last. A single block is accepted whatever its middle; among several, the one with
    the best mean middle-line similarity, if that reaches 0.3."""
    search = find.split("\n")
    if len(search) < 3:
        return
    search = [line.strip() for line in _drop_trailing_empty(search)]
    lines = content.split("\n")
    stripped = _stripped(lines)
    candidates = list(_anchored_blocks(stripped, search[0], search[-1]))
    if not candidates:
        return
    distance = _levenshtein_distance()
    if len(candidates) == 1:
        start, end = candidates[0]
        similarity = _middle_similarity(stripped, search, start, end, distance)
        if similarity >= SINGLE_CANDIDATE_SIMILARITY_THRESHOLD:
            yield _span(lines, start, end)
        return
    best: tuple[int, int] | None = None
    best_similarity = -1.0
    for start, end in candidates:
        similarity = _middle_similarity(stripped, search, start, end, distance)
        if similarity > best_similarity:
            best_similarity, best = similarity, (start, end)
            if similarity >= 1.0:
                break  # nothing later can beat it (the first best wins ties)
    if best is not None and best_similarity >= MULTIPLE_CANDIDATES_SIMILARITY_THRESHOLD:
        yield _span(lines, *best)


def whitespace_normalized(content: str, find: str) -> Iterator[str]:
    """4. Whitespace runs collapsed to one space, ends trimmed. Per line: a whole line equal
    to ``find``, or the span of a line matched by ``find``'s words separated by any
    whitespace. For a multi-line ``find``: a block of as many lines with equal text."""
    wanted = _normalize_whitespace(find)
    lines = content.split("\n")
    words = find.split()
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words)) if words else None
    # ``\s`` and str.split() agree on what whitespace is, so this is _normalize_whitespace
    normalized = [" ".join(line.split()) for line in lines]
    for i in _lines_containing(normalized, wanted):
        if normalized[i] == wanted:
            yield lines[i]
        elif pattern is not None:
            match = pattern.search(lines[i])
            if match:
                yield match.group(0)
    find_lines = find.split("\n")
    if len(find_lines) > 1:
        size = len(find_lines)
        # a block's normalised text is its lines' non-empty normalised texts joined by one
        # space: only blocks with the right length get the exact test
        lengths = [0, *accumulate(len(text) for text in normalized)]
        filled = [0, *accumulate(1 if text else 0 for text in normalized)]
        target = len(wanted)
        for i in range(len(lines) - size + 1):
            count = filled[i + size] - filled[i]
            if lengths[i + size] - lengths[i] + max(count - 1, 0) != target:
                continue
            block = "\n".join(lines[i : i + size])
            if _normalize_whitespace(block) == wanted:
                yield block


def _lines_containing(texts: list[str], wanted: str) -> Iterator[int]:
    """The indexes, in order, of the texts (none holding a newline) that contain ``wanted``
    (which holds none either), found in one search of their newline-joined whole."""
    if not wanted:
        yield from range(len(texts))
        return
    whole = "\n".join(texts)
    starts = [0, *accumulate(len(text) + 1 for text in texts)]
    position = whole.find(wanted)
    while position != -1:
        index = bisect_right(starts, position) - 1
        yield index
        position = whole.find(wanted, starts[index + 1])


_INDENT = re.compile(r"^\s*")


def _remove_indentation(text: str) -> str:
    lines = text.split("\n")
    non_blank = [line for line in lines if line.strip()]
    if not non_blank:
        return text
    indent = min(len(_INDENT.match(line).group(0)) for line in non_blank)  # type: ignore[union-attr]
    return "\n".join(line[indent:] if line.strip() else line for line in lines)


def indentation_flexible(content: str, find: str) -> Iterator[str]:
    """5. A block of as many lines, equal to ``find`` once each side's smallest indentation
    (over its non-blank lines) is removed."""
    wanted = _remove_indentation(find)
    lines = content.split("\n")
    size = len(find.split("\n"))
    # removing at most a line's own indentation keeps its left-trimmed text: a block can only
    # match where its first line's left-trimmed text is that of ``wanted``'s first line
    head = wanted.split("\n", 1)[0].lstrip()
    for i in range(len(lines) - size + 1):
        if lines[i].lstrip() != head:
            continue
        block = "\n".join(lines[i : i + size])
        if _remove_indentation(block) == wanted:
            yield block


_ESCAPE = re.compile(r"\\(n|t|r|'|\"|`|\\|\n|\$)")
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", "\n": "\n"}


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text)


def escape_normalized(content: str, find: str) -> Iterator[str]:
    """6. ``find`` with ``\\n \\t \\r \\' \\" \\` \\\\ \\$`` and backslash-newline unescaped:
    that text if the content has it, then every block of as many lines whose unescaped text
    equals it."""
    wanted = _unescape(find)
    if wanted in content:
        yield wanted
    lines = content.split("\n")
    size = len(wanted.split("\n"))
    # a first line without a backslash comes out of _unescape as it is
    head = wanted.split("\n", 1)[0]
    for i in range(len(lines) - size + 1):
        if lines[i] != head and "\\" not in lines[i]:
            continue
        block = "\n".join(lines[i : i + size])
        if _unescape(block) == wanted:
            yield block


def trimmed_boundary(content: str, find: str) -> Iterator[str]:
    """7. Only when ``find`` has leading or trailing whitespace: its trimmed form if the
    content has it, then every block of as many lines whose trimmed text equals it."""
    wanted = find.strip()
    if wanted == find:
        return
    if wanted in content:
        yield wanted
    lines = content.split("\n")
    size = len(find.split("\n"))
    # a block whose first line is not blank trims to a text whose first line is that line
    # left-trimmed (or, when the rest is blank, fully trimmed)
    head = wanted.split("\n", 1)[0]
    for i in range(len(lines) - size + 1):
        line = lines[i]
        if not line.lstrip().startswith(head) and line.strip():
            continue
        block = "\n".join(lines[i : i + size])
        if block.strip() == wanted:
            yield block


def context_aware(content: str, find: str) -> Iterator[str]:
    """8. At least three lines: the trimmed first and last lines are anchors. For each line
    equal to the first anchor, the first line at least two below equal to the last closes a
    block; it is proposed when it has as many lines as ``find`` and at least half of the
    middle lines that are not both blank are equal once trimmed."""
    search = find.split("\n")
    if len(search) < 3:
        return
    search = [line.strip() for line in _drop_trailing_empty(search)]
    lines = content.split("\n")
    stripped = _stripped(lines)
    for i, j in _anchored_blocks(stripped, search[0], search[-1]):
        if j - i + 1 != len(search):
            continue
        matching = total = 0
        for k in range(1, len(search) - 1):
            original, wanted = stripped[i + k], search[k]
            if original or wanted:
                total += 1
                matching += original == wanted
        if total == 0 or matching / total >= 0.5:
            yield "\n".join(lines[i : j + 1])


def multi_occurrence(content: str, find: str) -> Iterator[str]:
    """9. ``find`` once per exact occurrence (what ``replace_all`` is for)."""
    if not find:
        return
    start = 0
    while (index := content.find(find, start)) != -1:
        yield find
        start = index + len(find)


REPLACERS: tuple[Replacer, ...] = (
    simple,
    line_trimmed,
    block_anchor,
    whitespace_normalized,
    indentation_flexible,
    escape_normalized,
    trimmed_boundary,
    context_aware,
    multi_occurrence,
)
