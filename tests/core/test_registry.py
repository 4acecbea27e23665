"""The tool registry (core/hookcode/registry.py): clashes and shadowing, run-time registration,
hiding per agent and per model, the tool_definition hook, and resolving names."""

from __future__ import annotations

from typing import Any

import pytest
from hookcode import Rule, Tool, hookimpl, tool
from hookcode.errors import UnknownTool
from hookcode.testing import invoke_tool


@pytest.fixture(autouse=True)
def _only_policy_rules(hookcode_env: Any) -> None:
    """Only the policy_rules entry point: other installed plugins must not add tools."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"


class ToolsPlugin:
    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(*self.tools)


#: what the built-in tools of these names declare: they edit files (apply_patch by patches)
EDITS: dict[str, Any] = {"edit": True, "write": True, "multiedit": True, "apply_patch": "patch"}


def make(name: str, output: str | None = None, **options: Any) -> Tool:
    text = output if output is not None else name

    def body() -> str:
        return text

    options.setdefault("edits_files", EDITS.get(name, False))
    return tool(body, name=name, description=f"The {name} tool.", **options)


NAMES = (
    "mytool",
    "read",
    "grep",
    "glob",
    "list",
    "bash",
    "edit",
    "write",
    "multiedit",
    "apply_patch",
    "todowrite",
    "question",
)


@pytest.fixture
def runtime(hookcode_env: Any) -> Any:
    hookcode_env.register(ToolsPlugin(*(make(n) for n in NAMES)), "many")
    return hookcode_env.runtime()


def names(entries: list[Any]) -> set[str]:
    return {e.name for e in entries}


# ---------------------------------------------------------------------------------------------
# clashes
# ---------------------------------------------------------------------------------------------


def test_clash_later_registration_wins(hookcode_env: Any, capsys: pytest.CaptureFixture) -> None:
    hookcode_env.register(ToolsPlugin(make("dup", "first")), "first_plugin")
    hookcode_env.register(ToolsPlugin(make("dup", "second")), "second_plugin")
    runtime = hookcode_env.runtime()
    entry = runtime.registry.get("dup")
    assert entry.plugin == "second_plugin"
    assert entry.tool.plugin == "second_plugin"
    assert [s.plugin for s in entry.shadows] == ["first_plugin"]
    assert entry.to_dict()["shadows"] == [{"plugin": "first_plugin", "distribution": None}]
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "'dup'" in ln)
    assert "second_plugin" in line
    assert "first_plugin" in line
    assert invoke_tool(runtime, "dup").result.output == "second"


def test_three_way_clash_keeps_every_loser(hookcode_env: Any) -> None:
    for label in ("a", "b", "c"):
        hookcode_env.register(ToolsPlugin(make("dup", label)), f"plugin_{label}")
    runtime = hookcode_env.runtime()
    entry = runtime.registry.get("dup")
    assert entry.plugin == "plugin_c"
    assert [s.plugin for s in entry.shadows] == ["plugin_a", "plugin_b"]


def test_runtime_register_replaces(runtime: Any, capsys: pytest.CaptureFixture) -> None:
    assert invoke_tool(runtime, "mytool").result.output == "mytool"
    entry = runtime.registry.register(make("mytool", "replaced"))
    assert entry.plugin == "runtime"
    assert [s.plugin for s in entry.shadows] == ["many"]
    assert runtime.registry.get("mytool") is entry
    assert invoke_tool(runtime, "mytool").result.output == "replaced"
    assert "shadows" in capsys.readouterr().err


def test_runtime_register_new_tool_and_unregister(runtime: Any) -> None:
    runtime.registry.register(make("fresh", "new"))
    assert invoke_tool(runtime, "fresh").result.output == "new"
    runtime.registry.unregister("fresh")
    outcome = invoke_tool(runtime, "fresh")
    assert "unavailable tool 'fresh'" in outcome.error_text


def test_non_tool_returned_is_skipped(hookcode_env: Any, capsys: pytest.CaptureFixture) -> None:
    class Bad:
        @hookimpl
        def register_tools(self, register: Any) -> None:
            register("not a tool", make("good"))

    hookcode_env.register(Bad(), "bad_plugin")
    runtime = hookcode_env.runtime()
    assert "good" in runtime.registry.entries
    assert "bad_plugin" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# hiding per agent
# ---------------------------------------------------------------------------------------------


def test_build_agent_gets_everything_but_nothing_hidden(runtime: Any) -> None:
    assert names(runtime.registry.available("build")) == set(NAMES)


def test_explore_agent_gets_only_its_allowed_tools(runtime: Any) -> None:
    assert names(runtime.registry.available("explore")) == {"read", "grep", "glob", "list", "bash"}


def test_hidden_agents_get_nothing(runtime: Any) -> None:
    assert runtime.registry.available("title") == []


def test_general_agent_loses_todowrite(runtime: Any) -> None:
    available = names(runtime.registry.available("general"))
    assert "todowrite" not in available
    assert "mytool" in available


def test_config_deny_hides_tool(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("mytool"), make("other")), "p")
    hookcode_env.write_config('[permission]\nmytool = "deny"\n')
    runtime = hookcode_env.runtime()
    assert names(runtime.registry.available("build")) == {"other"}
    outcome = invoke_tool(runtime, "mytool")
    assert (
        outcome.error_text
        == "Model tried to call unavailable tool 'mytool'. Available tools: other."
    )


def test_specific_deny_does_not_hide(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("mytool")), "p")
    hookcode_env.write_config('[permission]\nmytool = { "*" = "deny", "safe *" = "allow" }\n')
    runtime = hookcode_env.runtime()
    assert names(runtime.registry.available("build")) == {"mytool"}


def test_edit_deny_hides_the_whole_edit_family(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(*(make(n) for n in NAMES)), "p")
    hookcode_env.write_config('[permission]\nedit = "deny"\n')
    runtime = hookcode_env.runtime()
    available = names(runtime.registry.available("build"))
    assert not available & {"edit", "write", "multiedit", "apply_patch"}
    assert "read" in available


def test_plan_agent_keeps_edit_family_visible(runtime: Any) -> None:
    # plan denies edit "*" but allows plan files afterwards: the last matching rule is not a
    # (*, deny), so the tools stay visible
    assert {"edit", "write"} <= names(runtime.registry.available("plan"))


def test_session_rules_count_when_hiding(runtime: Any) -> None:
    session = runtime.create_session(title="s")
    runtime.session_rules[session.id] = [Rule("mytool", "*", "deny", "session")]
    assert "mytool" not in names(runtime.registry.available("build", session.id))
    assert "mytool" in names(runtime.registry.available("build"))
    other = runtime.create_session(title="t")
    assert "mytool" in names(runtime.registry.available("build", other.id))


def test_custom_permission_name_used_for_hiding(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("fancy", permission="fancy_perm")), "p")
    hookcode_env.write_config('[permission]\nfancy_perm = "deny"\n')
    runtime = hookcode_env.runtime()
    assert runtime.registry.available("build") == []


# ---------------------------------------------------------------------------------------------
# model filter
# ---------------------------------------------------------------------------------------------

EDIT_FAMILY = {"edit", "write", "multiedit"}


@pytest.mark.parametrize("model", ["openai/gpt-5", "openai/gpt-5-codex", "gpt-5.1"])
def test_gpt5_gets_apply_patch(runtime: Any, model: str) -> None:
    available = names(runtime.registry.available("build", model=model))
    assert "apply_patch" in available
    assert not available & EDIT_FAMILY


@pytest.mark.parametrize(
    "model", ["anthropic/claude-sonnet-4", "openai/gpt-4o", "openai/gpt-oss-120b", "scripted/demo"]
)
def test_other_models_get_edit_family(runtime: Any, model: str) -> None:
    available = names(runtime.registry.available("build", model=model))
    assert "apply_patch" not in available
    assert available >= EDIT_FAMILY


def test_no_model_no_filter(runtime: Any) -> None:
    assert names(runtime.registry.available("build")) >= EDIT_FAMILY | {"apply_patch"}


@pytest.mark.parametrize(
    ("setting", "model", "offered", "hidden"),
    [
        ("edit", "openai/gpt-5", EDIT_FAMILY, {"apply_patch"}),
        ("apply_patch", "anthropic/claude-sonnet-4", {"apply_patch"}, EDIT_FAMILY),
        ("both", "openai/gpt-5", EDIT_FAMILY | {"apply_patch"}, set()),
        ("auto", "openai/gpt-5", {"apply_patch"}, EDIT_FAMILY),
    ],
)
def test_edit_tools_setting_overrides_the_model_rule(
    hookcode_env: Any, setting: str, model: str, offered: set[str], hidden: set[str]
) -> None:
    hookcode_env.register(ToolsPlugin(*(make(n) for n in NAMES)), "many")
    hookcode_env.write_config(f'edit_tools = "{setting}"\n')
    available = names(hookcode_env.runtime().registry.available("build", model=model))
    assert available >= offered
    assert not available & hidden


def test_edit_tools_rejects_unknown_values(hookcode_env: Any) -> None:
    from hookcode.errors import ConfigError

    path = hookcode_env.write_config('edit_tools = "sometimes"\n')
    with pytest.raises(ConfigError) as err:
        hookcode_env.runtime()
    assert str(path) in str(err.value) and "edit_tools" in str(err.value)


def test_model_filter_applies_to_resolve(runtime: Any) -> None:
    outcome = invoke_tool(runtime, "edit", {}, model="openai/gpt-5")
    assert "unavailable tool 'edit'" in outcome.error_text
    assert invoke_tool(runtime, "apply_patch", {}, model="openai/gpt-5").error is None


# ---------------------------------------------------------------------------------------------
# what tools declare, not what they are called: edits_files, the model_tools hook
# ---------------------------------------------------------------------------------------------


def test_a_third_party_tool_that_edits_files_joins_the_edit_family(hookcode_env: Any) -> None:
    notebook = make("notebook_edit", edits_files=True)
    patcher = make("diff_apply", edits_files="patch")
    named_like = make("write", edits_files=False)  # a name alone makes no editing tool
    hookcode_env.register(ToolsPlugin(notebook, patcher, make("mytool")), "pack")
    runtime = hookcode_env.runtime()
    assert notebook.permission_name == "edit" and patcher.permission_name == "edit"
    assert named_like.permission_name == "write"
    assert runtime.registry.get("notebook_edit").to_dict()["permission"] == "edit"
    # the model rule: a model that takes patches gets the patch kind, the others the rest
    assert names(runtime.registry.available("build", model="openai/gpt-5")) == {
        "diff_apply",
        "mytool",
    }
    assert names(runtime.registry.available("build", model="anthropic/claude-sonnet-4")) == {
        "notebook_edit",
        "mytool",
    }
    # and the edit permission hides both kinds
    hookcode_env.write_config('[permission]\nedit = "deny"\n')
    assert names(hookcode_env.runtime().registry.available("build")) == {"mytool"}


def test_an_own_permission_beats_the_edit_family(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("nb", edits_files=True, permission="notebook")), "p")
    hookcode_env.write_config('[permission]\nedit = "deny"\n')
    runtime = hookcode_env.runtime()
    assert names(runtime.registry.available("build")) == {"nb"}


class Withholder:
    """A third-party model rule: models of the ``tiny`` family get no ``heavy`` tools."""

    @hookimpl
    def model_tools(self, model: str, tools: list[Tool]) -> None:
        if model.startswith("tiny/"):
            tools[:] = [t for t in tools if not t.name.startswith("heavy")]


def test_model_tools_hook_withholds_tools(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("heavy_search"), make("light")), "pack")
    hookcode_env.register(Withholder(), "withholder")
    runtime = hookcode_env.runtime()
    assert names(runtime.registry.available("build", model="tiny/one")) == {"light"}
    assert names(runtime.registry.available("build", model="big/one")) == {"heavy_search", "light"}
    assert names(runtime.registry.available("build")) == {"heavy_search", "light"}  # no model
    outcome = invoke_tool(runtime, "heavy_search", {}, model="tiny/one")
    assert "unavailable tool 'heavy_search'" in outcome.error_text
    assert [d["name"] for d in runtime.registry.definitions("build", model="tiny/one")] == ["light"]


def test_without_policy_rules_no_model_rule_applies(hookcode_env: Any) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = ""
    hookcode_env.register(ToolsPlugin(*(make(n) for n in NAMES)), "many")
    available = names(hookcode_env.runtime().registry.available("build", model="openai/gpt-5"))
    assert available >= EDIT_FAMILY | {"apply_patch"}


# ---------------------------------------------------------------------------------------------
# prunable, truncation_hint
# ---------------------------------------------------------------------------------------------


def test_kept_outputs_are_the_tools_declared_not_prunable(hookcode_env: Any) -> None:
    hookcode_env.register(
        ToolsPlugin(make("notes", prunable=False), make("skill"), make("mytool")), "p"
    )
    assert hookcode_env.runtime().registry.kept_outputs() == {"notes"}


def long_output() -> str:
    """A tool whose output is always cut."""
    return "line\n" * 3000


def test_a_tool_contributes_the_truncation_hint_while_it_is_offered(hookcode_env: Any) -> None:
    from hookcode.truncate import DEFAULT_ADVICE

    advice = "Use the delegate tool to have a helper search this file."
    helper = make("delegate", truncation_hint=advice)
    spill = tool(long_output, name="spill", description="Long output.")
    hookcode_env.register(ToolsPlugin(helper, spill), "p")
    runtime = hookcode_env.runtime()
    assert runtime.registry.truncation_hint("build") == advice
    output = invoke_tool(runtime, "spill").result.output
    assert advice in output and DEFAULT_ADVICE not in output
    # not offered (its permission denied): the default advice
    hookcode_env.write_config('[permission]\ndelegate = "deny"\n')
    runtime = hookcode_env.runtime()
    assert runtime.registry.truncation_hint("build") is None
    output = invoke_tool(runtime, "spill").result.output
    assert advice not in output and DEFAULT_ADVICE in output


def test_several_truncation_hints_are_joined_in_registration_order(hookcode_env: Any) -> None:
    hookcode_env.register(
        ToolsPlugin(make("one", truncation_hint="First."), make("two", truncation_hint="Second.")),
        "p",
    )
    assert hookcode_env.runtime().registry.truncation_hint("build") == "First.\nSecond."


# ---------------------------------------------------------------------------------------------
# tool_definition
# ---------------------------------------------------------------------------------------------


@tool
def documented(path: str) -> str:
    """Original description."""
    return path


def test_tool_definition_hook_edits_definitions_not_the_tool(hookcode_env: Any) -> None:
    class Editor:
        @hookimpl
        def tool_definition(self, tool_id: str, definition: dict[str, Any]) -> None:
            if tool_id == "documented":
                definition["description"] += " (edited)"
                definition["parameters"]["properties"]["path"]["description"] = "added"
                definition["parameters"]["required"].append("bogus")

    hookcode_env.register(ToolsPlugin(documented), "p")
    hookcode_env.register(Editor(), "editor")
    runtime = hookcode_env.runtime()
    (definition,) = runtime.registry.definitions("build")
    assert definition["name"] == "documented"
    assert definition["description"] == "Original description. (edited)"
    assert definition["parameters"]["properties"]["path"]["description"] == "added"
    # the tool itself is untouched, and so is the next build of the definitions
    assert documented.description == "Original description."
    assert "description" not in documented.parameters["properties"]["path"]
    assert documented.parameters["required"] == ["path"]
    again = runtime.registry.definitions("build")[0]
    assert again["parameters"]["required"] == ["path", "bogus"]  # edited afresh, not twice


def test_definitions_only_for_available_tools(runtime: Any) -> None:
    defined = {d["name"] for d in runtime.registry.definitions("explore")}
    assert defined == {"read", "grep", "glob", "list", "bash"}


# ---------------------------------------------------------------------------------------------
# resolving names
# ---------------------------------------------------------------------------------------------


def test_unknown_tool_lists_available(runtime: Any) -> None:
    with pytest.raises(UnknownTool) as info:
        runtime.registry.resolve("nope", "explore")
    assert str(info.value) == (
        "Model tried to call unavailable tool 'nope'. Available tools: bash, glob, grep, list, read."
    )


def test_unknown_tool_with_nothing_available(runtime: Any) -> None:
    with pytest.raises(UnknownTool, match="Available tools: none"):
        runtime.registry.resolve("nope", "title")


def test_hidden_tool_is_unknown_for_that_agent(runtime: Any) -> None:
    with pytest.raises(UnknownTool, match="unavailable tool 'edit'"):
        runtime.registry.resolve("edit", "explore")
    assert runtime.registry.resolve("edit", "build").name == "edit"


@pytest.mark.parametrize("asked", ["MyTool", "MYTOOL", "mytool", "myTool"])
def test_case_insensitive_resolve(runtime: Any, asked: str) -> None:
    assert runtime.registry.resolve(asked, "build").name == "mytool"


def test_case_insensitive_call_runs_the_tool(runtime: Any) -> None:
    outcome = invoke_tool(runtime, "READ")
    assert outcome.error is None
    assert outcome.call.tool == "read"
    assert outcome.result.output == "read"


def test_exact_match_beats_case_folding(hookcode_env: Any) -> None:
    hookcode_env.register(ToolsPlugin(make("Thing", "upper"), make("thing", "lower")), "p")
    runtime = hookcode_env.runtime()
    assert runtime.registry.resolve("Thing", "build").tool.name == "Thing"
    assert runtime.registry.resolve("thing", "build").tool.name == "thing"
    # ambiguous when folding: no guess
    with pytest.raises(UnknownTool):
        runtime.registry.resolve("THING", "build")


class Nameless(Tool):
    """A class-form tool whose author forgot (or mistyped) the name."""

    def run(self) -> str:
        return ""


def test_invalid_class_form_tool_name_is_skipped(
    hookcode_env: Any, capsys: pytest.CaptureFixture
) -> None:
    bad = Nameless()
    bad.name = "has space"
    hookcode_env.register(ToolsPlugin(Nameless(), bad, make("good")), "sloppy")
    runtime = hookcode_env.runtime()
    assert set(runtime.registry.entries) == {"good"}
    err = capsys.readouterr().err
    assert "'sloppy'" in err
    assert "'has space'" in err
    assert "''" in err


def test_runtime_register_rejects_invalid_name(runtime: Any) -> None:
    bad = Nameless()
    bad.name = "dots.bad"
    with pytest.raises(ValueError, match="invalid"):
        runtime.registry.register(bad)
    assert "dots.bad" not in runtime.registry.entries
