"""The face the analysis shows to the command handlers (:mod:`.wrappers`, :mod:`.programs`):
they receive the analysis walking the tree (:class:`hookcode_policy_shell.analyze.Analysis`)
and use only this of it."""

from __future__ import annotations

from typing import Any, Protocol

from hookcode_policy_shell.paths import Places
from hookcode_policy_shell.words import Word

__all__ = ["Analyser", "Walker"]


class Walker(Protocol):
    """What the command handlers (:mod:`.wrappers`, :mod:`.programs`) use of the analysis
    walking the tree (:class:`hookcode_policy_shell.analyze.Analysis`)."""

    places: Places
    #: inside ``find -exec``: what ``{}`` stands for
    found: list[Word] | None

    def opaque(self, reason: str) -> None: ...

    def source(self, source: str, depth: int = 0) -> None: ...

    def simple(
        self, words: list[Word], assignments: list[str], redirects: list[Any], depth: int
    ) -> None: ...

    def path_argument(
        self, w: Word, role: str, *, recursive: bool = False, quiet: bool = False
    ) -> None: ...

    def assigns(self, name: str, how: str) -> None: ...

    def arithmetic_text(self, inner: str, where: str) -> None: ...


class Analyser(Walker, Protocol):
    """What the parts of the analysis itself (:mod:`.expand`, :mod:`.redirects`) use of the
    whole (:class:`hookcode_policy_shell.analyze.Analysis`)."""

    #: loop variables whose values are known, inside their loops
    loops: dict[str, list[str]]
    #: the patterns found so far, and their "always" prefixes
    commands: dict[str, None]
    always: dict[str, None]

    def block(self, node: Any, depth: int) -> None: ...

    def statement(self, node: Any, depth: int) -> None: ...

    def extract(self, node: Any, depth: int) -> None: ...

    def scoped(self, node: Any, depth: int) -> None: ...

    def word(self, node: Any, depth: int, *, quoted: bool = False) -> Word: ...

    def redirect(self, node: Any, depth: int) -> None: ...
