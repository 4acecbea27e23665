"""The chat and the prompts in a real terminal (a pty), typed key by key and read from the
screen: the permission prompt's single keys, the spinner, the chat's commands, line editing
and history, Ctrl-C, and the model's Markdown. The model is the scripted provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.terminal import Terminal
from hookcode.testing import HookcodeEnv


def script(env: HookcodeEnv, *turns: Any) -> Path:
    path = env.root / "script.json"
    path.write_text(json.dumps(list(turns)))
    return path


def bash_call(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "args": {"command": command, "description": "tidy"}}]}


def test_the_permission_prompt_takes_single_keys(hookcode_env: HookcodeEnv) -> None:
    turns = script(
        hookcode_env,
        bash_call("rm -f zz && echo first"),
        bash_call("rm -f yy && echo second"),
        bash_call("rm -f xx && echo third"),
        "all done",
    )
    args = ["run", "--model", "scripted/x", "--script", str(turns), "go"]
    with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
        shown = term.expect("Allow? ")
        shown = shown[shown.index("Permission required") :]  # (the spinner ran before)
        assert shown.count("rm -f zz && echo first") == 1  # the command, once
        assert "opaque" not in shown and "read_only" not in shown  # the policies' fields
        assert '"always" remembers: bash rm *  echo *' in shown
        assert "[y] yes, once" in shown and "[n] no" in shown
        term.type("\r")  # Enter alone answers nothing
        term.expect("(press y/a/p/n/f)")
        term.type("y")
        term.expect("yes, once")
        term.expect("✓ bash rm -f zz && echo first")
        term.expect("Allow? ")
        term.type("a")  # always: rm * and echo * for this session
        term.expect("always, this session")
        term.expect("✓ bash rm -f yy && echo second")
        # remembered: the third call is not asked about
        term.expect("✓ bash rm -f xx && echo third")
        term.expect("all done")
        assert term.wait() == 0
        assert term.text.count("Allow? ") == 2


def test_n_refuses_and_f_refuses_with_feedback(hookcode_env: HookcodeEnv) -> None:
    for key in ("n", "f"):
        turns = script(hookcode_env, bash_call("rm -f zz"), "unreached")
        args = ["run", "--model", "scripted/x", "--script", str(turns), "go"]
        with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
            term.expect("Allow? ")
            term.type(key)
            if key == "f":
                term.expect("Feedback for the model")
                term.type("use trash instead\r")
            term.expect("✗ bash rm -f zz")
            assert term.wait() == 0
            if key == "n":
                assert "unreached" not in term.text  # a plain no ends the run
            else:  # the feedback goes to the model, which goes on
                assert "feedback: use trash" in term.text.split("✗ bash rm -f zz")[1]
                assert "unreached" in term.text


def test_the_spinner_shows_the_wait_the_tools_and_their_last_output_lines(
    hookcode_env: HookcodeEnv,
) -> None:
    # the tool prints its lines, then waits for the file `go` (the test makes it once the
    # screen shows the lines): the spinner is seen while the tool runs, not guessed at
    command = "rm -f zz; for i in 1 2 3 4 5 6 7; do echo out$i; done; while [ ! -e go ]; do sleep 0.05; done"
    turns = script(
        hookcode_env,
        {"text": "", "delay": 2.5, "tool_calls": bash_call(command)["tool_calls"]},
        "finished",
    )
    args = ["run", "--model", "scripted/x", "--script", str(turns), "go"]
    with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
        term.expect("waiting for the model")
        term.expect("1s")  # the elapsed time counts
        term.expect("Allow? ")
        term.type("y")
        term.expect("yes, once")
        term.expect("running bash rm -f zz")  # back after the prompt
        term.expect("│ out7")  # the last lines of the output, live
        shown = term.text[term.text.rindex("running bash") :]
        assert "│ out3" in shown and "│ out1" not in shown  # only the last few
        (hookcode_env.project / "go").write_text("")
        term.expect("✓ bash rm -f zz")
        term.expect("finished")
        assert term.wait() == 0


def chat_env(env: HookcodeEnv) -> dict[str, str]:
    """The environment of a chat with the echo model (it says back what it was sent)."""
    chat = dict(env.env)
    chat["HOOKCODE_CONFIG_CONTENT"] = 'model = "scripted/echo"'
    chat.pop("HOOKCODE_SCRIPT", None)
    return chat


#: the chat's prompt, as the screen shows it (the line editor draws ">" at a line's start)
PROMPT = "\n>"
UP, CTRL_C, CTRL_D, CTRL_R, ALT_ENTER = "\x1b[A", "\x03", "\x04", "\x12", "\x1b\r"


def test_history_multi_line_input_and_ctrl_c(hookcode_env: HookcodeEnv) -> None:
    env = chat_env(hookcode_env)
    with Terminal(["chat"], env, hookcode_env.project) as term:
        term.expect(PROMPT)
        term.type("alpha one\r")
        term.expect("alpha one")  # the echo
        term.expect(PROMPT)
        term.type("beta two\r")
        term.expect("beta two")
        term.expect(PROMPT)
        term.type(UP + UP + "\r")  # recalled: alpha one, sent again
        term.expect("alpha one")
        term.expect(PROMPT)
        term.type("first line" + ALT_ENTER + "second line\r")  # one message, two lines
        term.expect("second line")
        term.expect(PROMPT)
        term.type("half typed" + CTRL_C)  # clears the line, does not quit
        term.type("gamma\r")
        term.expect("gamma")
        term.expect(PROMPT)
        term.type("/nosuch\r")
        term.expect("unknown command /nosuch")
        term.expect(PROMPT)
        term.type(CTRL_C)
        term.expect("Ctrl-C again")
        term.type(CTRL_C)
        assert term.wait() == 0
    sent = [line for line in term.text.splitlines() if "half typed" in line]
    assert not any("gamma" in line for line in sent)  # the cleared text was not sent
    history = (hookcode_env.data_dir / "chat_history").read_text()
    assert "alpha one" in history and "+first line\n+second line" in history
    assert "half typed" not in history  # cleared, never sent

    # the history is kept: a new chat finds it with Ctrl-R
    with Terminal(["chat"], env, hookcode_env.project) as term:
        term.expect(PROMPT)
        term.type(CTRL_R + "bet")
        term.expect("beta two")
        term.type("\r\r")  # take it, then send it
        term.expect("tokens in")
        term.expect(PROMPT)
        term.type(CTRL_D)
        assert term.wait() == 0


def test_ctrl_c_stops_a_reply_and_the_chat_goes_on(hookcode_env: HookcodeEnv) -> None:
    turns = script(hookcode_env, {"text": "never said", "delay": 600}, "said after")
    args = ["chat", "--model", "scripted/x", "--script", str(turns)]
    with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
        term.expect(PROMPT)
        term.type("take your time\r")
        term.expect("waiting for the model")
        term.type(CTRL_C)
        term.expect("aborting")
        term.expect(PROMPT)  # the chat is still there
        term.type("again\r")
        term.expect("said after")
        term.expect(PROMPT)
        term.type("/exit\r")
        assert term.wait() == 0
        assert "never said" not in term.text


MARKDOWN = """# The plan

