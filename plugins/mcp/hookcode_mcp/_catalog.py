"""A server's prompts and resources (beside its tools): listed when asked (``hookcode mcp
list``, the ``mcp_list_resources`` tool, a ``/server:prompt`` command), never at start-up.

* Prompts become chat commands: ``/<server>:<prompt> ARGS`` gets the prompt (``prompts/get``)
  with its arguments and sends what it says as the user's message. ``ARGS`` are words (shell
  quoting): ``name=value`` sets an argument by name, the others fill the prompt's arguments in
  order; one left over joins the last argument (``/git:commit fix the parser`` gives a single
  argument ``fix the parser``).
* Resources are read by the model through two tools (:mod:`hookcode_mcp._resources`).

Every request goes through :meth:`Server.request` (a server that lost its connection or its
session is started again first).
"""

from __future__ import annotations

import contextlib
import shlex
from typing import TYPE_CHECKING, Any

from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode_mcp._client import Manager
    from hookcode_mcp._server import Server

__all__ = [
    "PromptError",
    "command_name",
    "describe_catalog",
    "expand_prompt",
    "fill_arguments",
    "list_prompts",
    "list_resources",
    "offers",
    "prompt_commands",
    "prompt_text",
    "read_resource",
]

#: pages of a list followed before giving up (a paginator that never ends)
MAX_PAGES = 100


class PromptError(HookcodeError):
    """A ``/server:prompt`` command that cannot be run (unknown prompt, missing argument)."""


def offers(server: Server, feature: str) -> bool:
    """Whether a connected server said it offers ``feature`` (``prompts``, ``resources``)."""
    return server.status == "connected" and getattr(server.capabilities, feature, None) is not None


async def _paged(session: Any, method: str, field: str) -> list[Any]:
    from mcp import types

    found: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await getattr(session, method)(params=params)
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def list_prompts(server: Server) -> list[Any]:
    """The server's prompts (``Prompt``), or none when it offers none."""
    if not offers(server, "prompts"):
        return []
    return server.request_sync("prompts/list", lambda s, _: _paged(s, "list_prompts", "prompts"))


async def list_resources(server: Server) -> tuple[list[Any], list[Any]]:
    """The server's resources and resource templates (none when it offers none)."""
    if not offers(server, "resources"):
        return [], []
    resources = await server.request(
        "resources/list", lambda s, _: _paged(s, "list_resources", "resources")
    )
    try:
        templates = await server.request(
            "resources/templates/list",
            lambda s, _: _paged(s, "list_resource_templates", "resource_templates"),
        )
    except HookcodeError:
        templates = []  # templates are optional: a server may not answer the method
    return resources, templates


async def read_resource(server: Server, uri: str) -> Any:
    """``resources/read``: the ``ReadResourceResult`` of ``uri``."""
    return await server.request(f"resources/read {uri}", lambda s, _: s.read_resource(uri))


# ---------------------------------------------------------------------------------------------
# prompts as chat commands
# ---------------------------------------------------------------------------------------------


def command_name(server: str, prompt: str) -> str:
    """The chat command of a prompt, without its slash: ``server:prompt``."""
    return f"{server}:{prompt}"


def fill_arguments(prompt: Any, words: str) -> dict[str, str]:
    """The arguments of ``prompt`` from the words typed after its command (see the module's
    docstring); raises :class:`PromptError` naming what is wrong."""
    declared = list(prompt.arguments or [])
    names = [argument.name for argument in declared]
    try:
        tokens = shlex.split(words)
    except ValueError as exc:
        raise PromptError(f"cannot read the arguments: {exc}") from None
    values: dict[str, str] = {}
    positional: list[str] = []
    for token in tokens:
        key, equals, value = token.partition("=")
        if equals and key in names:
            values[key] = value
        else:
            positional.append(token)
    free = [name for name in names if name not in values]
    if positional and not free:
        raise PromptError(
            f"too many arguments: {' '.join(positional)!r} "
            f"(the prompt takes {', '.join(names) or 'none'})"
        )
    for index, name in enumerate(free):
        if index >= len(positional):
            break
        last = index == len(free) - 1
        values[name] = " ".join(positional[index:]) if last else positional[index]
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        usage = " ".join(f"<{n}>" if _required(declared, n) else f"[{n}]" for n in names)
        raise PromptError(f"missing argument {', '.join(missing)} (usage: {usage})")
    return values


