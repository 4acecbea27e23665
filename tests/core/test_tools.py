"""Tools (core/hookcode/tools.py): the @tool decorator, the Tool class form, schemas built from
type hints and docstrings, aliases, defaults, results, and lazy model building."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Annotated, Any

import pytest
from hookcode import Tool, ToolContext, ToolResult, hookimpl, tool
from hookcode.errors import InvalidArguments
from hookcode.testing import invoke_tool
from pydantic import BaseModel, Field


@pytest.fixture(autouse=True)
def _only_policy_rules(hookcode_env: Any) -> None:
    """Only the policy_rules entry point: other installed plugins must not add tools."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"


class ToolsPlugin:
    """A tiny plugin contributing the given tools."""

    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)

    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(*self.tools)


def runtime_with(hookcode_env: Any, *tools: Tool) -> Any:
    hookcode_env.register(ToolsPlugin(*tools), "test_tools")
    return hookcode_env.runtime()


# ---------------------------------------------------------------------------------------------
# the decorator
# ---------------------------------------------------------------------------------------------


@tool
def greet(name: str, times: int = 1) -> str:
    """Greet someone.

    Longer explanation of greeting.

    Args:
        name: who to greet.
        times: how many times,
            possibly more than once.
    """
    return " ".join([f"hello {name}"] * times)


@tool(name="agreet")
async def _agreet(ctx: ToolContext, name: str) -> str:
    """Greet asynchronously."""
    await asyncio.sleep(0)
    return f"async hello {name} from {ctx.tool}"


def test_sync_and_async_functions_run(hookcode_env: Any) -> None:
    runtime = runtime_with(hookcode_env, greet, _agreet)
    outcome = invoke_tool(runtime, "greet", {"name": "ann", "times": 2})
    assert outcome.error is None
    assert outcome.result.output == "hello ann hello ann"
    outcome = invoke_tool(runtime, "agreet", {"name": "bob"})
    assert outcome.error is None
    assert outcome.result.output == "async hello bob from agreet"


def test_calling_the_decorated_object_calls_the_function() -> None:
    assert greet("x", times=1) == "hello x"


def test_description_is_docstring_without_args_section() -> None:
    assert greet.description == "Greet someone.\n\nLonger explanation of greeting."
    assert "Args" not in greet.description
    assert "who to greet" not in greet.description


def test_description_keeps_text_after_args_section() -> None:
    @tool
    def f(a: int) -> str:
        """Do f.

        Args:
            a: the a.

        Returns:
            nothing much.
        """
        return ""

    assert f.description.startswith("Do f.")
    assert "Returns:" in f.description
    assert "the a." not in f.description


def test_explicit_description_wins() -> None:
    @tool(description="Explicit.")
    def f(a: int) -> str:
        """Docstring."""
        return ""

    assert f.description == "Explicit."


def test_parameter_descriptions_from_docstring() -> None:
    props = greet.parameters["properties"]
    assert props["name"]["description"] == "who to greet."
    assert props["times"]["description"] == "how many times, possibly more than once."
    assert props["times"]["default"] == 1
    assert greet.parameters["required"] == ["name"]
    assert greet.parameters["type"] == "object"


def test_parameter_descriptions_from_annotated_win_over_docstring() -> None:
    @tool
    def f(path: Annotated[str, "File to count"], n: Annotated[int, Field(ge=0), "How many"] = 0):
        """Count.

        Args:
            path: docstring text (loses).
        """

    props = f.parameters["properties"]
    assert props["path"]["description"] == "File to count"
    assert props["n"]["description"] == "How many"
    assert props["n"]["minimum"] == 0
    with pytest.raises(InvalidArguments, match="n: "):
        f.validate({"path": "x", "n": -1})


def test_schema_has_no_pydantic_titles() -> None:
    params = greet.parameters
    assert "title" not in params
    assert all("title" not in p for p in params["properties"].values())


