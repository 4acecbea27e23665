"""The ``[audit]`` config section (imported when the config is validated, never at start-up)."""

from __future__ import annotations

from typing import Literal

from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AuditConfig"]


class AuditConfig(BaseModel):
    """``[audit]``: the hash-chained log of every tool call and permission decision."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    enabled: bool = Field(
        default=True,
        description="Write the audit log (on by default).",
        json_schema_extra=trusted_only(keep=[True]),
    )
    to: Literal["file", "store"] = Field(
        default="file",
        description='Where the records go: "file" (the `path` below) or "store": the audit log '
        "of the configured store, shared by every process and machine using it (needs a store "
        "that keeps one: hookcode-store-postgres; the embedded SQLite store does not).",
        json_schema_extra=trusted_only(),
    )
    path: str | None = Field(
        default=None,
        description='The log file (with to = "file"); default <data dir>/audit.jsonl. A '
        "relative path is taken relative to the data directory; ~ is expanded.",
        json_schema_extra=trusted_only(),
    )
    redact: list[str] = Field(
        default_factory=list,
        description="Names of environment variables whose values are scrubbed from every "
        "record, besides every secret the runtime knows (provider keys, variables named "
        "like *API_KEY*, *_TOKEN, *SECRET*, *PASSWORD*, stored credentials, configured "
        "headers, MCP tokens).",
    )
    fail_closed: bool = Field(
        default=True,
        description="Refuse a tool call whose audit record cannot be written (before the tool "
        "runs). false: run it anyway and only report the failure on stderr.",
        json_schema_extra=trusted_only(keep=[True]),
    )
    max_output: int = Field(
        default=2000,
        ge=0,
        description="Characters of a call's output kept in its record.",
        json_schema_extra=trusted_only(),
    )
    fsync: bool = Field(
        default=False,
        description="fsync the log file after every record (a store commits each record).",
        json_schema_extra=trusted_only(keep=[True]),
    )