def _required(declared: list[Any], name: str) -> bool:
    return any(a.name == name and a.required for a in declared)


def prompt_text(result: Any) -> str:
    """A ``GetPromptResult`` as one user message: each message's text (an embedded text
    resource's too); a conversation of several roles keeps who says what."""
    from hookcode_mcp._content import resource_parts

    roles = {message.role for message in result.messages}
    parts: list[str] = []
    for message in result.messages:
        content = message.content
        kind = getattr(content, "type", None)
        if kind == "text":
            text = content.text
        elif kind == "resource":
            texts, _ = resource_parts(content.resource)
            text = "\n\n".join(texts) or f"[attachment: {content.resource.uri}]"
        elif kind == "resource_link":
            text = f"[resource: {content.uri}]"
        else:
            text = f"[{kind} content omitted]"
        parts.append(f"{message.role}: {text}" if len(roles) > 1 else text)
    return "\n\n".join(parts)


def expand_prompt(manager: Manager, name: str, words: str) -> str | None:
    """The user message of chat command ``/name words`` when ``name`` is ``server:prompt`` of
    a configured server, else None; raises :class:`PromptError` for a known server whose
    prompt cannot be run."""
    server_name, colon, prompt_name = name.partition(":")
    server = manager.servers.get(server_name)
    if not colon or server is None:
        return None
    manager.start()
    prompts = {prompt.name: prompt for prompt in list_prompts(server)}
    prompt = prompts.get(prompt_name)
    if prompt is None:
        known = ", ".join(f"/{command_name(server_name, p)}" for p in prompts) or "none"
        raise PromptError(f"MCP server {server_name!r} has no prompt {prompt_name!r} ({known})")
    arguments = fill_arguments(prompt, words)
    result = server.request_sync(
        f"prompts/get {prompt_name}", lambda s, _: s.get_prompt(prompt_name, arguments)
    )
    return prompt_text(result)


def prompt_commands(manager: Manager) -> list[tuple[str, str]]:
    """(command, description) of every prompt of the configured servers that answer (the
    chat's ``/help``); a server that fails to list its prompts is left out."""
    manager.start()
    found: list[tuple[str, str]] = []
    for server_name, server in manager.servers.items():
        try:
            prompts = list_prompts(server)
        except HookcodeError:
            continue
        for prompt in prompts:
            arguments = " ".join(argument.name.upper() for argument in prompt.arguments or [])
            description = " ".join((prompt.description or "").split())
            usage = f"{arguments}  {description}".strip() if arguments else description
            found.append((command_name(server_name, prompt.name), usage or "MCP prompt"))
    return found


# ---------------------------------------------------------------------------------------------
# hookcode mcp list
# ---------------------------------------------------------------------------------------------


def describe_catalog(server: Server) -> dict[str, Any]:
    """A connected server's ``prompts`` (name, ``command``, arguments, description),
    ``resources`` and ``resource_templates`` (uri, name, MIME type), asked of it now; a
    failure is named in ``catalog_error``."""
    entry: dict[str, Any] = {"prompts": [], "resources": [], "resource_templates": []}
    try:
        for prompt in list_prompts(server):
            entry["prompts"].append(
                {
                    "name": prompt.name,
                    "command": "/" + command_name(server.name, prompt.name),
                    "arguments": [
                        {"name": a.name, "required": bool(a.required)}
                        for a in prompt.arguments or []
                    ],
                    "description": prompt.description,
                }
            )
        if offers(server, "resources"):
            resources = server.request_sync(
                "resources/list", lambda s, _: _paged(s, "list_resources", "resources")
            )
            entry["resources"] = [
                {"uri": str(r.uri), "name": r.name, "mime_type": r.mime_type} for r in resources
            ]
            with contextlib.suppress(HookcodeError):  # templates are optional
                templates = server.request_sync(
                    "resources/templates/list",
                    lambda s, _: _paged(s, "list_resource_templates", "resource_templates"),
                )
                entry["resource_templates"] = [
                    {"uri": t.uri_template, "name": t.name, "mime_type": t.mime_type}
                    for t in templates
                ]
    except HookcodeError as exc:
        entry["catalog_error"] = str(exc)
    return entry
