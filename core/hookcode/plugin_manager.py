"""The plugin manager, apart from hookcode's own hook specifications.

:class:`PluginsBase` is a pluggy plugin manager for the specification module it is given, with
what hookcode needs around it; :class:`hookcode.plugins.Plugins` is it for
:mod:`hookcode.hookspecs`, and :func:`hookcode.plugins.create_plugins` fills one (there is no
module-global plugin manager): core's own implementations, then the ``hookcode`` entry-point
group, read once, each plugin loaded inside its own try/except. A plugin that fails to import,
fails pluggy's validation or implements a hook that does not exist is recorded as failed and
skipped with one line on stderr; everything else keeps working.

Environment:
    ``HOOKCODE_LOAD_PLUGINS=a,b``  load only these entry points (empty: none)
    ``HOOKCODE_BLOCK_PLUGINS=a,b`` never load these
    ``HOOKCODE_TRACE_PLUGINS=1``   trace plugin loading and every hook call on stderr
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import FunctionType, MethodType, ModuleType
from typing import IO, Any, Literal, Protocol

import pluggy

from hookcode.errors import PluginError, PromptBlocked

__all__ = ["PROJECT_NAME", "HookCaller", "PluginInfo", "PluginsBase", "hookimpl"]

#: the name of hookcode's hooks for pluggy (specifications and implementations)
PROJECT_NAME = "hookcode"

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
_IMPL_ATTR = PROJECT_NAME + "_impl"

ENTRY_POINT_GROUP = "hookcode"
Status = Literal["loaded", "failed", "disabled"]

#: hooks kept for one release under their old name: old name -> what to implement instead
DEPRECATED_HOOKS = {"tool": "register_tools(register, runtime)"}
#: (plugin, hook) pairs already warned about in this process
_warned: set[tuple[str, str]] = set()


def _warn_deprecated(plugin: str, old: str, new: str) -> None:
    """One :class:`DeprecationWarning` per plugin and deprecated hook in a process."""
    if (plugin, old) in _warned:
        return
    _warned.add((plugin, old))
    import warnings

    warnings.warn(
        f"plugin {plugin!r} implements the deprecated hook {old!r}: implement {new} instead "
        "(the old name goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )


class HookCaller(Protocol):
    """What the config, the event bus and the trust report call on the plugin manager
    (:class:`PluginsBase` is one): they name this, not the manager, and stay below it."""

    def warn(self, line: str) -> None: ...

    def collect(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]: ...

    def call_each(self, hook: str, **kwargs: Any) -> list[Any]: ...

    def has_impls(self, hook: str) -> bool: ...


@dataclass
class PluginInfo:
    """What ``hookcode plugins list`` shows of one plugin."""

    name: str
    distribution: str | None = None
    version: str | None = None
    status: Status = "loaded"
    error: str | None = None
    hooks: list[str] = field(default_factory=list)
    module: str | None = None
    order: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "hooks": self.hooks,
            "status": self.status,
            "error": self.error,
            "module": self.module,
        }


def _env_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, accepting ``async def`` generator wrappers (``tool_execute``):
    hookcode drives them itself (pipeline), pluggy only knows sync generators."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        # pluggy looks every name of a plugin up with inspect.getattr_static, which is most of
        # the cost of registering a plugin module (every name it imported or defined). For a
        # plain function in a module's namespace that lookup returns the function itself, so
        # read its marker directly; everything else (classes, instances, descriptors, dunder
        # names that ModuleType itself defines) goes through pluggy.
        if type(plugin) is ModuleType and not name.startswith("__"):
            value = plugin.__dict__.get(name)
            if type(value) is FunctionType:
                opts = getattr(value, _IMPL_ATTR, None)
                return opts if isinstance(opts, dict) else None
            if value is not None and not isinstance(value, staticmethod | classmethod | MethodType):
                return None  # not hookable: pluggy would say None too
        return super().parse_hookimpl_opts(plugin, name)

    def _verify_hook(self, hook: Any, hookimpl: Any) -> None:
        function = hookimpl.function
        if (hookimpl.wrapper or hookimpl.hookwrapper) and inspect.isasyncgenfunction(function):

            def stand_in(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called
                yield

            hookimpl.function = stand_in
            try:
                super()._verify_hook(hook, hookimpl)
            finally:
                hookimpl.function = function
            return
        super()._verify_hook(hook, hookimpl)


class PluginsBase:
    """A pluggy plugin manager for the hook specifications of ``specs`` plus what hookcode
    needs around it: per-plugin records, registration order, and hook calls that isolate each
    implementation."""

    def __init__(
        self,
        specs: ModuleType,
        *,
        strict: bool = False,
        trace: bool = False,
        stderr: IO[str] | None = None,
    ):
        self.pm = _PluginManager(PROJECT_NAME)
        self.pm.add_hookspecs(specs)
        self.strict = strict
        self.trace = trace
        self._stderr = stderr
        self.infos: dict[str, PluginInfo] = {}
        self._history: list[tuple[str, dict[str, Any]]] = []
        self._order = 0
        #: impls() per hook, dropped whenever a plugin is registered or unregistered
        self._impls: dict[str, list[pluggy.HookImpl]] = {}
        self._spec_names = {
            name for name in dir(specs) if hasattr(getattr(self.pm.hook, name, None), "spec")
        }

    @property
    def stderr(self) -> IO[str]:
        return self._stderr or sys.stderr

    def warn(self, line: str) -> None:
        print(f"hookcode: {line}", file=self.stderr, flush=True)

    # -- registration -------------------------------------------------------------------------
    def register(
        self,
        plugin: object,
        name: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        module: str | None = None,
    ) -> PluginInfo:
        """Register a plugin object; a failure is recorded (and raised in strict mode)."""
        self._order += 1
        info = PluginInfo(
            name=name, distribution=distribution, version=version, module=module, order=self._order
        )
        self._impls.clear()
        if name in self.infos and self.infos[name].status == "loaded":
            # keep the loaded plugin's record: report the newcomer without recording it
            info.status, info.error = "failed", f"a plugin named {name!r} is already registered"
            self.warn(
                f"plugin {name!r} ({distribution or module or '?'}) not registered: {info.error}"
            )
            return info
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # pluggy.PluginValidationError and friends
            info.status, info.error = "failed", _describe(exc)
            self._failed(info)
            return info
        unknown = [
            caller.name
            for caller in self.pm.get_hookcallers(plugin) or []
            if not caller.has_spec()
            and not all(
                impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin
            )
        ]
        if unknown:
            self.pm.unregister(plugin)
            problems = []
            for hook in unknown:
                close = difflib.get_close_matches(hook, sorted(self._spec_names), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(f"unknown hook {hook!r}{hint}")
            info.status, info.error = "failed", "; ".join(problems)
            self._failed(info)
            return info
        info.hooks = sorted(c.name for c in self.pm.get_hookcallers(plugin) or [])
        for old, new in DEPRECATED_HOOKS.items():
            if old in info.hooks:
                _warn_deprecated(name, old, new)
        self.infos[name] = info
        self._replay_history(plugin)
        return info

    def unregister(self, name: str) -> None:
        self._impls.clear()
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.infos.pop(name, None)

    def _failed(self, info: PluginInfo) -> None:
        existing = self.infos.get(info.name)
        if existing is None or existing.status != "loaded":
            # a second plugin under a loaded one's name must not hide the live one's record
            self.infos[info.name] = info
        where = info.distribution or info.module or "?"
        if info.version:
            where += f" {info.version}"
        self.warn(f"plugin {info.name!r} ({where}) failed to load: {info.error}; skipped")

    def disabled(
        self,
        name: str,
        reason: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        module: str | None = None,
    ) -> None:
        self._order += 1
        self.infos[name] = PluginInfo(
            name=name,
            distribution=distribution,
            version=version,
            module=module,
            status="disabled",
            error=reason,
            order=self._order,
        )

    def load_entrypoints(
        self,
        env: Mapping[str, str] = os.environ,
        *,
        load: list[str] | None = None,
        block: list[str] | None = None,
    ) -> None:
        """Load every plugin of the ``hookcode`` entry-point group, each in isolation.

        ``load``/``block`` come from the ``[plugins]`` config; ``HOOKCODE_LOAD_PLUGINS``
        replaces ``load`` and ``HOOKCODE_BLOCK_PLUGINS`` adds to ``block``."""
        from importlib.metadata import entry_points

        only = _env_list(env.get("HOOKCODE_LOAD_PLUGINS"))
        source = "HOOKCODE_LOAD_PLUGINS"
        if only is None:
            only, source = load, "[plugins] load"
        blocked = set(_env_list(env.get("HOOKCODE_BLOCK_PLUGINS")) or []) | set(block or [])
        seen: dict[str, str | None] = {}
        found = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist
            dist_name, dist_version = _name_version(dist) if dist is not None else (None, None)
            if ep.name in seen:
                if seen[ep.name] != dist_name:  # else: one distribution reachable twice
                    self.warn(
                        f"plugin {ep.name!r} of {dist_name} skipped: the entry-point "
                        f"name is already used by {seen[ep.name]}"
                    )
                continue
            seen[ep.name] = dist_name
            found.append((ep, dist_name, dist_version))

        def order(item: Any) -> tuple[int, str, str]:
            ep, dist_name, _ = item
            if dist_name and re.sub(r"[-_.]+", "-", dist_name).lower().startswith("hookcode-"):
                return (0, ep.name, "")
            return (1, (dist_name or "").lower(), ep.name)

        for ep, dist_name, version in sorted(found, key=order):
            if only is not None and ep.name not in only:
                self.disabled(
                    ep.name,
                    "not selected (HOOKCODE_LOAD_PLUGINS / [plugins] load)",
                    distribution=dist_name,
                    version=version,
                    module=ep.value,
                )
                continue
            if ep.name in blocked:
                self.disabled(
                    ep.name,
                    "blocked (HOOKCODE_BLOCK_PLUGINS / [plugins] block)",
                    distribution=dist_name,
                    version=version,
                    module=ep.value,
                )
                continue
            started = time.perf_counter()
            try:
                plugin = ep.load()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                info = PluginInfo(
                    name=ep.name,
                    distribution=dist_name,
                    version=version,
                    module=ep.value,
                    status="failed",
                    error=_describe(exc),
                )
                self._order += 1
                info.order = self._order
                self._failed(info)
                continue
            self.register(plugin, ep.name, distribution=dist_name, version=version, module=ep.value)
            if self.trace:
                ms = (time.perf_counter() - started) * 1000
                self.warn(
                    f"trace: loaded plugin {ep.name!r} ({dist_name} {version}) in {ms:.1f} ms"
                )
        if only:
            self._warn_not_installed(only, source, list(seen))
        if self.strict:
            self.raise_failures()

    def _warn_not_installed(self, selected: list[str], source: str, installed: list[str]) -> None:
        """A warning for each selected name that no installed entry point (nor a plugin
        registered already, such as ``core``) has: a typo loads nothing, silently otherwise."""
        for name in selected:
            if name in installed or self.pm.get_plugin(name) is not None:
                continue
            import difflib

            close = difflib.get_close_matches(name, installed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (see `hookcode plugins list`)"
            self.warn(f"{source} names {name!r}, which is not installed{hint}")

    def raise_failures(self) -> None:
        failed = [i for i in self.infos.values() if i.status == "failed"]
        if failed:
            lines = "\n".join(
                f"  {i.name} ({i.distribution or i.module}): {i.error}" for i in failed
            )
            raise PluginError(
                f"{len(failed)} plugin(s) failed to load (--strict-plugins):\n{lines}"
            )

    # -- introspection ------------------------------------------------------------------------
    def loaded(self) -> list[PluginInfo]:
        return [i for i in self.infos.values() if i.status == "loaded"]

    def not_loaded(self) -> list[PluginInfo]:
        return [i for i in self.infos.values() if i.status != "loaded"]

    def impls(self, hook: str) -> list[pluggy.HookImpl]:
        """Implementations in pluggy's call order (last registered first, tryfirst/trylast).
        The list is shared (kept until the next register/unregister): do not change it."""
        impls = self._impls.get(hook)
        if impls is None:
            caller = getattr(self.pm.hook, hook)
            impls = self._impls[hook] = list(reversed(caller.get_hookimpls()))
        return impls

    def impls_in_registration_order(self, hook: str) -> list[pluggy.HookImpl]:
        """Registration order; a ``tryfirst`` implementation counts as registered before every
        other and a ``trylast`` one after every other (file-based local tools use it to come
        after every packaged tool)."""
        return sorted(getattr(self.pm.hook, hook).get_hookimpls(), key=self._registration_key)

    def _registration_key(self, impl: pluggy.HookImpl) -> tuple[int, int]:
        return (
            0 if impl.tryfirst else 2 if impl.trylast else 1,
            self._info_order(impl.plugin_name),
        )

    def _info_order(self, name: str) -> int:
        info = self.infos.get(name)
        return info.order if info else 1 << 30

    def has_impls(self, hook: str) -> bool:
        return bool(self.impls(hook))

    # -- calling ------------------------------------------------------------------------------
    def report(self, plugin: str, hook: str, exc: BaseException) -> None:
        self.warn(f"plugin {plugin!r} raised in hook {hook!r}: {_describe(exc)} (skipped)")

    def _call(self, impl: pluggy.HookImpl, hook: str, kwargs: Mapping[str, Any]) -> Any:
        args = map(kwargs.__getitem__, impl.argnames)
        if not self.trace:
            return impl.function(*args)
        started = time.perf_counter()
        try:
            return impl.function(*args)
        finally:
            ms = (time.perf_counter() - started) * 1000
            self.warn(f"trace: hook {hook} -> {impl.plugin_name} ({ms:.2f} ms)")

    def call_each_outcomes(
        self, hook: str, *, registration_order: bool = False, **kwargs: Any
    ) -> Iterator[tuple[str, Any, BaseException | None]]:
        """Call every implementation; yield (plugin, result, exception) for each."""
        impls = self.impls_in_registration_order(hook) if registration_order else self.impls(hook)
        for impl in impls:
            if impl.wrapper or impl.hookwrapper:
                continue
            try:
                value = self._call(impl, hook, kwargs)
                if value is not None and inspect.iscoroutine(value):
                    value.close()
                    raise TypeError(f"hook {hook!r} does not take async implementations")
            except Exception as exc:
                yield impl.plugin_name, None, exc
            else:
                yield impl.plugin_name, value, None

    def collect_outcomes(
        self, calls: Mapping[str, Mapping[str, Any]]
    ) -> Iterator[tuple[str, str, Any, BaseException | None]]:
        """Registration call of several hooks as one (a hook and its deprecated alias): every
        implementation of each ``hook`` with its ``kwargs``, all merged in registration order;
        yields (plugin, hook, result, exception) after each."""
        impls = sorted(
            (
                (hook, impl)
                for hook in calls
                for impl in getattr(self.pm.hook, hook).get_hookimpls()
            ),
            key=lambda pair: self._registration_key(pair[1]),
        )
        for hook, impl in impls:
            if impl.wrapper or impl.hookwrapper:
                continue
            try:
                value = self._call(impl, hook, calls[hook])
                if value is not None and inspect.iscoroutine(value):
                    value.close()
                    raise TypeError(f"hook {hook!r} does not take async implementations")
            except Exception as exc:
                yield impl.plugin_name, hook, None, exc
            else:
                yield impl.plugin_name, hook, value, None

    def call_each(self, hook: str, **kwargs: Any) -> list[Any]:
        """Lifecycle call: every implementation in pluggy's order; a raising one is reported
        with its plugin's name and skipped. Returns the non-None results."""
        results = []
        for plugin, value, error in self.call_each_outcomes(hook, **kwargs):
            if isinstance(error, PromptBlocked) and hook == "chat_message":
                raise error  # a refused user message stops the run (session/loop.py)
            if error is not None:
                self.report(plugin, hook, error)
            elif value is not None:
                results.append(value)
        return results

    def collect(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Registration call: (plugin, result) in registration order; raising ones skipped."""
        out = []
        for plugin, value, error in self.call_each_outcomes(
            hook, registration_order=True, **kwargs
        ):
            if error is not None:
                self.report(plugin, hook, error)
            elif value is not None:
                out.append((plugin, value))
        return out

    def call_first(self, hook: str, **kwargs: Any) -> Any:
        """firstresult call: the first non-None result; raising implementations skipped."""
        for plugin, value, error in self.call_each_outcomes(hook, **kwargs):
            if error is not None:
                self.report(plugin, hook, error)
            elif value is not None:
                return value
        return None

    def historic(self, hook: str, **kwargs: Any) -> None:
        """Call a historic hook: every current implementation now (isolated), and every plugin
        registered later as it registers."""
        self._history.append((hook, kwargs))
        self.call_each(hook, **kwargs)

    def _replay_history(self, plugin: object) -> None:
        for hook, kwargs in self._history:
            for impl in getattr(self.pm.hook, hook).get_hookimpls():
                if impl.plugin is not plugin or impl.wrapper or impl.hookwrapper:
                    continue
                try:
                    self._call(impl, hook, kwargs)
                except Exception as exc:
                    self.report(impl.plugin_name, hook, exc)


def _name_version(dist: Any) -> tuple[str | None, str | None]:
    """A distribution's ``Name`` and ``Version``, read from the head of its metadata file.

    What ``dist.metadata["Name"]`` and ``dist.version`` return, without the email parser
    they use (a full parse of every plugin's metadata on every start-up): the headers come
    first, one per line; anything unusual (a folded header, a missing field) falls back to
    the full parse."""
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    except Exception:
        text = None
    found: dict[str, str] = {}
    for line in (text or "").splitlines():
        if not line.strip():
            break  # the end of the headers
        if line[0] in " \t":
            found.clear()  # a folded header: leave it to the email parser
            break
        key, sep, value = line.partition(":")
        if not sep:
            found.clear()
            break
        key = key.strip().lower()
        if key in ("name", "version") and key not in found:
            found[key] = value.lstrip(" \t")
            if len(found) == 2:
                return found["name"], found["version"]
    metadata = dist.metadata
    return metadata["Name"], metadata["Version"]


def _describe(exc: BaseException) -> str:
    # one line, but every line of the message: pluggy names the culprit (an argument the
    # hookspec does not have) on its third line
    text = "; ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
