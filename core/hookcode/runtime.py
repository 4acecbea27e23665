"""The runtime: one object tying plugins, config, registry, permissions, store and events
together for a working directory. Built by :class:`Runtime` (never a module global).

The module is a little over the project's usual size and kept whole: it is the one class at
the top of core's imports, and each of its parts is a short delegation to a lower module or a
cache of what one builds (the agents and the rules, which :meth:`Runtime.invalidate` clears
together with the secrets' cache).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hookcode.agents import AgentSpec
from hookcode.calls import unrecorded_running
from hookcode.configfiles import data_dir_for, find_worktree
from hookcode.errors import HookcodeError
from hookcode.events import EventBus
from hookcode.fileio import PathLocks, PendingWrites, realpath_nearest
from hookcode.filetime import FileTimes
from hookcode.ids import new_id
from hookcode.permission import (
    PermissionService,
    Rule,
    Ruleset,
    rules_from_config,
    rules_from_legacy_tools,
)
from hookcode.plugins import Plugins, create_plugins
from hookcode.registry import Registry
from hookcode.stash import Stash
from hookcode.trust import Trust, TrustStore

if TYPE_CHECKING:
    from hookcode.auth import Credentials
    from hookcode.calls import AbortSignal, Outcome, ToolCall, ToolResult
    from hookcode.config import Config
    from hookcode.permission import PermissionRequest
    from hookcode.process import Processes
    from hookcode.protected import ProtectedPaths
    from hookcode.providers import Provider
    from hookcode.secrets import Secrets
    from hookcode.store import SessionRecord, Store, ToolPartRecord
    from hookcode.tooldef import Tool
    from hookcode.tools import ToolContext
    from hookcode.truncate import Truncator

__all__ = ["Runtime", "data_dir_for", "find_worktree"]

#: worker threads for sync tools: enough for a full batch (25) plus prompts
THREADS = 32
#: seconds between two clean-ups of old spill files
CLEANUP_INTERVAL = 3600.0


class Runtime:
    """Everything a session or a CLI command needs, for one working directory."""

    def __init__(
        self,
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        plugins: Plugins | None = None,
        strict_plugins: bool = False,
        extra_plugins: Mapping[str, object] | None = None,
        stderr: IO[str] | None = None,
        trusted: bool | None = None,
    ) -> None:
        """``trusted``: whether the worktree's own code and settings may run (see
        :mod:`hookcode.trust`); None (the default) asks the trust store in the data directory,
        so a folder nobody trusted stays untrusted. Given ``plugins`` should have been made
        with the same trust (``create_plugins(trusted=...)``)."""
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.cwd = Path(os.path.realpath(Path(cwd) if cwd is not None else Path.cwd()))
        if not self.cwd.is_dir():
            raise HookcodeError(
                f"working directory {self.cwd} does not exist or is not a directory"
            )
        self.worktree = find_worktree(self.cwd)
        self.data_dir = data_dir_for(self.env)
        if trusted is None:
            trusted = TrustStore(self.data_dir).trusted_by(self.worktree) is not None
        #: whether this worktree is trusted, and what was skipped because it is not
        self.trust = Trust(self.worktree, trusted)
        self.plugins = plugins or create_plugins(
            env=self.env,
            strict=strict_plugins,
            extra=extra_plugins,
            stderr=stderr,
            cwd=self.cwd,
            trusted=trusted,
        )
        #: per-run plugin state, one typed :class:`~hookcode.stash.StashKey` per kind
        self.stash = Stash()
        self._close_callbacks: list[Callable[[], object]] = []
        #: runs the close callbacks once: at close(), when the runtime is collected without
        #: one, or at interpreter exit (the one safety net; plugins register no atexit)
        self._finalizer = weakref.finalize(self, _run_close_callbacks, self._close_callbacks)
        self.events = EventBus(self.plugins, self)
        self.config: Config = self._load_config()
        self.registry = Registry(self)
        self.permissions = PermissionService(self)
        self.executor = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="hookcode")
        #: permission requests refused in this runtime (``hookcode run`` reports them)
        self.refusals: list[PermissionRequest] = []
        #: extra rules per session (a child session's denies), after the config's rules
        self.session_rules: dict[str, list[Rule]] = {}
        self._store: Store | None = None
        self._project: str | None = None
        self._credentials: Credentials | None = None
        self._protected: ProtectedPaths | None = None
        self._secrets: Secrets | None = None
        self._truncator: Truncator | None = None
        self._processes: Processes | None = None
        self._pending_writes: PendingWrites | None = None
        self._file_times: dict[str, FileTimes] = {}
        self._agents: dict[str, AgentSpec] | None = None
        self._base_rules: dict[str, list[Rule]] = {}
        self._tightening: dict[str, list[Rule]] = {}
        #: per session id: (the store's cached approvals list, the rules built from it)
        self._approval_rules: dict[str | None, tuple[list[Any], list[Rule]]] = {}
        self._next_cleanup = 0.0
        #: per-path locks every writing tool holds while it checks, asks and writes
        self.path_locks = PathLocks()

    @property
    def trusted(self) -> bool:
        """Whether the worktree is trusted: a plugin loads or runs anything the project itself
        brings (files, commands) only when this is true."""
        return self.trust.trusted

    # -- config -------------------------------------------------------------------------------
    def _load_config(self) -> Config:
        from hookcode.config import claimed_sections, load_config

        claimed, self.config_owners = claimed_sections(self.plugins)
        config = load_config(
            self.cwd,
            self.worktree,
            claimed,
            env=self.env,
            unloaded_plugins=[i.name for i in self.plugins.not_loaded()],
            installed={i.distribution for i in self.plugins.infos.values() if i.distribution},
            trusted=self.trusted,
        )
        from hookcode.config import load_agent_files  # .hookcode/agents/*.md = [agent.NAME]

        config.warnings.extend(
            load_agent_files(config, self.cwd, self.worktree, self.env, trusted=self.trusted)
        )
        if not self.trusted:
            from hookcode.untrusted import project_code_items

            self.trust.skip(*config.untrusted)
            self.trust.skip(*project_code_items(self.plugins, self.cwd, self.worktree, self.env))
            warning = self.trust.warning()
            if warning is not None:
                self.plugins.warn(warning)
        for warning in config.warnings:
            self.plugins.warn(warning)
        self.plugins.historic("config", config=config, runtime=self)
        return config

    # -- lazily opened parts ------------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The store of sessions and approvals, opened on first use: the one the store URL
        names (``HOOKCODE_STORE``, else the user's ``store`` config key), else the SQLite file
        in the data directory. Sessions and approvals stored under this worktree's path (before
        projects were identified by their root commit) move to :attr:`project` then."""
        if self._store is None:
            store = self.open_store(self.store_url)
            try:
                rekey = getattr(store, "rekey_project", None)
                if rekey is not None and self.project != str(self.worktree):
                    rekey(str(self.worktree), self.project)
            except BaseException:
                store.close()
                raise
            self._store = store
        return self._store

    @property
    def store_url(self) -> str | None:
        """The configured store URL (``HOOKCODE_STORE``, else the user's ``store`` key; it may
        hold a password: show it with :func:`hookcode.store.urls.mask_url`), or None for the
        SQLite file in the data directory."""
        from hookcode.store.urls import store_url

        return store_url(self.env, self.config.core.store)

    def open_store(self, url: str | None) -> Store:
        """Open the store ``url`` names (:func:`hookcode.store.opening.open_store`: None is the
        SQLite file in the data directory); the caller closes it (:attr:`store` is the run's
        own)."""
        from hookcode.store.opening import open_store

        return open_store(url, data_dir=self.data_dir, plugins=self.plugins, runtime=self)

    @property
    def project(self) -> str:
        """The project's identity in the store: ``git:<root commit>`` for a git repository
        (the same on every clone), else the worktree's path (:mod:`hookcode.project`)."""
        if self._project is None:
            from hookcode.project import project_id

            self._project = project_id(self.worktree, self.data_dir)
        return self._project

    @property
    def secrets(self) -> Secrets:
        """The secrets this runtime knows, and their redaction (:mod:`hookcode.secrets`)."""
        if self._secrets is None:
            from hookcode.secrets import Secrets

            self._secrets = Secrets(self)
        return self._secrets

    @property
    def truncator(self) -> Truncator:
        """The output budget. On first use and hourly after, one ``stat`` tells whether any
        process cleaned the old spill files in the last day; if none did, a worker does."""
        if self._truncator is None:
            from hookcode.truncate import Truncator

            self._truncator = Truncator(
                self.data_dir,
                self.secrets.redactor,
                spill_max=self.config.core.truncation.spill_max,
            )
        if time.monotonic() >= self._next_cleanup:
            self._next_cleanup = time.monotonic() + CLEANUP_INTERVAL
            if self._truncator.cleanup_due():
                self.executor.submit(self._cleanup_spill, self._truncator)
        return self._truncator

    def _cleanup_spill(self, truncator: Truncator) -> None:
        try:
            truncator.cleanup()
        except OSError as exc:  # a cleanup problem must never fail a tool call
            self.plugins.warn(f"could not clean up {truncator.spill_dir}: {exc}")

    @property
    def processes(self) -> Processes:
        """The guardian of the processes this runtime's tools start (bash, shell hooks): they
        live below it, and it kills them all when the runtime closes or hookcode dies
        (:mod:`hookcode.process`). Started on first spawn."""
        if self._processes is None:
            from hookcode.process import Processes

            self._processes = Processes(self.data_dir / "processes", warn=self.plugins.warn)
        return self._processes

    @property
    def pending_writes(self) -> PendingWrites:
        """Where atomic writes record their temporary files on platforms without
        ``O_TMPFILE`` (``<data dir>/pending-writes``); what a killed run left there is
        removed on first use."""
        if self._pending_writes is None:
            self._pending_writes = PendingWrites(self.data_dir / "pending-writes")
            self._pending_writes.clean()
        return self._pending_writes

    @property
    def credentials(self) -> Credentials:
        """Provider credentials: environment variables, then ``<data dir>/auth.json``."""
        if self._credentials is None:
            from hookcode.auth import Credentials

            self._credentials = Credentials(
                self.data_dir / "auth.json", self.env, on_change=self.secrets.invalidate
            )
        return self._credentials

    def providers(self) -> dict[str, Provider]:
        """Every model provider from the ``provider`` hook (a later id replaces an earlier)."""
        found: dict[str, Provider] = {}
        for _plugin, items in self.plugins.collect(
            "provider", config=self.config, credentials=self.credentials
        ):
            for provider in items if isinstance(items, list | tuple) else [items]:
                found[provider.id] = provider
        return found

    @property
    def protected(self) -> ProtectedPaths:
        """The paths no tool writes without an explicit ask (:mod:`hookcode.protected`)."""
        if self._protected is None:
            from hookcode.configfiles import user_config_dir
            from hookcode.protected import ProtectedPaths

            self._protected = ProtectedPaths(user_config_dir(self.env), self.data_dir)
        return self._protected

    def new_id(self, prefix: str) -> str:
        return new_id(prefix)

    def file_times(self, session_id: str) -> FileTimes:
        times = self._file_times.get(session_id)
        if times is None:
            times = self._file_times[session_id] = FileTimes()
        return times

    def is_inside_project(self, path: Path) -> bool:
        real = realpath_nearest(path)
        if real == self.cwd or self.cwd in real.parents:
            return True
        in_worktree = real == self.worktree or self.worktree in real.parents
        return self.worktree != Path("/") and in_worktree

    # -- agents and rules ---------------------------------------------------------------------
    def agents(self) -> dict[str, AgentSpec]:
        """Every agent: from the ``agent`` hook (later replaces earlier), then ``[agent.NAME]``."""
        if self._agents is None:
            agents: dict[str, AgentSpec] = {}
            for plugin, specs in self.plugins.collect(
                "agent", config=self.config, data_dir=self.data_dir
            ):
                for spec in specs if isinstance(specs, list | tuple) else [specs]:
                    if not isinstance(spec, AgentSpec):
                        self.plugins.warn(
                            f"plugin {plugin!r}: agent hook returned {spec!r}; ignored"
                        )
                        continue
                    spec.plugin = spec.plugin or plugin
                    agents[spec.name] = spec
            for name, cfg in self.config.core.agent.items():
                if cfg.disable:
                    agents.pop(name, None)
                elif name in agents:
                    agents[name] = agents[name].with_config(cfg)
                else:
                    agents[name] = AgentSpec(name=name, mode="all", plugin="config").with_config(
                        cfg
                    )
            self._agents = agents
        return self._agents

    @property
    def default_agent(self) -> str:
        return self.config.core.default_agent or "build"

    def agent(self, name: str | None = None) -> AgentSpec:
        name = name or self.default_agent
        agents = self.agents()
        if name in agents:
            return agents[name]
        if name == self.default_agent and not agents:
            return AgentSpec(name=name, description="(no agent plugin loaded)", mode="primary")
        available = ", ".join(sorted(agents)) or "none"
        raise HookcodeError(f"unknown agent '{name}'; available agents: {available}")

    def base_rules(self, agent_name: str) -> list[Rule]:
        """Agent defaults -> plugin defaults -> ``[permission]`` -> ``[agent.NAME.permission]``."""
        cached = self._base_rules.get(agent_name)
        if cached is not None:
            return cached
        spec = self.agent(agent_name)
        rules: list[Rule] = [
            r if r.source else Rule(r.permission, r.pattern, r.action, f"agent:{spec.name}")
            for r in spec.permission
        ]
        own = Ruleset(list(rules))
        for plugin, extra in self.plugins.collect(
            "permission_defaults", agent=spec, config=self.config, runtime=self
        ):
            for rule in extra:
                if not isinstance(rule, Rule):
                    self.plugins.warn(f"plugin {plugin!r}: permission_defaults returned {rule!r}")
                    continue
                if rule.action != "deny" and own.disabled(rule.permission):
                    continue  # never reopen what the agent closed
                if not rule.source:
                    rule = Rule(rule.permission, rule.pattern, rule.action, f"plugin:{plugin}")
                rules.append(rule)
        core = self.config.core
        rules += rules_from_legacy_tools(
            core.tools, self._source("tools"), self.registry.permission_of
        )
        rules += self._config_rules(core.permission, ("permission",))
        agent_cfg = core.agent.get(spec.name)
        if agent_cfg is not None and agent_cfg.permission is not None:
            rules += self._config_rules(agent_cfg.permission, ("agent", spec.name, "permission"))
        rules += self._spill_rules(rules)
        self._base_rules[agent_name] = rules
        return rules

    def _spill_rules(self, rules: list[Rule]) -> list[Rule]:
        """Every agent may read spilled tool output: ``external_directory`` allow for the spill
        directory (as spelled and as resolved), after every other rule, unless a rule denies
        exactly that glob (reference truncation.md §4, permissions.md §4)."""
        spill = self.data_dir / "tool-output"
        globs = dict.fromkeys(
            [f"{spill.as_posix()}/*", f"{Path(os.path.realpath(spill)).as_posix()}/*"]
        )
        denied = {
            r.pattern for r in rules if r.permission == "external_directory" and r.action == "deny"
        }
        return [
            Rule("external_directory", glob, "allow", "core:spill-dir")
            for glob in globs
            if glob not in denied
        ]

    def _config_rules(self, value: Any, path: tuple[str, ...]) -> list[Rule]:
        rules = []
        for rule in rules_from_config(_plain(value), "config", home=self.env.get("HOME")):
            key = () if value == rule.action and isinstance(value, str) else (rule.permission,)
            rules.append(
                Rule(rule.permission, rule.pattern, rule.action, self._source(*path, *key))
            )
        return rules

    def _source(self, *key: str) -> str:
        source = None
        for end in range(len(key), 0, -1):
            source = self.config.source_of(*key[:end])
            if source:
                break
        return f"config:{source}" if source else "config"

    def tightening_rules(self, agent_name: str) -> list[Rule]:
        """The deny and ask rules of an untrusted folder's project files for this agent (the
        legacy ``[tools]`` switches, ``[permission]``, then ``[agent.NAME.permission]``): they
        can make a decision stricter, never looser (:class:`~hookcode.permission.Ruleset`)."""
        cached = self._tightening.get(agent_name)
        if cached is not None:
            return cached
        rules: list[Rule] = []
        for item in self.config.tightening:
            source = f"config:{item.source} (untrusted folder: tightens only)"
            if item.path == ("tools",):
                rules += rules_from_legacy_tools(item.value, source, self.registry.permission_of)
            elif item.path == ("permission",) or item.path == ("agent", agent_name, "permission"):
                found = rules_from_config(item.value, source, home=self.env.get("HOME"))
                rules += found
        self._tightening[agent_name] = rules
        return rules

    def ruleset(
        self, agent: str, session_id: str | None = None, *, approvals: bool = True
    ) -> Ruleset:
        rules = self.base_rules(agent)
        session = self.session_rules.get(session_id) if session_id is not None else None
        rules = rules + session if session else list(rules)
        tighten = self._tightening.get(agent)
        if tighten is None:
            tighten = self.tightening_rules(agent)
        if not approvals:
            return Ruleset(rules, [], tighten=tighten)
        # read when a pattern the rules leave at "ask" needs them (not for calls they allow)
        return Ruleset(rules, load_approvals=lambda: self._approvals(session_id), tighten=tighten)

    def _approvals(self, session_id: str | None) -> list[Rule]:
        """The remembered approvals of the project and of ``session_id``, as rules: in an
        untrusted folder, of the project's only those given in this folder."""
        # the SQLite store answers from its cache (the same list object while the approvals
        # are unchanged, in this process and in others); the rules are built once per answer
        store = self.store
        shared = getattr(store, "_approvals_shared", None)
        if shared is not None:
            records = shared(self.project, session_id)
        else:
            records = store.approvals(project=self.project, session_id=session_id)
        cached = self._approval_rules.get(session_id)
        if cached is None or cached[0] is not records:
            built: list[Rule] = []
            here = str(self.worktree)
            for record in records:
                # a clone shares its project's identity (its root commit), and so would a
                # hostile fork: a project approval given in another folder applies only where
                # the user trusts this one
                if not record.session_id and record.directory != here and not self.trusted:
                    continue
                scope = "session" if record.session_id else "project"
                built.append(
                    Rule(
                        record.permission, record.pattern, "allow", f"approval:{scope}:{record.id}"
                    )
                )
            if len(self._approval_rules) >= 256:
                self._approval_rules.clear()
            cached = self._approval_rules[session_id] = (records, built)
        return list(cached[1])

    def invalidate(self) -> None:
        """Forget cached agents, rules and secrets (after the config or the plugins changed)."""
        self._agents = None
        self._base_rules.clear()
        self._tightening.clear()
        if self._secrets is not None:
            self._secrets.invalidate()

    # -- tool calls ---------------------------------------------------------------------------
    def timeout_for(self, tool: Tool) -> float | None:
        return tool.timeout

    def truncate(self, result: ToolResult, tool: Tool, ctx: ToolContext) -> None:
        limits = self.config.core.truncation
        max_lines, max_bytes = limits.max_lines, limits.max_bytes
        own = limits.tools.get(tool.name)
        if own is not None:
            max_lines = own.max_lines or max_lines
            max_bytes = own.max_bytes or max_bytes

        def advice() -> str | None:  # asked only when the output is cut
            return self.registry.truncation_hint(ctx.agent, ctx.session_id)

        cut = self.truncator.truncate(
            result.output,
            max_lines=max_lines,
            max_bytes=max_bytes,
            direction=getattr(tool, "truncate_direction", "head"),
            advice=advice,
        )
        result.metadata["truncated"] = cut.truncated
        if cut.truncated:
            result.output = cut.content
            result.metadata["outputPath"] = str(cut.output_path)

    def record_part(self, part: ToolPartRecord) -> None:
        """Commit a tool part. Inside a call whose running state is not committed yet
        (``pipeline.invoke`` commits it when the call first waits), that state is committed
        first: a call is stored before anything recorded inside it (its sub-calls)."""
        unrecorded = unrecorded_running.get()
        if unrecorded is not None:
            unrecorded.commit()
        self.store.save_tool_part(self.redact_part(part))

    def redact_part(self, part: ToolPartRecord) -> ToolPartRecord:
        """``part`` with the known secrets of its arguments and error redacted (a copy, if one
        was found: the call's own arguments stay as the model wrote them). Its output, title
        and metadata come from a result ``pipeline.invoke`` has redacted already."""
        redactor = self.secrets.redactor()
        if not redactor:
            return part
        changed = {}
        for name in ("input", "error"):
            value = getattr(part, name)
            redacted = redactor.redact_value(value)
            if redacted is not value:
                changed[name] = redacted
        return dataclasses.replace(part, **changed) if changed else part

    # -- calling a tool ------------------------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        args: Mapping[str, Any] | str | None = None,
        *,
        agent: str | None = None,
        session_id: str | None = None,
        model: str | None = None,
        abort: AbortSignal | None = None,
    ) -> Outcome:
        """Run one call of the tool ``name`` through the whole pipeline
        (:func:`hookcode.pipeline.invoke`: hooks, permissions, truncation, the store), from
        outside any session loop; return its :class:`~hookcode.pipeline.Outcome`.

        ``args`` is a mapping or a JSON text; the call runs as ``agent`` (default: the default
        agent) in the session ``session_id``, else in a new one; ``abort`` aborts the call
        when it fires. The CLI's ``tools call`` and :func:`hookcode.testing.invoke_tool` use it.
        """
        from hookcode.calls import ToolCall

        agent_name = agent or self.default_agent
        if session_id is None:
            session_id = self.create_session(title=f"invoke {name}", agent=agent_name).id
        call = ToolCall(
            tool=name,
            args=dict(args) if isinstance(args, Mapping) else (args if args is not None else {}),
            call_id=self.new_id("call"),
            session_id=session_id,
            agent=agent_name,
            model=model,
        )
        return await self.invoke(call, abort=abort)

    async def invoke(
        self, call: ToolCall, *, abort: AbortSignal | None = None, parent: ToolContext | None = None
    ) -> Outcome:
        """Run ``call`` through the whole pipeline (:func:`hookcode.pipeline.invoke`) in this
        runtime: what ``ctx.invoke`` (a tool calling a tool) and :meth:`call_tool` go through."""
        from hookcode.pipeline import invoke

        return await invoke(self, call, abort=abort, parent=parent)

    # -- sessions -----------------------------------------------------------------------------
    def create_session(
        self,
        *,
        title: str = "",
        agent: str | None = None,
        model: str | None = None,
        parent_id: str | None = None,
        origin: str | None = None,
    ) -> SessionRecord:
        """A new session; ``origin`` marks one that is not a conversation (``"tools call"``:
        ``sessions list`` and ``--continue`` leave it out)."""
        title = self.secrets.redact(title)
        record = self.store.create_session(
            project=self.project,
            directory=str(self.cwd),
            title=title,
            agent=agent or self.default_agent,
            model=model,
            parent_id=parent_id,
            id=new_id("ses"),
            origin=origin,
        )
        self.events.publish(
            "session.created", session_id=record.id, title=title, parent_id=parent_id
        )
        return record

    def on_close(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once when this runtime ends: at :meth:`close`, or, for a runtime
        nobody closed, when it is garbage-collected or the interpreter exits. Plugins stop here
        what they started for the run (persistent shells, language servers, MCP sessions);
        their state itself lives in :attr:`stash`. Callbacks run in the order registered; one
        that raises is reported and skipped. A callback must not hold the runtime (a bound
        method of it, a closure over it): that would keep the runtime alive until exit."""
        self._close_callbacks.append(callback)
        if not self._finalizer.alive:  # used again after close(): closed again at exit
            self._finalizer = weakref.finalize(self, _run_close_callbacks, self._close_callbacks)

    def close(self) -> None:
        """End the run: the close callbacks, then the thread pool, the process guardian (its
        processes are killed) and the store. Closing twice is harmless."""
        if self._finalizer.detach() is not None:
            _run_close_callbacks(self._close_callbacks, self.plugins.warn)
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self._processes is not None:
            self._processes.close()
        if self._store is not None:
            # what the store writes behind is committed now: a failure to do so raises here
            store, self._store = self._store, None
            store.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _run_close_callbacks(
    callbacks: list[Callable[[], object]], warn: Callable[[str], None] | None = None
) -> None:
    """Run (and remove) every close callback, reporting the ones that raise. A module function
    holding no runtime, so that :func:`weakref.finalize` can call it for a collected one."""
    while callbacks:
        callback = callbacks.pop(0)
        try:
            callback()
        except Exception as exc:
            line = f"a close callback raised: {type(exc).__name__}: {exc}"
            if warn is not None:
                warn(line)
            else:
                print(f"hookcode: {line}", file=sys.stderr, flush=True)


def _plain(value: Any) -> Any:
    """Config values as plain dicts/strings (pydantic models dumped, order kept)."""
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value
