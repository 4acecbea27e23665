"""MCP client: every tool of every configured MCP server becomes a hookcode tool.

Config (``[mcp.NAME]``, reference agent-loop.md §11)::

    [mcp.time]
    type = "local"
    command = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]
    environment = { TZ = "UTC" }
    timeout = 30000            # ms: connect and tools/list, and each call

    [mcp.docs]
    type = "remote"
    url = "http://127.0.0.1:8766/mcp"
    headers = { Authorization = "Bearer abc" }
    oauth = false              # or [mcp.docs.oauth] clientId / clientSecret / scope

* Tools are named ``<server>_<tool>`` (characters outside ``[a-zA-Z0-9_-]`` become ``_``),
  with the server's JSON schema (forced to an object without extra properties). They go
  through ``invoke`` like any tool and ask permission ``<server>_<tool>`` (patterns and
  "always" ``["*"]``); by default they ask (a plugin default rule ``"<server>_*"`` = ask), so
  ``[permission] "time_*" = "allow"`` decides otherwise.
* An MCP tool never replaces another tool: a clash is skipped and reported.
* Servers start on first need (when the tool registry is built), in parallel, each within its
  ``timeout``; one that fails is reported (``hookcode mcp list``) and the others work. One
  that loses its connection later is started again by the next call of one of its tools (at
  most ``RESTART_LIMIT`` times within ``RESTART_WINDOW`` seconds, see ``_restart``).
* Remote servers get an OAuth provider unless ``oauth = false``: ``hookcode mcp auth NAME``
  logs in (in the browser), the tokens go to ``<data dir>/mcp-auth.json`` and are refreshed
  when they expire; without a login a server is ``needs_auth`` (or
  ``needs_client_registration``) at once, never waiting for one (``_oauth``, ``_login``).
* Results: text parts joined by a blank line, images and binary resources as attachments
  (a line of text says what is attached), ``text/*`` blobs decoded, ``isError`` as an error
  result; ``notifications/tools/list_changed`` refreshes the list (``_content``).
* A tool whose ``execution.taskSupport`` is ``required`` is not offered to the model (MCP
  tasks are not supported); ``hookcode mcp list`` says so.
* A streamable-HTTP server that no longer knows the session (it restarted: HTTP 404, or 400
  naming the session) gets a new one, and the call is made once more (``_http``).
* Resources: the tools ``mcp_list_resources`` and ``mcp_read_resource``
  (``_resources``). Prompts: chat commands ``/<server>:<prompt> ARGS`` (``_catalog``).

Only the standard library and hookcode are imported here: pydantic, jsonschema and the
``mcp`` SDK are imported when a server is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookcode import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    import typer
    from hookcode.permission import Rule
    from hookcode.runtime import Runtime

    from hookcode_mcp._client import Manager

__all__ = ["apply_pending", "close", "manager", "status"]

#: what a server's name may not hold in its tools' names (replaced by ``_``)
_UNSAFE = r"[^a-zA-Z0-9_-]"


def _configured(config: Any) -> list[str]:
    """The names of the ``[mcp.NAME]`` sections, in config order."""
    sections = getattr(config, "sections", {}) or {}
    return [key[len("mcp.") :] for key in sections if key.startswith("mcp.")]


def manager(runtime: Runtime) -> Manager:
    """The MCP manager of a runtime (servers, their status and tools)."""
    from hookcode_mcp._client import manager_for

    return manager_for(runtime)


def status(runtime: Runtime, *, catalog: bool = False) -> list[dict[str, Any]]:
    """Each configured server: name, type, status (connected, disabled, failed, needs_auth,
    needs_client_registration), error, restarts (after a lost connection), and its tools
    (starting the servers if needed). ``catalog``: also its ``prompts`` (name, command,
    arguments, description) and ``resources`` / ``resource_templates`` (asked of each
    connected server now)."""
    if not _configured(runtime.config):
        return []
    found = manager(runtime)
    out = found.status()
    if catalog:
        from hookcode_mcp._catalog import describe_catalog

        for server, entry in zip(found.servers.values(), out, strict=True):
            entry.update(describe_catalog(server))
    return out


def apply_pending(runtime: Runtime) -> list[str]:
    """Register the tools of servers that re-listed theirs (``tools/list_changed``) now;
    returns the names that changed. Done at every model request and MCP call anyway."""
    if not _configured(runtime.config):
        return []
    return manager(runtime).apply_pending()


def close(runtime: Runtime) -> None:
    """Stop the sessions (and server processes) of a runtime; they also stop when it ends."""
    if _configured(runtime.config):
        manager(runtime).close()


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------


@hookimpl
def config_schema() -> dict[str, Any]:
    from hookcode_mcp._config import McpServerConfig

    return {"mcp.*": McpServerConfig}


@hookimpl
def register_tools(register: Callable[..., None], runtime: Runtime) -> None:
    if not _configured(runtime.config):
        return  # nothing configured: no thread, no SDK import
    from hookcode_mcp._resources import resource_tools

    found = manager(runtime)
    register(*found.tools(), *resource_tools(found))


@hookimpl
def permission_defaults(agent: Any, config: Any) -> list[Rule]:
    """MCP tools ask by default (MCP's own guidance); the user's rules override this."""
    names = _configured(config)
    if not names:
        return []
    import re

    from hookcode.permission import Rule

    return [Rule(f"{re.sub(_UNSAFE, '_', name)}_*", "*", "ask", "plugin:mcp") for name in names]


@hookimpl
def chat_command(name: str, arguments: str, runtime: Runtime) -> str | None:
    """``/<server>:<prompt> ARGS``: the server's prompt, as the user's message."""
    if ":" not in name or not _configured(runtime.config):
        return None
    from hookcode_mcp._catalog import expand_prompt

    return expand_prompt(manager(runtime), name, arguments)


@hookimpl
def chat_commands(runtime: Runtime) -> list[tuple[str, str]] | None:
    """The configured servers' prompts, for the chat's ``/help``."""
    if not _configured(runtime.config):
        return None
    from hookcode_mcp._catalog import prompt_commands

    return prompt_commands(manager(runtime))


@hookimpl
def chat_message(runtime: Runtime) -> None:
    _apply_here(runtime)


@hookimpl
def system_prompt(runtime: Runtime) -> None:
    _apply_here(runtime)


def _apply_here(runtime: Runtime) -> None:
    """Before a model request: take re-listed tools into the registry (on the runtime's own
    thread: the registry is never touched from the MCP loop)."""
    import sys

    client = sys.modules.get("hookcode_mcp._client")
    if client is None:  # no server was ever started otherwise
        return
    found = client.existing_manager(runtime)
    if found is not None:
        found.apply_pending()


@hookimpl
def cli(app: typer.Typer) -> None:
    from hookcode_mcp._cli import register

    register(app)
