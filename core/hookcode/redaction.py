"""Redaction: known secret values replaced in text by a marker naming where they come from.

A secret is replaced by ``[redacted: SOURCE]`` (``[redacted: ANTHROPIC_API_KEY]``,
``[redacted: auth.json anthropic]``): the marker names where the secret comes from, never the
value. A value shorter than :data:`MIN_LENGTH` characters is never treated as a secret:
replacing every ``1234`` or ``true`` would shred ordinary output.

:class:`Redactor` is an immutable set of secrets, prepared once: the common case (no secret in
the text) costs one ``str.find`` of a single, rarely used character per secret (memchr speed),
so it can sit on every tool call and every byte of a streamed output. :class:`StreamRedactor`
does the same for text that arrives in chunks, holding back only the few characters at the end
of a chunk that could begin a secret. Which values a runtime knows to be secret is
:mod:`hookcode.secrets`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_LENGTH", "Redactor", "Secret", "StreamRedactor"]

#: values shorter than this are never treated as secrets
MIN_LENGTH = 8
#: characters a marker's source keeps (others, such as quotes from a config key, become "?")
_UNSAFE_IN_MARKER = re.compile(r"[^\w.:/@+ -]")

# Characters from the most to the least frequent in typical tool output (text, code, logs).
# A secret is looked for through its least frequent character: a memchr-speed ``str.find``
# that, in the common case, finds nothing. Characters not listed are the rarest of all.
_FREQUENT = (
    " e\ntaoinsrlhdcu.mpf_g/-=y,bw\"'():0v1k2x>3<59;]4[86E7STARI{}ONLCDPMj#zFq*UBHGW\t"
    "+!?&|@$%^~`\\KVYXJQZ"
)
_RANK = {char: rank for rank, char in enumerate(_FREQUENT)}


@dataclass(frozen=True)
class Secret:
    """A secret value and where it comes from; ``repr`` hides the value."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"Secret(source={self.source!r}, value=<hidden>)"

    __str__ = __repr__


#: characters at least this rare (the upper-case letters K V Y X J Q Z, and every character
#: not in :data:`_FREQUENT`) are equally good anchors: secrets share one where they can
_RARE = _RANK["K"]


def _anchors(values: list[str]) -> list[tuple[str, int]]:
    """For each secret, the character it is looked for through, and that character's first
    index in it: its least frequent character, or among the rare ones the one most secrets
    share (one ``str.find`` then serves them all)."""
    unlisted = len(_FREQUENT)
    shared: dict[str, int] = {}
    for value in values:
        for char in set(value):
            if _RANK.get(char, unlisted) >= _RARE:
                shared[char] = shared.get(char, 0) + 1
    out = []
    for value in values:
        rare = [c for c in set(value) if c in shared]
        if rare:
            best = max(rare, key=lambda c: (shared[c], _RANK.get(c, unlisted), c))
        else:
            best = max(value, key=lambda c: _RANK.get(c, unlisted))
        out.append((best, value.index(best)))
    return out


