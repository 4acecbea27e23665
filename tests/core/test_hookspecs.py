"""hookspecs.py is the plugin author's reference: every hook exists, is typed, and documents
each argument and its return value (like datasette's tests/test_docs.py)."""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import pluggy
import pytest
from hookcode import hookspecs

#: the hooks of ARCHITECTURE.md's "Hookspecs" section
REGISTRATION = [
    "register_tools",
    "provider",
    "auth",
    "agent",
    "cli",
    "config_schema",
    "project_code",
    "permission_defaults",
]
#: asked when the run needs the service; the first answer wins
SERVICES = ["store"]
LIFECYCLE = [
    "config",
    "chat_message",
    "chat_params",
    "system_prompt",
    "tool_definition",
    "model_tools",
    "tool_execute_before",
    "tool_execute",
    "tool_execute_after",
    "tool_execute_error",
    "permission_ask",
    "permission_prompt",
    "question_prompt",
    "chat_command",
    "chat_commands",
    "shell_analyze",
    "permission_plan",
    "shell_env",
    "event",
]
#: kept for one release under their old name
DEPRECATED = ["tool"]
DOCUMENTED = REGISTRATION + SERVICES + LIFECYCLE + DEPRECATED
FIRSTRESULT = {
    "store",
    "chat_command",
    "tool_execute",
    "permission_prompt",
    "question_prompt",
    "shell_analyze",
    "permission_plan",
}
HISTORIC = {"config"}
#: the arguments ARCHITECTURE.md gives each hook (an implementation may take any subset), with
#: the runtime for the hooks that need it (issue 17)
ARGUMENTS = {
    "register_tools": ["register", "runtime"],
    "tool": [],
    "permission_defaults": ["agent", "config", "runtime"],
    "project_code": ["cwd", "worktree", "env"],
    "cli": ["app"],
    "store": ["url", "runtime"],
    "config": ["config", "runtime"],
    "chat_message": ["message", "session", "runtime"],
    "chat_params": ["params", "session", "agent", "model", "runtime"],
    "system_prompt": ["parts", "session", "agent", "model", "runtime"],
    "tool_definition": ["tool_id", "definition"],
    "model_tools": ["model", "tools", "config"],
    "tool_execute_before": ["call", "ctx"],
    "tool_execute": ["call", "ctx"],
    "tool_execute_after": ["call", "result", "ctx"],
    "tool_execute_error": ["call", "error", "ctx"],
    "permission_ask": ["request", "runtime"],
    "permission_prompt": ["request", "runtime"],
    "question_prompt": ["request"],
    "chat_command": ["name", "arguments", "runtime"],
    "chat_commands": ["runtime"],
    "shell_analyze": ["command", "cwd"],
    "permission_plan": ["permission", "pattern", "ctx"],
    "shell_env": ["env", "cwd", "ctx"],
    "event": ["event", "runtime"],
}
SECTIONS = ("Args", "Arguments", "Returns", "Raises", "Yields", "Example", "Examples", "Note")

SPEC_ATTR = f"{hookspecs.PROJECT_NAME}_spec"


def all_hookspecs() -> dict[str, Callable[..., Any]]:
    return {
        name: fn for name, fn in vars(hookspecs).items() if callable(fn) and hasattr(fn, SPEC_ATTR)
    }


SPECS = all_hookspecs()


def sections(doc: str) -> dict[str, str]:
    """Google-style docstring sections: {"Args": body, "Returns": body, ...}."""
    found: dict[str, str] = {}
    current: str | None = None
    for line in inspect.cleandoc(doc).splitlines():
        header = re.fullmatch(r"(\w+):\s*", line)
        if header and header.group(1) in SECTIONS:
            current = header.group(1)
            found[current] = ""
        elif current is not None:
            if line and not line[0].isspace():
                current = None  # back to the description
            else:
                found[current] += line + "\n"
    return found


def documented_args(body: str) -> list[str]:
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines:
        return []
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    names = []
    for line in lines:
        if len(line) - len(line.lstrip()) == indent:
            match = re.match(r"\s*\*{0,2}(\w+)\s*(\([^)]*\))?\s*:", line)
            assert match, f"not an 'name: description' entry: {line!r}"
            names.append(match.group(1))
    return names


def type_checking_namespace() -> dict[str, Any]:
    """hookspecs' globals plus what its ``if TYPE_CHECKING:`` block imports."""
    namespace = dict(vars(hookspecs))
    tree = ast.parse(inspect.getsource(hookspecs))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            code = compile(ast.Module(body=node.body, type_ignores=[]), "<type-checking>", "exec")
            exec(code, namespace)
    return namespace


