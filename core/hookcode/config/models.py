"""The config sections core owns, as pydantic models (:class:`CoreConfig` and the tables in it),
and the shapes of permission rules; :mod:`hookcode.config` loads and validates files into them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from hookcode.trust import trusted_only

__all__ = [
    "ACTION_TAG",
    "CORE_KEYS",
    "TABLE_TAG",
    "Action",
    "AgentConfig",
    "CoreConfig",
    "KeyPath",
    "PermissionConfig",
    "PermissionValue",
    "PluginsConfig",
    "ToolLimits",
    "TruncationConfig",
]

Action = Literal["allow", "deny", "ask"]

# Tagged unions (one branch chosen by the value's shape) give one clean error per bad value
# instead of one per union branch. The tags appear in pydantic's error locations and are
# removed from the key paths we report.
ACTION_TAG = "@action"
TABLE_TAG = "@table"


def _shape(value: Any) -> str:
    return TABLE_TAG if isinstance(value, dict) else ACTION_TAG


PermissionValue = Annotated[
    Union[Annotated[Action, Tag(ACTION_TAG)], Annotated[dict[str, Action], Tag(TABLE_TAG)]],  # noqa: UP007
    Discriminator(_shape),
]
"""A permission's value: a bare action, or ``{pattern: action}`` in order."""

PermissionConfig = Annotated[
    Union[  # noqa: UP007
        Annotated[Action, Tag(ACTION_TAG)],
        Annotated[dict[str, PermissionValue], Tag(TABLE_TAG)],
    ],
    Discriminator(_shape),
]
"""A ``[permission]`` table (``{permission: value}`` in order), or a bare action (= ``{"*": action}``)."""


class _Strict(BaseModel):
    # descriptions are given with Field(description=...): pydantic's attribute-docstring
    # reading walks stack frames and costs start-up time
    model_config = ConfigDict(extra="forbid", defer_build=True)


class AgentConfig(_Strict):
    """``[agent.NAME]``: overrides for a built-in agent, or a new agent."""

    description: str | None = Field(
        default=None,
        examples=["Reviews diffs for bugs"],
        description="What the agent is for (shown to the model when it may call it as a sub-agent).",
    )
    mode: Literal["primary", "subagent", "all"] | None = Field(
        default=None,
        description="``primary`` (you talk to it), ``subagent`` (the task tool calls it) or ``all``.",
    )
    model: str | None = Field(
        default=None,
        examples=["anthropic/claude-haiku-5-5"],
        description="The agent's model, ``provider/model``; default: the session's.",
    )
    prompt: str | None = Field(
        default=None,
        examples=["You review code. Never edit files."],
        description="The agent's system prompt (replaces the default prompt).",
    )
    steps: int | None = Field(
        default=None,
        ge=1,
        examples=[20],
        description="Step limit: requests 1..N offer tools, request N+1 offers none.",
    )
    temperature: float | None = Field(
        default=None, examples=[0.2], description="Sampling temperature for this agent's requests."
    )
    top_p: float | None = Field(
        default=None, examples=[0.9], description="Nucleus sampling for this agent's requests."
    )
    permission: PermissionConfig | None = Field(
        default=None,
        examples=[{"edit": "deny"}],
        description="Rules for this agent, after ``[permission]`` (same shape).",
    )
    disable: bool = Field(default=False, description="Remove this agent.")


class ToolLimits(_Strict):
    """Per-tool output budget (``[truncation.tools.NAME]``); unset = the global budget."""

    max_lines: int | None = Field(
        default=None, gt=0, examples=[400], description="Lines kept of this tool's output."
    )
    max_bytes: int | None = Field(
        default=None, gt=0, examples=[20000], description="Bytes kept of this tool's output."
    )


