"""Diagnostics after a change: the files told to a server, the wait for what it publishes,
and the report of every file's latest diagnostics (:meth:`Manager.diagnose` runs it for each
server concerned)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookcode_tool_lsp.client import LspClient
from hookcode_tool_lsp.servers import ServerSpec, language_id

__all__ = ["DiagnosticsReport", "notify_and_wait"]


@dataclass
class DiagnosticsReport:
    """Diagnostics after a change: every known file's latest diagnostics (merged over the
    servers), and a note per server that could not give any."""

    files: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    #: changed files not sent to any server (too large), with why
    large: list[str] = field(default_factory=list)
    #: changed files a server published no diagnostics for in time, with a line saying so:
    #: their ``files`` entry (absent, or from before the change) says nothing of the new text
    late: list[tuple[str, str]] = field(default_factory=list)  # (path, what to say)


async def notify_and_wait(
    client: LspClient,
    spec: ServerSpec,
    paths: list[str],
    gone: list[str],
    texts: Mapping[str, str | None],
    created: frozenset[str],
    timeout: float,
    debounce: float,
    other_files: bool,
    busy_cap: float,
) -> list[tuple[str, str]]:
    """Send the changes and wait for the diagnostics; (path, line) for each changed file
    whose diagnostics did not come in time."""
    for path in gone:
        await client.close_document(path)
    await client.files_changed([(p, 3) for p in gone])
    waits = []
    waited: list[str] = []
    changes = []
    for path in paths:
        text = texts.get(path)
        if text is None:
            continue
        since = client.last_seq(path)
        # "created" for a file the server has not seen from us: it may have appeared on
        # disk after the server listed the workspace (servers drop their caches for it)
        unseen = Path(path).as_uri() not in client.documents
        version, sent = await client.sync_document(path, text, language_id(spec, path))
        changes.append((path, 1 if path in created or unseen else 2))
        publication = client.publications.get(Path(path).as_uri())
        if (
            not sent
            and publication is not None
            and (publication.version is None or publication.version >= version)
        ):
            continue  # nothing new to check: the latest diagnostics stand
        waits.append(
            client.wait_diagnostics(
                path,
                since=since if sent else 0,
                version=version,
                debounce=debounce,
                timeout=timeout,
                quiet_all=other_files,
                busy_cap=busy_cap,
            )
        )
        waited.append(path)
    await client.files_changed(changes)
    came = await asyncio.gather(*waits)
    return [
        (path, f"diagnostics for {path} not received within {round(outcome.limit, 1):g} s")
        for path, outcome in zip(waited, came, strict=True)
        if not outcome.fresh
    ]