def test_aliases_in_schema_and_validation(hookcode_env: Any) -> None:
    @tool(aliases={"file_path": "filePath", "replace_all": "replaceAll"})
    def edit_thing(file_path: str, replace_all: bool = False) -> str:
        """Edit."""
        return f"{file_path}:{replace_all}"

    props = edit_thing.parameters["properties"]
    assert set(props) == {"filePath", "replaceAll"}
    assert edit_thing.parameters["required"] == ["filePath"]

    runtime = runtime_with(hookcode_env, edit_thing)
    ok = invoke_tool(runtime, "edit_thing", {"filePath": "a.txt", "replaceAll": True})
    assert ok.error is None
    assert ok.result.output == "a.txt:True"
    assert ok.call.args == {"filePath": "a.txt", "replaceAll": True}

    # the python name is not a model-facing name: rejected as unknown (and filePath missing)
    bad = invoke_tool(runtime, "edit_thing", {"file_path": "a.txt"})
    assert bad.error is not None
    assert "file_path: unknown argument" in bad.error_text
    assert "filePath: required argument is missing" in bad.error_text


def test_defaults_are_applied() -> None:
    validated = greet.validate({"name": "a"})
    assert greet.dump(validated) == {"name": "a", "times": 1}


@pytest.mark.parametrize("param_name", ["ctx", "context", "c"])
def test_context_parameter_excluded_from_schema(hookcode_env: Any, param_name: str) -> None:
    ns: dict[str, Any] = {"ToolContext": ToolContext}
    exec(
        f"def probe({param_name}: ToolContext, value: int) -> str:\n"
        f"    '''Probe.'''\n"
        f"    return f'{{type({param_name}).__name__}} {{value}}'\n",
        ns,
    )
    probe = tool(ns["probe"])
    assert set(probe.parameters["properties"]) == {"value"}
    runtime = runtime_with(hookcode_env, probe)
    outcome = invoke_tool(runtime, "probe", {"value": 3})
    assert outcome.error is None
    assert outcome.result.output == "ToolContext 3"
    bad = invoke_tool(runtime, "probe", {"value": 3, param_name: 1})
    assert bad.error is not None
    assert f"{param_name}: unknown argument" in bad.error_text


def test_context_parameter_as_string_annotation() -> None:
    @tool
    def f(ctx: ToolContext, x: int) -> str:  # annotations are strings here (future import)
        """F."""
        return ""

    assert set(f.parameters["properties"]) == {"x"}


# ---------------------------------------------------------------------------------------------
# the class form
# ---------------------------------------------------------------------------------------------


class Counter(Tool):
    """Count calls."""

    name = "counter"
    aliases = {"step_size": "stepSize"}  # noqa: RUF012 - the documented class form

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def run(self, ctx: ToolContext, step_size: int = 1) -> str:
        self.total += step_size
        return f"total={self.total}"


class ArgsModel(BaseModel):
    text: str = Field(description="Text to echo")
    upper: bool = False


class Echo(Tool):
    name = "echo_args"
    description = "Echo with an Args model."
    Args = ArgsModel

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def run(self, args: ArgsModel, ctx: ToolContext) -> ToolResult:
        self.seen.append(args.text)
        text = args.text.upper() if args.upper else args.text
        return ToolResult(output=text, title="echo", metadata={"n": len(self.seen)})


def test_class_form_keeps_state(hookcode_env: Any) -> None:
    counter = Counter()
    assert counter.description == "Count calls."
    assert set(counter.parameters["properties"]) == {"stepSize"}
    runtime = runtime_with(hookcode_env, counter)
    assert invoke_tool(runtime, "counter", {"stepSize": 2}).result.output == "total=2"
    assert invoke_tool(runtime, "counter", {}).result.output == "total=3"
    assert counter.total == 3


def test_class_form_with_args_model(hookcode_env: Any) -> None:
    echo = Echo()
    assert echo.parameters["properties"]["text"]["description"] == "Text to echo"
    runtime = runtime_with(hookcode_env, echo)
    first = invoke_tool(runtime, "echo_args", {"text": "hi", "upper": True})
    assert first.error is None
    assert (first.result.output, first.result.title) == ("HI", "echo")
    second = invoke_tool(runtime, "echo_args", {"text": "again"})
    assert second.result.metadata["n"] == 2
    assert echo.seen == ["hi", "again"]
    bad = invoke_tool(runtime, "echo_args", {})
    assert "text: required argument is missing" in bad.error_text


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------


