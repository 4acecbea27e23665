"""``[lsp]``: imported only when the config is loaded (it needs pydantic)."""

from __future__ import annotations

from typing import Any

from hookcode.tools import MAX_TIMEOUT_SECONDS
from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field


class ServerConfig(BaseModel):
    """``[lsp.servers.NAME]``: one language server. A NAME of a built-in default
    (`basedpyright`, `pyright`, `pylsp`) changes that default; any other NAME adds a server.
    Servers configured for an extension replace the built-in defaults for it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: list[str] | None = Field(
        default=None,
        description="The program and its arguments (stdio). A bare name is looked up on PATH "
        "and in hookcode's own environment; required for a new server.",
        examples=[["basedpyright-langserver", "--stdio"]],
        json_schema_extra=trusted_only(),
    )
    extensions: list[str] | None = Field(
        default=None,
        description="File extensions the server handles (with the dot); required for a new server.",
        examples=[[".py", ".pyi"]],
    )
    env: dict[str, str] = Field(
        default={},
        description="Variables added to hookcode's environment for the server.",
        examples=[{"PYTHONPATH": "src"}],
        json_schema_extra=trusted_only(),
    )
    initialization: dict[str, Any] = Field(
        default={},
        description="`initializationOptions` sent with `initialize` (servers take paths of "
        "programs to run there).",
        examples=[{"diagnostics": {"enable": True}}],
        json_schema_extra=trusted_only(),
    )
    root_markers: list[str] | None = Field(
        default=None,
        description="Files or directories that mark a workspace root; the nearest directory "
        "holding one (up to the worktree) is the root, else the worktree. One server runs "
        "per root.",
        examples=[["pyproject.toml", "setup.py"]],
    )
    language_id: str | None = Field(
        default=None,
        description="The `languageId` of the documents (default: from the extension).",
        examples=["python"],
    )
    disabled: bool = Field(
        default=False,
        description="true: never start this server.",
        examples=[True],
        json_schema_extra=trusted_only(keep=[True]),
    )


class LspConfig(BaseModel):
    """``[lsp]``: language servers, the `lsp` tool and diagnostics after edits."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    enabled: bool = Field(
        default=True,
        description="false: no `lsp` tool, no server is started, no diagnostics after edits.",
        examples=[False],
        json_schema_extra=trusted_only(keep=[False]),
    )
    diagnostics: bool = Field(
        default=True,
        description="Append the errors a server reports to the output of write, edit, "
        "multiedit and apply_patch.",
        examples=[False],
    )
    diagnostics_wait: float = Field(
        default=30.0,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds an edit may wait for a server's diagnostics while the server is "
        "cold (nothing published yet) or reports work in progress (`$/progress`, e.g. loading "
        "the project); a server that is ready gets `diagnostics_ready_wait`. A file whose "
        "diagnostics did not come in time is said so in the output, never shown as clean.",
        examples=[60],
    )
    diagnostics_ready_wait: float = Field(
        default=3.0,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds an edit waits for the diagnostics of a server that is ready "
        "(neither cold nor reporting work in progress), and for a busy one after its work "
        "ended: more for a server that checks slowly without reporting progress, less for "
        "edits that return sooner when a server stays silent.",
        examples=[10],
    )
    start_timeout: float = Field(
        default=20.0,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds a server may take to start (`initialize`).",
        examples=[30],
    )
    request_timeout: float = Field(
        default=30.0,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description="Seconds one `lsp` tool request may take.",
        examples=[60],
    )
    max_file_bytes: int = Field(
        default=512 * 1024,
        gt=0,
        description="Larger files are never sent to a server (no diagnostics, no `lsp` "
        "tool): a server can take minutes over a huge generated file.",
        examples=[1048576],
    )
    servers: dict[str, ServerConfig] = Field(
        default={},
        description="Language servers by name (`[lsp.servers.NAME]`).",
        examples=[{"ruff": {"command": ["ruff", "server"], "extensions": [".py"]}}],
    )
