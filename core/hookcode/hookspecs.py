"""Every hook a hookcode plugin can implement: the plugin author's reference.

A plugin is a module (or object) registered under the ``hookcode`` entry-point group whose
functions are marked with :data:`hookcode.hookimpl`. Every hook is called with keyword
arguments, and an implementation may accept any subset of them::

    from hookcode import hookimpl

    @hookimpl
    def tool_execute_before(call):
        if call.tool == "bash" and "sudo" in call.args.get("command", ""):
            raise ToolBlocked("no sudo here")

How hookcode calls hooks
------------------------
* **Registration hooks** (``register_tools``, ``provider``, ``auth``, ``agent``,
  ``config_schema``, ``project_code``, ``permission_defaults``, ``cli``) are collected from
  every plugin in *registration order*:
  core first, then the ``hookcode-*`` distributions sorted by entry-point name, then all
  other distributions sorted by (distribution, entry point); an implementation marked
  ``trylast`` (``tryfirst``) counts as registered after (before) every other, which is how
  file-based local tools come after every packaged tool. Where names clash (two tools
  called ``read``) the later registration wins, and the loser is reported as shadowed.
* Hooks whose other arguments do not lead to the :class:`~hookcode.runtime.Runtime` get it
  as their ``runtime`` argument (``register_tools``, ``config``, ``chat_message``, ``event``,
  ...); tool hooks reach it as ``ctx.runtime``. Both are typed :class:`~hookcode.tools.Host`
  (``hookcode.Host``), the part of the runtime plugins use; the object is the runtime itself,
  so an implementation may annotate its parameter ``Runtime`` instead, or narrow with
  ``isinstance``. Per-run state belongs in ``runtime.stash``
  (:mod:`hookcode.stash`), and what must stop when the run ends in ``runtime.on_close``.
* **Service hooks** (``store``) are asked when the run first needs the service; the first
  plugin that answers (not None) provides it.
* **Lifecycle hooks** run in pluggy's order: the most recently registered plugin first,
  adjusted by ``tryfirst`` / ``trylast``. Implementations mutate the objects they are given.
* Core calls implementations one by one, so one that raises never keeps another from
  running: a raising implementation is skipped with one line on stderr naming its plugin.
  Exceptions: a raising ``tool_execute_before``, ``tool_execute`` wrapper or
  ``tool_execute_after`` ends that tool call as an error result naming the plugin (tool
  calls fail closed), and a raising ``permission_ask`` counts as an ``ask`` vote.
* ``tool_execute`` may be wrapped with ``@hookimpl(wrapper=True)``: a generator (sync, or
  ``async def`` with ``yield``) that yields once and receives the result (or the exception)
  of the rest of the chain, like pluggy's new-style wrappers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from hookcode.plugin_manager import PROJECT_NAME as PROJECT_NAME

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    import typer
    from pydantic import BaseModel

    from hookcode.agents import AgentSpec
    from hookcode.auth import Credentials
    from hookcode.config import Config
    from hookcode.events import Event
    from hookcode.messages import UserMessage
    from hookcode.permission import PermissionRequest, Reply, Rule, ShellAnalysis, Vote
    from hookcode.providers import AuthMethod, Provider
    from hookcode.question import QuestionRequest
    from hookcode.shell import RequestPlan
    from hookcode.store import SessionRecord, Store
    from hookcode.tools import Host, Tool, ToolCall, ToolContext, ToolResult

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

# =============================================================================================
# Registration: what a plugin contributes (collected from every plugin)
# =============================================================================================


@hookspec
def register_tools(register: Callable[..., None], runtime: Host) -> None:
    """Contribute tools::

        @hookimpl
        def register_tools(register):
            register(word_count, line_count)

    Called when the tool registry is built. Keep it cheap: build nothing heavy here, since
    schemas are built lazily on first use.

    Args:
        register: call it with one or more :class:`~hookcode.Tool` objects (for example
            functions decorated with :func:`hookcode.tool`); the registry records that this
            plugin registered them. A tool whose name another plugin also uses shadows the
            earlier registration (or is shadowed by a later one); ``hookcode tools list``
            shows both. A tool with ``never_replaces = True`` (MCP tools) never shadows
            another: when its name is taken it is skipped and reported.
        runtime: the runtime whose registry is built (its ``config``, ``cwd``, ``trusted``):
            a plugin may register tools only where they are configured.

    Returns:
        Nothing.
    """
    ...


@hookspec
def tool() -> list[Tool]:
    """Deprecated (one release): implement :func:`register_tools` instead. Still collected,
    in registration order with ``register_tools``; a plugin implementing it gets one
    :class:`DeprecationWarning` naming it.

    Returns:
        A list of :class:`~hookcode.Tool` objects.
    """
    ...


@hookspec
def provider(config: Config, credentials: Credentials) -> list[Provider]:
    """Contribute model providers.

    Args:
        config: the validated config (a provider reads its ``[provider.NAME]`` section with
            ``config.section("provider.NAME")``).
        credentials: :class:`~hookcode.auth.Credentials`; ``credentials.get(provider_id,
            ["ENV_VAR"])`` gives the key from the environment or ``hookcode auth login``.
            Look keys up when a request is made, never at import.

    Returns:
        A list of :class:`~hookcode.providers.Provider` objects. Model ids are
        ``"<provider id>/<model>"``; import the provider's SDK inside ``stream()``, never at
        module level.
    """
    ...


@hookspec
def auth(config: Config) -> list[AuthMethod]:
    """Contribute ways for a provider to get credentials (API key, environment, OAuth).

    Args:
        config: the validated config (configured providers have their own key variables).

    Returns:
        A list of :class:`~hookcode.providers.AuthMethod` objects.
    """
    ...


@hookspec
def agent(config: Config, data_dir: Path) -> list[AgentSpec]:
    """Contribute named agents (prompt, model, step limit, permission rules, mode).

    Args:
        config: the validated config (``config.agent`` holds the ``[agent.NAME]`` tables, so a
            policy can build custom agents from them).
        data_dir: hookcode's data directory (spill files live in ``data_dir / "tool-output"``).

    Returns:
        A list of :class:`~hookcode.agents.AgentSpec`. A later agent with the same name
        replaces an earlier one; ``[agent.NAME]`` config is applied on top.
    """
    ...


@hookspec
def cli(app: typer.Typer) -> None:
    """Add commands to the ``hookcode`` command line.

    Args:
        app: the root typer application; add commands or sub-apps to it.

    Returns:
        Nothing.
    """
    ...


@hookspec
def config_schema() -> dict[str, type[BaseModel]]:
    """Claim config sections.

    Returns:
        A mapping from a dotted key pattern (``"tool.bash"``, ``"provider.*"``, ``"mcp.*"``,
        ``"audit"``) to the pydantic model that validates that section. ``*`` matches one key
        segment. Two plugins claiming one pattern is a load error naming both. A setting
        that runs a program, sends data or credentials somewhere or loosens a policy is
        declared with ``json_schema_extra=hookcode.trust.trusted_only()`` on its field (or on
        the whole model): the project files of an untrusted folder cannot set it.
    """
    ...


@hookspec
def project_code(cwd: Path, worktree: Path, env: Mapping[str, str]) -> list[str]:
    """Name what this plugin would load or run from the project itself.

    Called when the worktree is not trusted (:mod:`hookcode.trust`), before anything of the
    project is loaded: by the CLI to decide whether to ask the user to trust the folder, and
    by the runtime for its one-line warning. Only look at files here (never import or run
    them); later, load them only when ``runtime.trusted`` is true. Settings of the project's
    config files need no answer here: declare them ``trusted_only`` instead.

    Args:
        cwd: the working directory (real path).
        worktree: the folder that needs trust (the git root of ``cwd``, else ``cwd``).
        env: the runtime's environment (``HOME``, ``HOOKCODE_CONFIG_DIR``...).

    Returns:
        Short descriptions, one per item (``.hookcode/tools/deploy.py``,
        ``skill 'release' (.claude/skills/release/SKILL.md)``); paths inside the worktree
        relative to it (``hookcode.trust.describe_path``).
    """
    ...


@hookspec
def permission_defaults(agent: AgentSpec, config: Config, runtime: Host) -> list[Rule]:
    """Contribute default permission rules for an agent.

    These are rules, not votes: they come after the agent's own defaults and before the
    user's config, so the user's rules override them. An allow or ask rule for a permission
    that the agent's own defaults deny outright is dropped; deny rules always apply.

    Args:
        agent: the agent whose rules are being assembled.
        config: the runtime's validated :class:`~hookcode.config.Config` (rules that depend
            on settings, e.g. ``[tool.bash] profile``); implementations may leave it out.
        runtime: the runtime the rules are for.

    Returns:
        A list of :class:`~hookcode.permission.Rule` (give each a ``source``).
    """
    ...


# =============================================================================================
# Services: what a plugin provides when the run needs it (the first answer wins)
# =============================================================================================


@hookspec(firstresult=True)
def store(url: str, runtime: Host) -> Store | None:
    """Open the store a configured URL names (``hookcode-store-postgres`` answers
    ``postgresql://`` and ``postgres://`` URLs).

    Called once per runtime, when the store is first used and a store URL is configured:
    ``HOOKCODE_STORE``, else the top-level ``store`` key of the user's config (a project's
    config cannot set it). Without a URL hookcode uses its SQLite file in the data directory,
    and ``sqlite:///abs/path.db`` is core's own; neither reaches this hook. Import the
    database driver here, not at module level. Never put the URL's password in a message:
    ``hookcode.store.urls.mask_url`` shows it masked.

    Args:
        url: the configured URL, exactly as written (it may hold a password).
        runtime: the runtime that will use the store (its ``env``, ``data_dir``, ``config``).

    Returns:
        An object implementing :class:`hookcode.store.Store` (opened, schema migrated), or
        None when the URL is not this plugin's. When no plugin answers, hookcode stops with an
        error naming the URL (password masked). Raise
        :class:`~hookcode.store.StoreError` (one line naming the database, never the
        password) when the URL is this plugin's but the store cannot be opened.
    """
    ...


# =============================================================================================
# Lifecycle: hooks that observe or change what is happening
# =============================================================================================


@hookspec(historic=True)
def config(config: Config, runtime: Host) -> None:
    """Called once after the config is loaded and validated.

    Historic: a plugin registered later still receives it.

    Args:
        config: the validated :class:`~hookcode.config.Config`; plugin sections are reached
            with ``config.section("tool.bash")``. Implementations may mutate it.
        runtime: the runtime being built: its ``cwd``, ``worktree``, ``env``, ``data_dir``,
            ``trust`` and ``plugins`` are set; its ``config`` (this one), registry and
            credentials are not yet.

    Returns:
        Nothing.
    """
    ...


@hookspec
def chat_message(message: UserMessage, session: SessionRecord, runtime: Host) -> None:
    """A user message, before it is stored and sent to the model.

    Args:
        message: the user message (text, parts, agent, model); mutate it in place.
        session: the :class:`~hookcode.store.SessionRecord` it belongs to.
        runtime: the runtime running the session.

    Returns:
        Nothing. Raise :class:`~hookcode.errors.PromptBlocked` to refuse the message: it is
        not sent and the run stops with the reason.
    """
    ...


@hookspec(firstresult=True)
def chat_command(name: str, arguments: str, runtime: Host) -> str | None:
    """A slash command typed in the chat (``/name arguments``) that the chat's own commands
    (``/help``, ``/model``, ``/clear``...) do not know; the MCP plugin runs ``/server:prompt`` this way.

    Args:
        name: the command without its slash (``git:commit``).
        arguments: the rest of the line, stripped.
        runtime: the runtime running the chat.

    Returns:
        The text to send as the user's message instead of the line, or None when the command
        is not this plugin's (when no plugin takes it, the chat says the command is unknown and
        sends nothing). Raise :class:`~hookcode.errors.HookcodeError` to refuse it: the chat
        prints the message and sends nothing.
    """
    ...


@hookspec
def chat_commands(runtime: Host) -> list[tuple[str, str]] | None:
    """The slash commands this plugin runs through :func:`chat_command`, for the chat's
    ``/help`` (the MCP plugin lists its servers' prompts).

    Args:
        runtime: the runtime running the chat.

    Returns:
        (name without its slash, one-line description) pairs, or None.
    """
    ...


@hookspec
def session_stop(session: SessionRecord, text: str, active: bool, runtime: Host) -> str | None:
    """The model ended its turn without asking for tools: the run is about to end.

    Args:
        session: the session (a :class:`~hookcode.store.SessionRecord`).
        text: what the model said last.
        active: True when this run already went on because of such an answer (Claude Code's
            ``stop_hook_active``): a hook that answers every time keeps the agent going
            until its step limit.
        runtime: the runtime running the session.

    Returns:
        None to let the run end, or a message to keep the agent going: it is added to the
        session as a user message (marked synthetic) and the loop takes another step, within
        the agent's step limit. The messages of every implementation are joined.
    """
    ...


@hookspec
def chat_params(
    params: dict[str, Any], session: SessionRecord, agent: AgentSpec, model: str, runtime: Host
) -> None:
    """Parameters of every model request.

    Args:
        params: ``temperature``, ``top_p``, ``max_tokens`` and ``options`` (provider-specific);
            mutate it in place.
        session: the session making the request.
        agent: the :class:`~hookcode.agents.AgentSpec` running.
        model: the model id (``"provider/model"``).
        runtime: the runtime running the session.

    Returns:
        Nothing.
    """
    ...


@hookspec
def system_prompt(
    parts: list[str], session: SessionRecord, agent: AgentSpec, model: str, runtime: Host
) -> None:
    """The system prompt of every model request.

    Args:
        parts: the prompt's parts, in order; add, edit or remove entries in place.
        session: the session making the request.
        agent: the :class:`~hookcode.agents.AgentSpec` running.
        model: the model id.
        runtime: the runtime running the session.

    Returns:
        Nothing.
    """
    ...


@hookspec
def tool_definition(tool_id: str, definition: dict[str, Any]) -> None:
    """A tool's definition as the model will see it (MCP tools included).

    Args:
        tool_id: the tool's name.
        definition: ``{"name", "description", "parameters"}``; mutate ``description`` or
            ``parameters`` (the JSON schema) in place.

    Returns:
        Nothing.
    """
    ...


@hookspec
def model_tools(model: str, tools: list[Tool], config: Config) -> None:
    """Choose which tools a model is offered (the reference's model rule lives here).

    Called whenever the tools of a model request are chosen (the definitions sent, a call
    resolved), after the agent's rules have hidden what they deny. ``policy_rules`` implements
    the rule for the tools that edit files: a model id with ``gpt-`` but neither ``oss`` nor
    ``gpt-4`` is offered the tools that take patches (``Tool.edits_files == "patch"``), every
    other model the others (``edits_files`` true); the ``edit_tools`` config key forces one
    kind (``"edit"``, ``"apply_patch"``) or offers ``"both"``.

    Args:
        model: the model id (``"provider/model"``).
        tools: every registered tool; remove in place the ones ``model`` must not be offered.
            Judge them by their declarations (``edits_files``, ``permission``), not by name.
        config: the runtime's validated :class:`~hookcode.config.Config`.

    Returns:
        Nothing. A tool removed by any implementation is withheld: the model is not told about
        it, and a call of it is an unknown tool.
    """
    ...


@hookspec
def tool_execute_before(call: ToolCall, ctx: ToolContext) -> None:
    """Before a tool runs, after its arguments validated (every call: model, batch, task, MCP).

    Args:
        call: the :class:`~hookcode.ToolCall`; ``call.args`` is the validated,
            JSON-compatible dict keyed by model-facing names. Mutate it or assign a new dict:
            core validates it again afterwards.
        ctx: the call's :class:`~hookcode.ToolContext`.

    Returns:
        Nothing. Raise :class:`~hookcode.ToolBlocked` to refuse the call; its reason reaches
        the model and the tool body does not run. Any other exception ends the call as an
        error naming your plugin.
    """
    ...


@hookspec(firstresult=True)
def tool_execute(call: ToolCall, ctx: ToolContext) -> ToolResult | None:
    """Run a tool. Core's own implementation (``trylast``) runs the tool's body.

    Wrap it with ``@hookimpl(wrapper=True)`` (a generator yielding once; ``async def`` allowed)
    for timing, tracing or caching; or return a result from a plain implementation
    (``tryfirst``; may be ``async def``) to answer without running the tool.

    Args:
        call: the validated call.
        ctx: the call's context.

    Returns:
        A :class:`~hookcode.ToolResult` to answer the call, or None to let the next
        implementation (eventually the tool) answer.
    """
    ...


@hookspec
def tool_execute_after(call: ToolCall, result: ToolResult, ctx: ToolContext) -> None:
    """After a successful call, after truncation.

    Args:
        call: the call.
        result: its :class:`~hookcode.ToolResult`; rewrite ``title``, ``output`` or
            ``metadata`` in place.
        ctx: the call's context.

    Returns:
        Nothing. An exception ends the call as an error naming your plugin.
    """
    ...


@hookspec
def tool_execute_error(call: ToolCall, error: BaseException, ctx: ToolContext) -> ToolResult | None:
    """After a failed call: validation, hooks, permission, the tool itself, timeout, abort.

    Args:
        call: the call.
        error: the exception (a :class:`~hookcode.ToolError` subclass for known failures).
        ctx: the call's context.

    Returns:
        A :class:`~hookcode.ToolResult` to recover (the call then succeeds with it), or None
        to observe only. Results returned for permission refusals and aborts are ignored.
    """
    ...


@hookspec
def permission_ask(request: PermissionRequest, runtime: Host) -> Vote | str | None:
    """Vote on a permission request. Deny beats ask beats allow; no vote at all means ask.

    Args:
        request: the :class:`~hookcode.permission.PermissionRequest` (permission, patterns,
            always, metadata, the call it belongs to, and the effective rules).
        runtime: the runtime asking.

    Returns:
        ``"allow"``, ``"deny"``, ``"ask"``, a :class:`~hookcode.permission.Vote` with a
        reason, or None to abstain. Raising counts as an ``"ask"`` vote.
    """
    ...


@hookspec(firstresult=True)
def permission_prompt(request: PermissionRequest, runtime: Host) -> Reply | None:
    """Resolve an ``ask``: a front end asks the user.

    Args:
        request: the pending request.
        runtime: the runtime asking.

    Returns:
        A :class:`~hookcode.permission.Reply` (``once``, ``always`` with a scope, ``reject``
        with optional feedback), or None if this front end cannot ask. With no answer at all
        (headless) the request is rejected.
    """
    ...


@hookspec(firstresult=True)
def question_prompt(request: QuestionRequest) -> list[list[str]] | None:
    """Ask the user structured questions (the ``question`` and ``plan_*`` tools).

    Args:
        request: the :class:`~hookcode.question.QuestionRequest`.

    Returns:
        One list of chosen answers per question, or None when dismissed or when this front
        end cannot ask.
    """
    ...


@hookspec(firstresult=True)
def shell_analyze(command: str, cwd: str) -> ShellAnalysis | None:
    """Analyse a shell command for the permission system.

    Args:
        command: the command text as the model wrote it.
        cwd: the directory it will run in.

    Returns:
        A :class:`~hookcode.permission.ShellAnalysis` (the simple commands it runs, their
        "always" prefixes, directories outside the project, whether anything was opaque), or
        None when this plugin cannot analyse it.
    """
    ...


@hookspec(firstresult=True)
def permission_plan(permission: str, pattern: str, ctx: ToolContext) -> RequestPlan | None:
    """The permission requests a call makes before it runs, for ``hookcode permissions
    explain PERMISSION PATTERN``.

    Most permissions are asked with the pattern as it is, and ``explain`` shows the rule that
    decides it. Some are not: a shell command (the ``bash`` permission) becomes requests for
    the directories outside the project it names, the files it reads, the protected files it
    writes, and one pattern per simple command it runs. The plugin that knows how a
    permission's pattern is taken apart answers here (``policy_shell`` and the bash tool do,
    through :func:`hookcode.shell.shell_plan`), so ``explain`` shows the same requests the
    call would ask.

    Args:
        permission: the permission being explained.
        pattern: the pattern given (for ``bash``: the command line).
        ctx: a :class:`~hookcode.ToolContext` for the agent being explained (no session, no
            call): its working directory, read rules and protected paths.

    Returns:
        A :class:`~hookcode.shell.RequestPlan` (the requests in the order they are asked, and
        the analysis they came from), or None when this plugin does not plan ``permission``.
    """
    ...


@hookspec
def shell_env(env: dict[str, str], cwd: str, ctx: ToolContext | None) -> None:
    """The environment of a shell command.

    Args:
        env: the environment; mutate it in place.
        cwd: the directory the command runs in.
        ctx: the tool call's context, or None for a command the user ran.

    Returns:
        Nothing.
    """
    ...


@hookspec
def event(event: Event, runtime: Host) -> None:
    """Every event on the bus: ``session.*``, ``message.*``, ``tool.*``, ``permission.*``,
    ``file.edited``, ``todo.updated``.

    Args:
        event: the :class:`~hookcode.events.Event` (``type`` and ``properties``). Observe only.
        runtime: the runtime whose bus published it.

    Returns:
        Nothing.
    """
    ...
