"""The ``[cache]`` config section (imported when the config is validated, never at start-up)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["WRITERS", "CacheConfig"]

#: tools the cache refuses, and why: they change something, or their answer is not a function
#: of their arguments and the files they read
WRITERS: dict[str, str] = {
    "edit": "writes files",
    "write": "writes files",
    "multiedit": "writes files",
    "apply_patch": "writes files",
    "patch": "writes files",
    "bash": "runs commands, which may write anything",
    "task": "runs a sub-agent, which may write",
    "batch": "runs other tools, which may write",
    "todowrite": "changes the todo list",
    "todoread": "reads the todo list, which changes without file events",
    "question": "asks the user",
    "plan_enter": "changes the agent",
    "plan_exit": "changes the agent",
}


class CacheConfig(BaseModel):
    """``[cache]``: serve repeated calls of read-only tools from memory."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    tools: list[str] = Field(
        default_factory=list,
        description="The tools whose results are cached (default: none, the cache is off). "
        "Tools that write (edit, write, bash, ...) are refused.",
    )
    ttl: dict[str, float] = Field(
        default_factory=dict,
        description="Seconds an entry lives, per tool ('*': every other tool). Defaults: "
        "grep, glob, list 30; everything else 300.",
    )
    max_entries: int = Field(default=256, ge=1, description="At most this many entries (LRU).")
    max_bytes: int = Field(
        default=32 * 1024 * 1024, ge=1, description="At most this many bytes of results (LRU)."
    )

    @field_validator("tools")
    @classmethod
    def _read_only(cls, tools: list[str]) -> list[str]:
        refused = [name for name in tools if name in WRITERS]
        if refused:
            reasons = "; ".join(f"'{name}' {WRITERS[name]}" for name in refused)
            raise ValueError(
                f"the cache only serves read-only tools: {reasons}. Remove "
                f"{', '.join(repr(n) for n in refused)} from [cache] tools"
            )
        return tools

    @field_validator("ttl")
    @classmethod
    def _positive(cls, ttl: dict[str, float]) -> dict[str, float]:
        bad = [name for name, seconds in ttl.items() if not seconds > 0]
        if bad:
            raise ValueError(f"a ttl is a positive number of seconds (see {', '.join(bad)})")
        return ttl
