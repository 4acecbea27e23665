"""What a request sends besides the history, and keeping the history within the model's
context window: the system prompt (the agent's prompt, the environment, AGENTS.md and the like),
the request parameters, compaction (a summary replaces the history) and pruning (old tool
outputs become placeholders). A part of :class:`~hookcode.session.SessionLoop`."""

from __future__ import annotations

import platform
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hookcode.compaction as compaction
from hookcode.agents import AgentSpec
from hookcode.errors import HookcodeError
from hookcode.ids import new_id
from hookcode.messages import (
    CompactionPart,
    SessionMessage,
    TextPart,
    estimate_tokens,
    to_provider_messages,
)
from hookcode.providers import Message, StreamError
from hookcode.session.model_choice import resolve_model
from hookcode.session.stream import ReplyStream

if TYPE_CHECKING:
    from hookcode.providers import Provider
    from hookcode.session.stream import Step

__all__ = ["DEFAULT_PROMPT", "INSTRUCTION_FILES", "SessionContext"]

DEFAULT_PROMPT = (
    "You are hookcode, a coding agent. Use the tools you are given to read, search, edit and "
    "run code in the user's project. Be concise; say what you did and what remains."
)
#: instruction files whose content goes into the system prompt (the first found per directory)
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CONTEXT.md")