def _probes(values: list[str]) -> list[tuple[str, list[tuple[str, int]]]]:
    """The secrets grouped by anchor: ``[(anchor, [(secret, anchor index), ...]), ...]``."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for value, (anchor, offset) in zip(values, _anchors(values), strict=True):
        groups.setdefault(anchor, []).append((value, offset))
    return list(groups.items())


#: the types of values that hold no text (most of a tool call's arguments and metadata)
_SCALARS = frozenset({int, float, bool, type(None)})

#: after this many anchor hits that were not the secret, a text is searched for the secret
#: itself (a text full of the anchor character would otherwise cost a Python loop per hit)
_HITS = 8


class Redactor:
    """Replaces a fixed set of secrets in text; build once, use for many texts.

    ``secrets``: :class:`Secret` objects, or plain strings (then the marker is ``[redacted]``).
    Values shorter than :data:`MIN_LENGTH` are dropped; a value known from several sources is
    named after the first. Longer secrets are replaced first, so one that contains another
    goes whole."""

    __slots__ = ("_probes", "_starts", "longest", "markers", "shortest")

    def __init__(self, secrets: Iterable[Secret | str] = ()) -> None:
        markers: dict[str, str] = {}
        for secret in secrets:
            if isinstance(secret, Secret):
                # the marker may land inside JSON or a shell line: plain characters only
                source = _UNSAFE_IN_MARKER.sub("?", secret.source)
                value, marker = secret.value, f"[redacted: {source}]"
            else:
                value, marker = str(secret), "[redacted]"
            if len(value) >= MIN_LENGTH and value not in markers:
                markers[value] = marker
        ordered = sorted(markers, key=len, reverse=True)
        #: secret value -> its marker, longest first
        self.markers: dict[str, str] = {value: markers[value] for value in ordered}
        self._probes = _probes(ordered)
        self._starts = [(value, value[0]) for value in ordered]
        #: the length of the longest secret (0 when there is none)
        self.longest = len(ordered[0]) if ordered else 0
        #: the length of the shortest one: a shorter text holds none (the common case of a
        #: tool call's small values costs a length check)
        self.shortest = len(ordered[-1]) if ordered else 0

    def __bool__(self) -> bool:
        return bool(self.markers)

    def __len__(self) -> int:
        return len(self.markers)

    def __repr__(self) -> str:
        return f"Redactor({len(self.markers)} secrets)"

    def found(self, text: str) -> list[str]:
        """The secrets that occur in ``text``, longest first."""
        out = []
        for anchor, group in self._probes:
            first = text.find(anchor)
            if first < 0:
                continue  # the common case: one memchr for every secret of the group
            for value, offset in group:
                index, hits = first, 0
                while index >= 0:
                    start = index - offset
                    if start >= 0 and text.startswith(value, start):
                        out.append(value)
                        break
                    hits += 1
                    if hits >= _HITS:  # the anchor is common in this text: search for the secret
                        if text.find(value, max(0, start)) >= 0:
                            out.append(value)
                        break
                    index = text.find(anchor, index + 1)
        if len(out) > 1:
            out.sort(key=len, reverse=True)
        return out

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by its marker (the same object when
        there is none)."""
        if len(text) < self.shortest or not self._probes:
            return text
        for value in self.found(text):
            text = text.replace(value, self.markers[value])
        return text

    def redact_value(self, value: Any) -> Any:
        """``value`` with every string in it redacted, through dicts (keys too), lists and
        tuples; the same object when nothing changed (so it is cheap on clean values)."""
        if not self._probes:
            return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return value if len(value) < self.shortest else self.redact(value)
        if kind in _SCALARS:
            return value
        if kind is dict or isinstance(value, dict):
            # one look first (most values are clean: nothing is built), then the copy
            for key, item in value.items():
                if self._dirty(key) or self._dirty(item):
                    break
            else:
                return value
            return {self._walk(key): self._walk(item) for key, item in value.items()}
        if kind is list or kind is tuple or isinstance(value, list | tuple):
            for item in value:
                if self._dirty(item):
                    break
            else:
                return value
            items = [self._walk(item) for item in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, str):  # a str subclass
            return value if len(value) < self.shortest else self.redact(value)
        return value

    def _dirty(self, value: Any) -> bool:
        """Whether :meth:`_walk` would change ``value`` (short texts and numbers are decided
        here, without a call)."""
        kind = type(value)
        if kind is str:
            return len(value) >= self.shortest and self.redact(value) is not value
        if kind in _SCALARS:
            return False
        return self._walk(value) is not value

    def settled(self, text: str) -> str:
        """The part of a text that is still growing (a model's reply as it streams) that may
        be stored now: redacted, without an end that could be the start of a secret."""
        return self.redact(text[: self._hold(text)])

    def _hold(self, text: str) -> int:
        """Where to cut ``text`` so that what comes before may go out now: before the end
        that could begin a secret (a suffix that is a prefix of one), and never inside a
        whole secret (``len(text)``: all of it may go)."""
        hold = len(text)
        for value, first in self._starts:
            index = text.find(first, max(0, len(text) - len(value) + 1))
            while 0 <= index < hold:
                if value.startswith(text[index:]):
                    hold = index
                    break
                index = text.find(first, index + 1)
        moved = hold < len(text)
        while moved:  # a whole secret across the cut (one contains the start of another)
            moved = False
            for value in self.markers:
                size = len(value)
                index = text.find(value, max(0, hold - size + 1), hold + size - 1)
                if 0 <= index < hold:
                    hold, moved = index, True
        return hold

    def stream(self) -> StreamRedactor:
        """A redactor for one text that arrives in chunks."""
        return StreamRedactor(self)

    def with_secrets(self, more: Iterable[Secret | str]) -> Redactor:
        """A redactor of this one's secrets and ``more`` (this one's names win)."""
        return Redactor([*self._secrets(), *more])

    def _secrets(self) -> list[Secret | str]:
        return [
            value if marker == "[redacted]" else Secret(value, marker[len("[redacted: ") : -1])
            for value, marker in self.markers.items()
        ]


class StreamRedactor:
    """Redacts a text given in chunks: what :meth:`feed` returns, joined, with what
    :meth:`flush` returns at the end, is :meth:`Redactor.redact` of the whole text.

    A secret may straddle two chunks: the end of a chunk that could be the start of a secret
    (shorter than the longest secret, or a little more where one secret contains the start of
    another) is held back until the next chunk shows whether it is. Most chunk ends cannot be
    (their last characters begin no secret), so most chunks go through whole, without a
    copy."""

    __slots__ = ("_pending", "_redactor")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._pending = ""

    def feed(self, text: str) -> str:
        redactor = self._redactor
        if not redactor.markers:
            return text
        if self._pending:
            text = self._pending + text
            self._pending = ""
        hold = redactor._hold(text)
        if hold < len(text):
            self._pending = text[hold:]
            text = text[:hold]
        return redactor.redact(text)

    def flush(self) -> str:
        """What was held back, redacted (the text ended: it completes no secret)."""
        rest, self._pending = self._pending, ""
        return self._redactor.redact(rest)