Some **bold** words and a path: [/etc/hosts] and [bold]not markup[/bold].

- first item
- second item

```python
def greet(name):
    return f"hello {name}"
```

1. one
2. two
"""


def test_the_models_markdown_is_rendered(hookcode_env: HookcodeEnv) -> None:
    turns = script(hookcode_env, {"text": MARKDOWN}, {"text": MARKDOWN})
    args = ["chat", "--model", "scripted/x", "--script", str(turns)]
    with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
        term.expect(PROMPT)
        term.type("plan it\r")
        shown = term.expect("tokens in")
        term.expect(PROMPT)
        term.type("/exit\r")
        assert term.wait() == 0
    assert "The plan" in shown and "# The plan" not in shown  # a heading, not its hashes
    # (the screen is read as printed: the live block's renderings as it grew are in it too)
    assert "**bold**" not in shown and "Some bold words" in shown
    assert "[/etc/hosts]" in shown and "[bold]not markup[/bold]" in shown  # never Rich markup
    assert "• first item" in shown and "• second item" in shown
    assert "```python" not in shown and 'return f"hello {name}"' in shown  # a code block
    assert " 1 one" in shown and " 2 two" in shown
    assert "MarkupError" not in term.text
    # the code is highlighted: colour sequences around it
    raw = term.raw.decode(errors="replace")
    assert "\x1b[" in raw[raw.index("def") - 40 : raw.index("def")]


def test_a_bracketed_tool_input_in_the_chat_and_its_prompt(hookcode_env: HookcodeEnv) -> None:
    command = "rm -f '[/etc/hosts]' && echo 'list[str]'"
    turns = script(hookcode_env, bash_call(command), "done with [/x]")
    args = ["chat", "--model", "scripted/x", "--script", str(turns)]
    with Terminal(args, hookcode_env.env, hookcode_env.project) as term:
        term.expect(PROMPT)
        term.type("go\r")
        shown = term.expect("Allow? ")
        assert f"$ {command}" in shown  # as written, never read as markup
        term.type("y")
        term.expect(f"✓ bash {command}")
        term.expect("done with [/x]")
        term.expect(PROMPT)
        term.type("/exit\r")
        assert term.wait() == 0
    assert "MarkupError" not in term.text and "Traceback" not in term.text
