"""The question tool (reference/tools.md §18) and how the loop treats its failures."""

from __future__ import annotations

import asyncio
import threading
import time

from hookcode import hookimpl
from hookcode.errors import ToolAborted
from hookcode.session import run_session
from hookcode.testing import ScriptedModel, ToolCallSpec, Turn, ainvoke_tool, invoke_tool
from hookcode_tool_question import DISMISSED, HEADLESS

QUESTIONS = {
    "questions": [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [
                {"label": "Postgres", "description": "relational"},
                {"label": "SQLite", "description": "embedded"},
            ],
            "multiple": True,
        },
        {
            "question": "Which port?",
            "header": "Port",
            "options": [{"label": "8080", "description": "default"}],
        },
    ]
}


class Answer:
    """A front end answering with fixed answers (None: the user dismisses)."""

    def __init__(self, answers):
        self.answers = answers
        self.requests = []

    @hookimpl
    def question_prompt(self, request):
        self.requests.append(request)
        return self.answers


def runtime(env, front_end=None, extra=""):
    if front_end is not None:
        env.register(front_end, "front_end")
    return env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules,tool_question" + extra)


def test_answers_are_formatted_as_the_reference_does(hookcode_env):
    front = Answer([["Postgres", "SQLite"], []])
    rt = runtime(hookcode_env, front)

    outcome = invoke_tool(rt, "question", QUESTIONS)

    assert outcome.error is None, outcome.error_text
    assert outcome.result.output == (
        'User has answered your questions: "Which database?"="Postgres, SQLite", '
        '"Which port?"="Unanswered". You can now continue with the user\'s answers in mind.'
    )
    assert outcome.result.title == "Asked 2 questions"
    assert outcome.result.metadata["answers"] == [["Postgres", "SQLite"], []]
    (request,) = front.requests
    first = request.questions[0]
    assert (first.question, first.header, first.multiple, first.custom) == (
        "Which database?",
        "Database",
        True,
        True,  # the hidden custom flag: the user may type an answer
    )
    assert [(o.label, o.description) for o in first.options] == [
        ("Postgres", "relational"),
        ("SQLite", "embedded"),
    ]
    assert request.questions[1].multiple is False
    assert request.tool["call_id"] == outcome.call.call_id


def test_one_question_title_and_missing_answers_are_unanswered(hookcode_env):
    rt = runtime(hookcode_env, Answer([]))
    one = {"questions": QUESTIONS["questions"][1:]}

    outcome = invoke_tool(rt, "question", one)

    assert outcome.result.title == "Asked 1 question"
    assert '"Which port?"="Unanswered"' in outcome.result.output
    assert outcome.result.metadata["answers"] == [[]]


def test_dismissal_is_the_reference_error(hookcode_env):
    rt = runtime(hookcode_env, Answer(None))
    outcome = invoke_tool(rt, "question", QUESTIONS)
    assert outcome.error_text == DISMISSED == "The user dismissed this question"
    assert outcome.error.stop_loop is True


def test_headless_is_a_different_error_saying_nobody_can_be_asked(hookcode_env):
    rt = runtime(hookcode_env)
    outcome = invoke_tool(rt, "question", QUESTIONS)
    assert outcome.error_text == HEADLESS != DISMISSED
    assert "No user can be asked" in HEADLESS
    assert not getattr(outcome.error, "stop_loop", False)


def test_header_longer_than_30_characters_is_invalid(hookcode_env):
    rt = runtime(hookcode_env, Answer([["x"]]))
    bad = {"questions": [{"question": "q", "header": "h" * 31, "options": []}]}
    outcome = invoke_tool(rt, "question", bad)
    assert outcome.error_text.startswith("The question tool was called with invalid arguments: ")
    assert "questions.0.header" in outcome.error_text
    # custom is hidden from the model
    schema = rt.registry.get("question").tool.parameters
    assert "custom" not in str(schema)


def test_question_is_only_offered_to_build_and_plan(hookcode_env):
    rt = runtime(hookcode_env)
    assert "question" in {d["name"] for d in rt.registry.definitions("build")}
    assert "question" in {d["name"] for d in rt.registry.definitions("plan")}
    assert "question" not in {d["name"] for d in rt.registry.definitions("general")}


def test_abort_while_waiting_for_the_user(hookcode_env):
    release = threading.Event()

    class Slow:
        @hookimpl
        def question_prompt(self, request):
            release.wait(5)
            return [["late"]]

    rt = runtime(hookcode_env, Slow())

    async def main():
        from hookcode.pipeline import invoke
        from hookcode.tools import AbortSignal, ToolCall

        session = rt.create_session(title="t", agent="build")
        call = ToolCall("question", QUESTIONS, "call_1", session.id, agent="build")
        abort = AbortSignal()
        task = asyncio.ensure_future(invoke(rt, call, abort=abort))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        abort.abort()
        outcome = await task
        return outcome, time.monotonic() - started

    try:
        outcome, elapsed = asyncio.run(main())
    finally:
        release.set()
    assert isinstance(outcome.error, ToolAborted)
    assert elapsed < 1


# -- the loop ------------------------------------------------------------------------------------


class Pack:
    def __init__(self, model):
        self.model = model

    @hookimpl
    def provider(self):
        return [self.model]


def ask_turn():
    return Turn(tool_calls=[ToolCallSpec("question", QUESTIONS, id="q1")])


def test_a_dismissed_question_stops_the_loop(hookcode_env):
    model = ScriptedModel([ask_turn(), "should not be reached"], id="script")
    hookcode_env.register(Pack(model), "pack")
    rt = runtime(hookcode_env, Answer(None))

    result = asyncio.run(run_session(rt, "ask me", model="script/test"))

    assert len(model.requests) == 1
    assert result.outcomes[0].error_text == DISMISSED
    assert result.text != "should not be reached"


def test_a_headless_question_is_an_error_the_loop_moves_past(hookcode_env):
    model = ScriptedModel([ask_turn(), "went on"], id="script")
    hookcode_env.register(Pack(model), "pack")
    rt = runtime(hookcode_env)

    result = asyncio.run(run_session(rt, "ask me", model="script/test"))

    assert len(model.requests) == 2
    assert result.text == "went on"
    sent = [b for m in model.requests[1].messages if m.role == "tool" for b in m.content]
    assert sent[0]["output"] == HEADLESS
    assert sent[0].get("is_error") or sent[0].get("error")


def test_an_answered_question_goes_back_to_the_model(hookcode_env):
    model = ScriptedModel([ask_turn(), "thanks"], id="script")
    hookcode_env.register(Pack(model), "pack")
    rt = runtime(hookcode_env, Answer([["SQLite"], ["8080"]]))

    result = asyncio.run(run_session(rt, "ask me", model="script/test"))

    assert result.text == "thanks"
    sent = [b for m in model.requests[1].messages if m.role == "tool" for b in m.content]
    assert sent[0]["output"].startswith(
        'User has answered your questions: "Which database?"="SQLite", "Which port?"="8080".'
    )


def test_async_invoke_works_too(hookcode_env):
    rt = runtime(hookcode_env, Answer([["Postgres"], ["8080"]]))
    outcome = asyncio.run(ainvoke_tool(rt, "question", QUESTIONS))
    assert outcome.result.metadata["answers"] == [["Postgres"], ["8080"]]