@tool
def returns_str() -> str:
    """R."""
    return "plain"


@tool
def returns_result() -> ToolResult:
    """R."""
    return ToolResult(output="out", title="T", metadata={"k": 1})


@tool
def returns_none() -> None:
    """R."""


@tool
def returns_int() -> int:
    """R."""
    return 42


class Point(BaseModel):
    x: int
    label: str = "p"


@dataclasses.dataclass
class Pair:
    left: int
    right: list[str]


@tool
def returns_value(kind: str) -> Any:
    """Return a value of the given kind."""
    values: dict[str, Any] = {
        "float": 1.5,
        "bool": True,
        "dict": {"a": 1, "b": [1, 2], "c": None},
        "list": [1, "two", {"three": 3}],
        "model": Point(x=3),
        "dataclass": Pair(1, ["a"]),
        "nested": {"points": [Point(x=1)], "pair": Pair(2, [])},
        "object": object(),
    }
    return values[kind]


def test_return_values(hookcode_env: Any) -> None:
    runtime = runtime_with(hookcode_env, returns_str, returns_result, returns_none, returns_int)
    assert invoke_tool(runtime, "returns_str").result.output == "plain"
    result = invoke_tool(runtime, "returns_result").result
    assert (result.output, result.title, result.metadata["k"]) == ("out", "T", 1)
    none = invoke_tool(runtime, "returns_none")
    assert none.error is None
    assert none.result.output == ""
    number = invoke_tool(runtime, "returns_int")
    assert number.error is None
    assert number.result.output == "42"


@pytest.mark.parametrize(
    ("kind", "output"),
    [
        ("float", "1.5"),
        ("bool", "True"),
        ("dict", '{"a":1,"b":[1,2],"c":null}'),
        ("list", '[1,"two",{"three":3}]'),
        ("model", '{"x":3,"label":"p"}'),
        ("dataclass", '{"left":1,"right":["a"]}'),
        ("nested", '{"points":[{"x":1,"label":"p"}],"pair":{"left":2,"right":[]}}'),
    ],
)
def test_return_values_are_serialised(hookcode_env: Any, kind: str, output: str) -> None:
    """Scalars become str, everything else JSON (as pydantic-ai and llm do)."""
    outcome = invoke_tool(
        runtime_with(hookcode_env, returns_value), "returns_value", {"kind": kind}
    )
    assert outcome.error is None
    assert outcome.result.output == output
    if kind not in ("float", "bool"):
        assert json.loads(outcome.result.output) is not None


def test_unserialisable_return_value_names_the_tool(hookcode_env: Any) -> None:
    outcome = invoke_tool(
        runtime_with(hookcode_env, returns_value), "returns_value", {"kind": "object"}
    )
    assert outcome.result is None
    assert "returns_value" in outcome.error_text
    assert "object" in outcome.error_text
    assert "JSON" in outcome.error_text


# ---------------------------------------------------------------------------------------------
# names and laziness
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["has space", "dots.are.bad", "x" * 65, "slash/no", "ünïcode"])
def test_invalid_tool_name_rejected(name: str) -> None:
    def f() -> str:
        return ""

    with pytest.raises(ValueError, match="invalid"):
        tool(f, name=name)


@pytest.mark.parametrize("name", ["ok", "with-dash", "with_underscore", "A1", "x" * 64])
def test_valid_tool_names(name: str) -> None:
    def f() -> str:
        return ""

    assert tool(f, name=name).name == name


def test_decorating_does_not_build_the_model() -> None:
    @tool
    def lazy(a: int, b: str = "x") -> str:
        """Lazy."""
        return ""

    assert lazy._model is None
    assert lazy._schema is None
    _ = lazy.description
    assert lazy._model is None
    assert lazy.args_model is lazy._model is not None

    @tool
    def lazy2(a: int) -> str:
        """Lazy."""
        return ""

    assert lazy2._model is None
    assert "a" in lazy2.parameters["properties"]
    assert lazy2._model is not None


def test_class_form_does_not_build_the_model_at_init() -> None:
    counter = Counter()
    assert counter._model is None
    _ = counter.args_model
    assert counter._model is not None
