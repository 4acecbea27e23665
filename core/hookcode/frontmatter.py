"""Markdown frontmatter: the ``---`` block at the top of an agent file or a SKILL.md, read as
YAML (PyYAML's safe loader, imported on the first call).

What the reader returns is JSON-like: mappings with string keys (a key is the text as written:
``yes:`` is ``"yes"``), lists, strings, numbers, booleans and null. Dates stay strings, and the
tags that build other types (``!!binary``, ``!!set``, ``!!timestamp``, ``!!omap``, any
``!python/...``) are errors. Anchors, aliases and ``<<`` merges work, within bounds: a hostile
file can neither nest deeper than :data:`~hookcode.configfiles.MAX_DEPTH` levels (counted
through aliases, checked before anything recursive runs) nor make its aliases add more than
:data:`ALIAS_BUDGET` values and characters (a "billion laughs" is refused in the time it takes
to read it, before anything is built).

Every problem is a :class:`ValueError` whose message starts ``frontmatter line N`` (N counted
in the file, the opening ``---`` being line 1) or says the block is not closed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Hashable
from typing import Any

__all__ = ["ALIAS_BUDGET", "parse_frontmatter"]

#: how much aliases may add to the frontmatter as written: the values they repeat plus the
#: characters of the strings among them
ALIAS_BUDGET = 100_000

_YAML = "tag:yaml.org,2002:"
#: the tags whose values the reader builds; any other tag is an error
_KEPT_TAGS = tuple(_YAML + name for name in ("null", "bool", "int", "float", "str", "seq", "map"))
#: implicit types left out: a date stays a string, a lone ``=`` is a string
_DROPPED_RESOLVERS = (_YAML + "timestamp", _YAML + "value")
#: a number with an exponent and no dot
_EXPONENT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split ``---`` frontmatter from the body: (the frontmatter as a mapping, the body).

    Text that does not start with a ``---`` line has no frontmatter: ``({}, text)``. An empty
    block is ``{}``. Raises :class:`ValueError` when the block is not closed, is not valid
    YAML, is not a mapping, or breaks the bounds above."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise ValueError("frontmatter is not closed by a '---' line")
    value = _load("".join(line + "\n" for line in lines[1:end]))
    if value is None:
        return {}, "\n".join(lines[end + 1 :])
    if not isinstance(value, dict):
        kind = "a list" if isinstance(value, list) else f"the single value {value!r:.40}"
        raise ValueError(f"frontmatter line 2: expected 'key: value' lines, found {kind}")
    return value, "\n".join(lines[end + 1 :])


class _Invalid(ValueError):
    """A bound broken at a line of the frontmatter block (0-based, the block's own)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


def _load(block: str) -> Any:
    import yaml

    try:
        loader = _loader_class()(block)  # the reader checks every character here
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expansion(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except _Invalid as exc:
        raise ValueError(f"frontmatter line {exc.line + 2}: {exc.problem}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        line = mark.line if mark is not None else 0
        raise ValueError(f"frontmatter line {line + 2}: {problem}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (binary junk)
        line = block.count("\n", 0, exc.position)
        raise ValueError(
            f"frontmatter line {line + 2}: unacceptable character #x{exc.character:04x}: "
            f"{exc.reason}"
        ) from None


@functools.cache
def _loader_class() -> type[Any]:
    """PyYAML's safe loader, bounded: the class is built on first use, so that importing this
    module does not import yaml."""
    import yaml
    from yaml.nodes import MappingNode, ScalarNode

    from hookcode.configfiles import MAX_DEPTH

    class Loader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0

        # composing is recursive: a collection nested thousands of levels must stop here,
        # before Python's recursion limit is near
        def compose_sequence_node(self, anchor: Any) -> Any:
            return self._nested(super().compose_sequence_node, anchor)

        def compose_mapping_node(self, anchor: Any) -> Any:
            return self._nested(super().compose_mapping_node, anchor)

        def _nested(self, compose: Any, anchor: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    line = self.peek_event().start_mark.line
                    raise _Invalid(line, f"nested deeper than {MAX_DEPTH} levels")
                return compose(anchor)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Hashable, Any]:
            if not isinstance(node, MappingNode):  # ``!!map [a, b]``
                raise yaml.constructor.ConstructorError(
                    None, None, f"expected a mapping, found a {node.id}", node.start_mark
                )
            self.flatten_mapping(node)  # ``<<`` merges
            out: dict[Hashable, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode):
                    raise yaml.constructor.ConstructorError(
                        None, None, "a key must be a plain value", key_node.start_mark
                    )
                out[key_node.value] = self.construct_object(value_node, deep=deep)
            return out

    Loader.yaml_constructors = {tag: yaml.SafeLoader.yaml_constructors[tag] for tag in _KEPT_TAGS}
    Loader.yaml_constructors[None] = yaml.SafeLoader.yaml_constructors[None]  # an error
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED_RESOLVERS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    # YAML 1.1 reads ``1e3`` as a string; 1.2 (and the JSON it extends) as a number
    Loader.add_implicit_resolver(_YAML + "float", _EXPONENT, list("-+0123456789"))
    return Loader


def _check_expansion(root: Any) -> None:
    """Refuse a node graph whose aliases nest deeper than MAX_DEPTH levels, refer to a node
    that contains them, or add more than :data:`ALIAS_BUDGET` to the block as written.

    Each distinct node is visited once (without recursion) and its expanded size (values plus
    string characters) and depth computed from its children's, so an alias bomb costs no more
    than its own text."""
    from yaml.nodes import MappingNode, ScalarNode

    from hookcode.configfiles import MAX_DEPTH

    def children(node: Any) -> list[Any]:
        if isinstance(node, MappingNode):
            return [child for pair in node.value for child in pair]
        return [] if isinstance(node, ScalarNode) else list(node.value)

    measured: dict[int, tuple[int, int]] = {}  # id -> (expanded size, depth)
    open_nodes: set[int] = set()
    written = 0  # the size with every node counted once
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if not done:
            if key in measured:
                continue
            if key in open_nodes:
                raise _Invalid(node.start_mark.line, "an alias refers to a node that contains it")
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children(node))
            continue
        open_nodes.discard(key)
        if isinstance(node, ScalarNode):
            own, size, depth = 1 + len(node.value), 1 + len(node.value), 0
        else:
            parts = [measured[id(child)] for child in children(node)]
            own, size = 1, 1 + sum(s for s, _ in parts)
            depth = 1 + max((d for _, d in parts), default=0)
        if depth > MAX_DEPTH:
            raise _Invalid(node.start_mark.line, f"nested deeper than {MAX_DEPTH} levels")
        written += own
        if size - written > ALIAS_BUDGET:
            raise _Invalid(
                node.start_mark.line,
                f"its aliases expand it by more than {ALIAS_BUDGET:,} values and characters",
            )
        measured[key] = (size, depth)
