"""The event bus: everything that happens is published here and reaches the ``event`` hook.

Event types: ``session.created``, ``session.updated``, ``session.idle`` (the loop ended: the
model stopped asking for tools), ``message.updated``, ``tool.started``,
``tool.updated`` (live title/metadata), ``tool.completed``, ``tool.failed``,
``permission.asked``, ``permission.replied`` (``front_end``: the plugin that answered, None
when nobody did), ``permission.decided`` (the votes settled a request without asking:
``action``, ``votes``, and ``rules`` with each pattern's deciding rule and its source),
``file.edited`` (a file-edit transaction wrote or removed ``file``, the absolute path as the
tool named it; ``deleted``), ``todo.updated``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookcode.plugin_manager import HookCaller

__all__ = ["Event", "EventBus"]


@dataclass
class Event:
    """One event: a dotted ``type`` and its ``properties``."""

    type: str
    properties: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)


class EventBus:
    """Publishes events to in-process subscribers and to the plugins' ``event`` hook."""

    def __init__(self, plugins: HookCaller | None = None, runtime: object = None) -> None:
        """``runtime``: the one the ``event`` hook is told about (its ``runtime`` argument)."""
        self._plugins = plugins
        self._runtime = runtime
        self._subscribers: list[Callable[[Event], None]] = []

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback`` for every event; returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    @property
    def listened(self) -> bool:
        """Whether anyone receives events (a subscriber or an ``event`` hook): a publisher
        whose event is costly to build may skip it when nobody does."""
        return bool(self._subscribers) or (
            self._plugins is not None and self._plugins.has_impls("event")
        )

    def publish(self, type: str, **properties: Any) -> Event:
        event = Event(type=type, properties=properties)
        if self._subscribers:
            for callback in list(self._subscribers):
                callback(event)
        if self._plugins is not None and self._plugins.has_impls("event"):
            self._plugins.call_each("event", event=event, runtime=self._runtime)
        return event
