"""``[tool.bash]``: imported only when the config is loaded (it needs pydantic)."""

from __future__ import annotations

from typing import Literal

from hookcode.tools import MAX_TIMEOUT_MS
from hookcode.trust import trusted_only
from pydantic import BaseModel, ConfigDict, Field


class BashConfig(BaseModel):
    """``[tool.bash]``: how the bash tool runs commands.

    Attributes:
        persistent: one long-lived shell per session; ``cd`` and exported variables carry
            over from one call to the next.
        max_timeout: milliseconds; caps the ``timeout`` argument (and its default) when set;
            at most 2147483647 (about 24.8 days).
        profile: ``strict`` adds policy_shell's strict rules (network and browser commands
            denied) to the read-only commands every profile allows; explicit
            ``[permission]`` rules still win.
        shell: the shell to run (default: bash, else ``$SHELL`` unless fish or nu, else sh;
            a shell other than bash, sh or dash makes every command opaque to the policy).

    The project's own config of an untrusted folder cannot set ``shell`` (a program to run)
    and can set ``profile`` only to ``strict``.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    persistent: bool = False
    max_timeout: int | None = Field(default=None, gt=0, le=MAX_TIMEOUT_MS)
    profile: Literal["default", "strict"] = Field(
        default="default", json_schema_extra=trusted_only(keep=["strict"])
    )
    shell: str | None = Field(default=None, json_schema_extra=trusted_only())