class SessionContext(ReplyStream):
    """The system prompt, the request parameters, compaction and pruning (see the module's
    docstring)."""

    _instructions: list[str] | None
    _compacted_at: int

    if TYPE_CHECKING:
        # SessionLoop's: one request, retried as long as no call of it started
        async def _request(
            self,
            msg: SessionMessage,
            provider: Provider,
            model_name: str,
            system: list[str],
            history: list[Message],
            tools: list[dict[str, Any]],
            params: dict[str, Any],
            agent: str,
            *,
            run_calls: bool,
        ) -> Step: ...

    def _system(self, spec: AgentSpec) -> list[str]:
        parts = [spec.prompt or DEFAULT_PROMPT, self._environment(), *self._instruction_blocks()]
        self.runtime.plugins.call_each(
            "system_prompt",
            parts=parts,
            session=self.session,
            agent=spec,
            model=self.model_id,
            runtime=self.runtime,
        )
        return parts

    def _params(self, spec: AgentSpec, model_id: str) -> dict[str, Any]:
        info = self._model_info()
        params: dict[str, Any] = {
            "temperature": spec.temperature,
            "top_p": spec.top_p,
            "max_tokens": info.output if info is not None and info.output else None,
            "options": dict(spec.options),
        }
        self.runtime.plugins.call_each(
            "chat_params",
            params=params,
            session=self.session,
            agent=spec,
            model=model_id,
            runtime=self.runtime,
        )
        return params

    async def _maybe_compact(self) -> bool | None:
        """Compact when the history nears the context window: True when it did, False when
        the summary request failed, None when nothing was needed."""
        cfg = compaction.settings(self.runtime.config)
        info = self._model_info()
        if not cfg["auto"] or info is None or not info.context:
            return None
        if self._compacted_at == len(self.messages):
            return None  # nothing new since the last summary
        fixed = estimate_tokens(self._system(self.spec))
        tokens = compaction.context_tokens(self.messages, fixed)
        if not compaction.overflows(tokens, info, cfg["reserved"]):
            return None
        return await self.compact(auto=True)

    async def compact(self, *, auto: bool = False) -> bool:
        """Summarise the history with the ``compaction`` agent; the summary replaces it.
        ``auto`` adds a synthetic "continue" message so the loop goes on."""
        rt = self.runtime
        assert self.session is not None
        try:
            spec = rt.agent("compaction")
        except HookcodeError:
            spec = AgentSpec(name="compaction", mode="hidden")
        provider, model_name, model_id = self.provider, self.model_name, self.model_id
        if spec.model and spec.model != self.model_id:
            provider, model_name, model_id = resolve_model(rt, spec.model, spec)
        history = to_provider_messages(self.messages)
        request_text = {"type": "text", "text": compaction.SUMMARY_REQUEST}
        if history and history[-1].role == "user":  # a new message: the last may be shared
            history[-1] = Message("user", [*history[-1].content, request_text])
        else:
            history.append(Message("user", [request_text]))
        user = SessionMessage(
            id=new_id("msg"),
            session_id=self.session.id,
            role="user",
            agent=self.spec.name,
            model=model_id,
            parts=[CompactionPart(id=new_id("prt"), auto=auto)],
        )
        self._append(user)
        system = [spec.prompt or compaction.COMPACTION_PROMPT]
        rt.plugins.call_each(
            "system_prompt",
            parts=system,
            session=self.session,
            agent=spec,
            model=model_id,
            runtime=rt,
        )
        params = self._params(spec, model_id)
        msg = self._new_assistant("compaction", model_id, user.id, summary=True)
        self.emit("compaction", {"status": "started", "message_id": msg.id})
        st = await self._request(
            msg, provider, model_name, system, history, [], params, "compaction", run_calls=False
        )
        self._close_parts(msg, st)
        if st.error is None and not st.aborted and not st.reply_text().strip():
            st.error = StreamError("the compaction request returned no summary")
        self._finish_message(msg, st)
        self.result.compactions += 1
        if st.error is not None or st.aborted:
            self.result.error = f"compaction failed: {st.error.message}" if st.error else None
            self.result.aborted = st.aborted
            self.result.finish = "error" if st.error else "aborted"
            self.emit("compaction", {"status": "failed", "message_id": msg.id})
            return False
        rt.events.publish("session.compacted", session_id=self.session.id, message_id=msg.id)
        self.emit("compaction", {"status": "completed", "message_id": msg.id})
        if auto:
            cont = SessionMessage(
                id=new_id("msg"),
                session_id=self.session.id,
                role="user",
                agent=self.spec.name,
                model=self.model_id,
                parts=[TextPart(id=new_id("prt"), text=compaction.CONTINUE_TEXT, synthetic=True)],
            )
            self._append(cont)
        self._compacted_at = len(self.messages)
        return True

    def _prune(self) -> None:
        if not self.messages or not compaction.settings(self.runtime.config)["prune"]:
            return
        parts = compaction.prunable(self.messages, self.runtime.registry.kept_outputs())
        if not parts:
            return
        now = time.time()
        self.store.set_compacted([p.call_id for p in parts], now)
        for part in parts:
            part.state.time.compacted = now
        self._history.clear()

    # -- the system prompt --------------------------------------------------------------------
    def _environment(self) -> str:
        rt = self.runtime
        return (
            "<env>\n"
            f"  Working directory: {rt.cwd}\n"
            f"  Project root: {rt.worktree}\n"
            f"  Is a git repository: {(rt.worktree / '.git').exists()}\n"
            f"  Platform: {platform.system().lower()}\n"
            f"  Today's date: {date.today().isoformat()}\n"
            "</env>"
        )

    def _instruction_blocks(self) -> list[str]:
        """AGENTS.md / CLAUDE.md / CONTEXT.md (the first found in each directory from the git
        root down to the working directory, and in the user's config directory)."""
        if self._instructions is None:
            from hookcode.agents import project_dirs, user_config_dir

            rt = self.runtime
            blocks: list[str] = []
            dirs = [user_config_dir(rt.env), *project_dirs(rt.cwd, rt.worktree)]
            for directory in dirs:
                for name in INSTRUCTION_FILES:
                    path = Path(directory) / name
                    if path.is_file():
                        try:
                            content = path.read_text(encoding="utf-8", errors="replace")
                        except OSError:
                            break
                        blocks.append(f"Instructions from: {path}\n{content.rstrip()}")
                        break
            self._instructions = blocks
        return list(self._instructions)