class TruncationConfig(_Strict):
    """``[truncation]``: the output budget of tool results."""

    max_lines: int = Field(
        default=2000,
        gt=0,
        description="Lines of a tool's output the model sees; the rest is spilled to a file.",
    )
    max_bytes: int = Field(
        default=51200, gt=0, description="Bytes of a tool's output the model sees (50 KB)."
    )
    spill_max: int = Field(
        default=100 * 1024 * 1024,
        gt=0,
        description=(
            "Bytes one spill file (the full output of a cut tool result) holds at most "
            "(100 MB); past it, its first and last halves are kept, with a line saying how "
            "many bytes were dropped between them."
        ),
    )
    tools: dict[str, ToolLimits] = Field(
        default={},
        examples=[{"bash": {"max_lines": 400}}],
        description="Per-tool budgets, ``[truncation.tools.NAME]``.",
    )


class PluginsConfig(_Strict):
    """``[plugins]``: which entry points to load (None = all) and which to block."""

    load: list[str] | None = Field(
        default=None,
        examples=[["policy_rules", "tool_read"]],
        description="Entry points to load (unset: all); ``HOOKCODE_LOAD_PLUGINS`` replaces it.",
    )
    block: list[str] = Field(
        default=[],
        examples=[["tool_bash"]],
        description="Entry points never to load; ``HOOKCODE_BLOCK_PLUGINS`` adds to it.",
    )


class CoreConfig(_Strict):
    """The sections core owns."""

    model: str | None = Field(
        default=None,
        examples=["anthropic/claude-sonnet-5-5"],
        description="The default model, ``provider/model`` (e.g. ``anthropic/claude-sonnet-5-5``).",
    )
    small_model: str | None = Field(
        default=None,
        examples=["anthropic/claude-haiku-5-5"],
        description="A cheaper model for internal work such as compaction summaries.",
    )
    default_agent: str | None = Field(
        default=None,
        examples=["plan"],
        description="The agent ``hookcode run`` uses when none is named (default: ``build``).",
    )
    store: str | None = Field(
        default=None,
        examples=["postgresql://hookcode@db.example.com/hookcode?sslmode=require"],
        description="Where sessions, approvals and todos are kept: a store URL "
        "(``postgresql://...`` with hookcode-store-postgres installed, or "
        "``sqlite:///abs/path.db``); default: the SQLite file in the data directory. Only the "
        "user's config counts: a project's config that sets it is ignored with a warning. "
        "``HOOKCODE_STORE`` wins over it. ``config show`` masks its password.",
    )
    edit_tools: Literal["auto", "edit", "apply_patch", "both"] = Field(
        default="auto",
        description="Which file-editing tools a model is offered (the ``model_tools`` hook of policy_rules applies it): ``auto`` follows the model rule (GPT-style models get the tools that take patches, apply_patch; others edit/write/multiedit), or force one family, or ``both``.",
    )
    permission: PermissionConfig = Field(
        default={},
        # (JSON schema output sorts keys: keep the example's order alphabetical too)
        examples=[{"*": "allow", "bash": {"*": "ask", "git status *": "allow"}, "edit": "ask"}],
        description="Permission rules: ``permission = action`` or ``{pattern = action}``; "
        "last match wins. In an untrusted project's files, allow rules are ignored and deny "
        "and ask rules can only make a decision stricter.",
    )
    agent: dict[str, AgentConfig] = Field(
        default={},
        examples=[{"review": {"mode": "subagent", "description": "Reviews diffs"}}],
        description="Agents: overrides of built-in agents and new ones, ``[agent.NAME]``.",
    )
    tools: dict[str, bool] = Field(
        default={},
        examples=[{"webfetch": False}],
        description="Legacy switches ``name = true|false``, turned into allow/deny rules (an "
        "untrusted project's ``true`` is ignored).",
    )
    plugins: PluginsConfig = Field(
        default_factory=PluginsConfig,
        description="Which plugins load.",
        # blocking a policy plugin loosens as surely as loading one
        json_schema_extra=trusted_only(),
    )
    truncation: TruncationConfig = Field(
        default_factory=TruncationConfig, description="The output budget of tool results."
    )
    experimental: dict[str, Any] = Field(
        default={},
        examples=[{"some_flag": True}],
        description="Experimental switches (unstable).",
        # any switch could turn anything on (``exa`` sends queries to a third party)
        json_schema_extra=trusted_only(),
    )


CORE_KEYS: tuple[str, ...] = tuple(CoreConfig.model_fields)

KeyPath = tuple[str, ...]
