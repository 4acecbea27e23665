"""``hookcode permissions explain`` (core/hookcode/cli/explain.py) in-process: a permission whose
pattern a plugin takes apart (the ``permission_plan`` hook) is explained request by request,
whoever plans it; core names no permission of its own there. The CLI runs of ``explain bash``
are in tests/plugins/test_policy_shell.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hookcode import hookimpl
from hookcode.cli.explain import explain
from hookcode.permission import ShellAnalysis
from hookcode.shell import Ask, RequestPlan


class DeployPlanner:
    """A third-party tool pack's planner: ``deploy a,b`` asks ``deploy`` once per target."""

    @hookimpl
    def permission_plan(self, permission: str, pattern: str, ctx: Any) -> RequestPlan | None:
        if permission != "deploy":
            return None
        targets = pattern.split(",")
        analysis = ShellAnalysis(commands=targets)
        return RequestPlan([Ask("deploy", targets, targets, {"opaque": False})], analysis)


def _explain(rt: Any, capsys: pytest.CaptureFixture, *args: str, as_json: bool) -> str:
    explain(rt, "build", *args, as_json=as_json)
    return capsys.readouterr().out


def test_a_plugin_planner_explains_its_own_permission(
    hookcode_env: Any, capsys: pytest.CaptureFixture
) -> None:
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules"
    hookcode_env.register(DeployPlanner(), "deployer")
    hookcode_env.write_config('[permission]\ndeploy = { "*" = "ask", "staging" = "allow" }\n')
    rt = hookcode_env.runtime()
    data = json.loads(_explain(rt, capsys, "deploy", "staging,prod", as_json=True))
    assert data["permission"] == "deploy" and data["decision"] == "ask"
    assert [(c["pattern"], c["action"]) for c in data["commands"]] == [
        ("staging", "allow"),
        ("prod", "ask"),
    ]
    assert data["opaque"] is False and data["reasons"] == []
    assert [r["permission"] for r in data["requests"]] == ["deploy"]
    text = _explain(rt, capsys, "deploy", "staging", as_json=False)
    assert text.startswith("allow  (deploy 'staging', agent build)")
    assert "  'staging': allow by deploy 'staging' allow" in text
    # a permission nobody plans is explained as one pattern
    data = json.loads(_explain(rt, capsys, "other", "staging,prod", as_json=True))
    assert data["commands"] == [
        {"pattern": "staging,prod", "action": "allow", "rule": data["rule"]}
    ]
    assert "requests" not in data


def test_bash_without_an_analyser_is_one_opaque_pattern(
    hookcode_env: Any, capsys: pytest.CaptureFixture
) -> None:
    """The bash tool plans its requests itself; with no analyser (policy_shell blocked) the
    command is opaque, as the tool would ask it."""
    hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = "policy_rules,tool_bash"
    hookcode_env.write_config('[permission]\nbash = { "*" = "deny", "echo *" = "allow" }\n')
    rt = hookcode_env.runtime()
    data = json.loads(_explain(rt, capsys, "bash", "echo hi", as_json=True))
    assert data["decision"] == "deny"
    assert data["opaque"] is True and data["reasons"] == ["no shell analyser is loaded"]
    assert [r["permission"] for r in data["requests"]] == ["bash"]
    text = _explain(rt, capsys, "bash", "echo hi", as_json=False)
    assert text.startswith("deny  (bash 'echo hi', agent build)")
    assert "  - no shell analyser is loaded" in text


def test_the_bash_tool_and_policy_shell_plan_alike(
    hookcode_env: Any, capsys: pytest.CaptureFixture
) -> None:
    command = "git status && cat README.md > out.txt"
    hookcode_env.write_config('[permission]\nbash = { "git *" = "allow" }\n')
    outputs = []
    for plugins in ("policy_rules,policy_shell,tool_bash", "policy_rules,policy_shell"):
        hookcode_env.env["HOOKCODE_LOAD_PLUGINS"] = plugins
        outputs.append(_explain(hookcode_env.runtime(), capsys, "bash", command, as_json=True))
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    assert len(data["commands"]) == 2 and data["commands"][0]["pattern"].startswith("git status")
    assert data["writes"] and not data["opaque"]