def test_every_documented_hook_exists() -> None:
    missing = [name for name in DOCUMENTED if name not in SPECS]
    assert not missing, f"hookspecs.py lacks {missing}"


def test_every_hookspec_is_known_to_pluggy() -> None:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name in SPECS:
        caller = getattr(pm.hook, name)
        assert caller.has_spec()
        opts = caller.spec.opts
        assert bool(opts.get("firstresult")) == (name in FIRSTRESULT), name
        assert bool(opts.get("historic")) == (name in HISTORIC), name


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_hook_arguments_match_the_architecture(name: str) -> None:
    assert list(inspect.signature(SPECS[name]).parameters) == ARGUMENTS[name]


def doc_problems(fn: Callable[..., Any]) -> list[str]:
    """What is wrong with a hook's docstring (empty list: nothing)."""
    name = fn.__name__
    doc = fn.__doc__ or ""
    if not doc.strip():
        return [f"hook {name} has no docstring"]
    problems = []
    if not inspect.cleandoc(doc).splitlines()[0].strip():
        problems.append(f"hook {name}: the docstring starts with an empty line")
    found = sections(doc)
    params = list(inspect.signature(fn).parameters)
    if params and "Args" not in found:
        problems.append(f"hook {name} has arguments {params} but no Args: section")
    elif params:
        documented = documented_args(found["Args"])
        undocumented = [p for p in params if p not in documented]
        stale = [p for p in documented if p not in params]
        if undocumented:
            problems.append(f"hook {name}: argument(s) {undocumented} not in Args:")
        if stale:
            problems.append(f"hook {name}: Args: documents {stale}, which it does not take")
        if not undocumented and not stale and documented != params:
            problems.append(f"hook {name}: Args: lists {documented}, not in order {params}")
    elif "Args" in found:
        problems.append(f"hook {name} takes no arguments but has an Args: section")
    if "Returns" not in found:
        problems.append(f"hook {name} has no Returns: section")
    elif not found["Returns"].strip():
        problems.append(f"hook {name}: the Returns: section is empty")
    return problems


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hookspec_is_documented(name: str) -> None:
    assert doc_problems(SPECS[name]) == []


def test_the_docs_check_catches_mistakes() -> None:
    def undocumented(call: Any, ctx: Any) -> None:
        """Summary.

        Args:
            call: the call.

        Returns:
            Nothing.
        """

    def stale(call: Any) -> None:
        """Summary.

        Args:
            call: the call.
            ctx: gone.

        Returns:
            Nothing.
        """

    def no_returns(call: Any) -> None:
        """Summary.

        Args:
            call: the call, described
                over two lines.
        """

    def no_args_section(call: Any) -> None:
        """Summary mentioning call.

        Returns:
            Nothing.
        """

    def fine(call: Any, ctx: Any) -> None:
        """Summary.

        Args:
            call: the call, described
                over two lines.
            ctx (ToolContext): the context.

        Returns:
            Nothing.
        """

    assert doc_problems(undocumented) == ["hook undocumented: argument(s) ['ctx'] not in Args:"]
    assert doc_problems(stale) == ["hook stale: Args: documents ['ctx'], which it does not take"]
    assert doc_problems(no_returns) == ["hook no_returns has no Returns: section"]
    assert doc_problems(no_args_section) == [
        "hook no_args_section has arguments ['call'] but no Args: section"
    ]
    assert doc_problems(fine) == []


@pytest.mark.parametrize("name", sorted(SPECS))
def test_hookspec_is_fully_typed(name: str) -> None:
    fn = SPECS[name]
    signature = inspect.signature(fn)
    for param in signature.parameters.values():
        assert param.annotation is not inspect.Parameter.empty, f"{name}({param.name}) untyped"
        assert param.kind is param.POSITIONAL_OR_KEYWORD, f"{name}({param.name}): {param.kind}"
        assert param.default is inspect.Parameter.empty, f"{name}({param.name}) has a default"
    assert signature.return_annotation is not inspect.Signature.empty, f"{name} -> untyped"
    # and every annotation names something that exists
    hints = typing.get_type_hints(fn, globalns=type_checking_namespace())
    assert set(hints) == {*signature.parameters, "return"}


def test_the_module_docstring_lists_the_registration_hooks() -> None:
    """The overview names the registration hooks (collected in registration order)."""
    match = re.search(r"\*\*Registration hooks\*\*\s*\(([^)]*)\)", hookspecs.__doc__ or "")
    assert match, "the module docstring has no '**Registration hooks** (...)' list"
    listed = re.findall(r"``(\w+)``", match.group(1))
    assert sorted(listed) == sorted(REGISTRATION)
