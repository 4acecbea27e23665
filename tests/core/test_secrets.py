"""Secrets never stored (issue 16, item 6): what a runtime knows to be secret
(``hookcode.secrets``), its redaction wherever a secret could be kept or exported (the
model-visible result, the store and its WAL, spill files, exports, the audit log), and the data
directory's modes. Real runtimes, real bash processes, real ``hookcode`` subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import random
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookcode import ToolContext, ToolResult, hookimpl, tool
from hookcode.errors import ToolError
from hookcode.providers import (
    AuthMethod,
    Finish,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolInputDelta,
    Usage,
)
from hookcode.secrets import (
    MASK,
    MIN_LENGTH,
    Redactor,
    Secret,
    mask_config,
    secret_env_name,
    secret_key_name,
)
from hookcode.session import SAVE_INTERVAL, run_session
from hookcode.testing import ReplyWith, ScriptedModel, ToolCallSpec, Turn, invoke_tool

ENV_KEY = "sk-ant-api03-Zq8XwJ2mVn4Lr7Tb0Yc5Hd9Ke3Pf6Ug1"
STORED_KEY = "sk-proj-Qe7Rt2Yu8Io3Pa5Sd1Fg6Hj4Kl9Zx0Cv"
HEADER_TOKEN = "hdr-Tok3n-VbN7mQ2wE5rT8yU1iO4p"
MCP_TOKEN = "mcp-access-Jx4Kc8Lv2Bn6Mz0Qa5"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ---------------------------------------------------------------------------------------------
# the redactor
# ---------------------------------------------------------------------------------------------


def test_a_secret_is_replaced_by_a_marker_naming_its_source() -> None:
    redactor = Redactor([Secret(ENV_KEY, "ANTHROPIC_API_KEY"), "plain-secret-value"])
    text = f"key={ENV_KEY}; again {ENV_KEY}; plain-secret-value."
    assert redactor.redact(text) == (
        "key=[redacted: ANTHROPIC_API_KEY]; again [redacted: ANTHROPIC_API_KEY]; [redacted]."
    )
    clean = "nothing to see"
    assert redactor.redact(clean) is clean
    # a source with quotes (a config key) cannot break the JSON or the line it lands in
    quoted = Redactor([Secret("q" * 10, 'config headers."X\\Y"')])
    assert quoted.redact("q" * 10) == "[redacted: config headers.?X?Y?]"
    assert ENV_KEY not in repr(Secret(ENV_KEY, "X")) and ENV_KEY not in repr(redactor)


def test_values_shorter_than_the_minimum_are_not_secrets() -> None:
    short = "x" * (MIN_LENGTH - 1)
    redactor = Redactor([Secret(short, "SHORT"), Secret("y" * MIN_LENGTH, "LONG")])
    assert len(redactor) == 1
    assert redactor.redact(f"{short} {'y' * MIN_LENGTH}") == f"{short} [redacted: LONG]"
    assert not Redactor([short])


def test_the_longest_secret_goes_first_and_a_value_keeps_its_first_source() -> None:
    inner = "abcdefgh12"
    outer = f"xx-{inner}-yy"
    redactor = Redactor([Secret(inner, "INNER"), Secret(outer, "OUTER"), Secret(inner, "LATER")])
    assert redactor.redact(f"{outer} {inner}") == "[redacted: OUTER] [redacted: INNER]"


def test_a_text_full_of_the_anchor_character_is_still_searched() -> None:
    """Each secret is looked for through its rarest character; a text where that character is
    everywhere falls back to a search for the secret itself."""
    secret = "ZZZZZZZZ-key-ZZZZZZZ1"
    redactor = Redactor([Secret(secret, "Z")])
    for text in ("Z" * 10_000 + secret, "Z" * 3 + secret + "Z" * 3, ("Z-" * 20) + secret):
        assert redactor.redact(text).endswith("[redacted: Z]") or "[redacted: Z]" in (
            redactor.redact(text)
        )
        assert secret not in redactor.redact(text)


def test_redact_value_walks_json_and_keeps_clean_values_identical() -> None:
    redactor = Redactor([Secret(ENV_KEY, "K")])
    clean = {"a": [1, "two", {"three": None}], "b": ("x",)}
    assert redactor.redact_value(clean) is clean
    dirty = {"a": [1, f"v {ENV_KEY}"], ENV_KEY: "key", "n": 3}
    out = redactor.redact_value(dirty)
    assert out == {"a": [1, "v [redacted: K]"], "[redacted: K]": "key", "n": 3}
    assert dirty["a"][1] == f"v {ENV_KEY}"  # the original is left alone


def _stream(redactor: Redactor, chunks: list[str]) -> str:
    stream = redactor.stream()
    return "".join(stream.feed(chunk) for chunk in chunks) + stream.flush()


def test_a_streamed_text_is_redacted_whatever_its_chunks() -> None:
    """A secret may straddle two chunks (or many): the stream's output equals the redaction of
    the whole text for every split."""
    redactor = Redactor([Secret(ENV_KEY, "A"), Secret(STORED_KEY, "B")])
    text = f"start s{ENV_KEY}s sk-{STORED_KEY}{ENV_KEY} sk-ant end sk"
    whole = redactor.redact(text)
    for cut in range(len(text) + 1):
        assert _stream(redactor, [text[:cut], text[cut:]]) == whole, cut
    rng = random.Random(16)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, 12)))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert _stream(redactor, chunks) == whole


def test_nested_and_overlapping_secrets_never_come_out_whole_or_in_part() -> None:
    """Random secrets over a small alphabet (so they overlap, share prefixes and contain each
    other), random texts and random chunkings: no secret, and no part of one cut off by a
    chunk boundary, survives."""
    rng = random.Random(6)
    for _ in range(400):
        alphabet = "abcs-"
        secrets = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 12)))
            for _ in range(rng.randint(1, 3))
        ]
        redactor = Redactor([Secret(s, f"S{i}") for i, s in enumerate(secrets)])
        text = "".join(rng.choice(alphabet + "\n") for _ in range(rng.randint(0, 120)))
        for secret in secrets:
            at = rng.randint(0, len(text))
            text = text[:at] + secret + text[at:]
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 20))))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        out = _stream(redactor, chunks)
        # what is left of the text between the markers is never a secret
        for piece in out.split("]"):
            piece = piece.split("[redacted")[0]
            assert not any(s in piece for s in redactor.markers), (secrets, text, chunks, out)


def test_settled_text_stops_before_a_possible_start_of_a_secret() -> None:
    redactor = Redactor([Secret(ENV_KEY, "K")])
    assert redactor.settled("hello sk-an") == "hello "
    assert redactor.settled(f"a {ENV_KEY} b") == "a [redacted: K] b"
    assert redactor.settled("plain text") == "plain text"


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "OPENAI_APIKEY",
        "GITHUB_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "CLIENT_SECRET",
        "PGPASSWORD",
        "DB_PASSWD",
        "GPG_PASSPHRASE",
        "SLACK_BOT_TOKEN",
        "STRIPE_KEY",
        "GITHUB_PAT",
        "EXA_API_KEY",
        "SRC_ACCESS_TOKEN",
    ],
)
def test_names_of_secret_variables(name: str) -> None:
    assert secret_env_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "HOOKCODE_PROC_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "SSH_AUTH_SOCK",
        "AWS_ACCESS_KEY_ID",
        "MAX_TOKENS",
        "TOKENIZERS_PARALLELISM",
        "KEYBOARD_LAYOUT",
        "GIT_ASKPASS",
    ],
)
def test_names_of_ordinary_variables(name: str) -> None:
    assert not secret_env_name(name)


def test_names_of_secret_config_keys() -> None:
    for key in ("Authorization", "api_key", "apiKey", "x-api-key", "token", "access_token"):
        assert secret_key_name(key), key
    for key in ("client_secret", "password", "private_key", "refresh_token", "Cookie"):
        assert secret_key_name(key), key
    for key in ("api_key_env", "token_type", "max_tokens", "base_url", "model", "key_file"):
        assert not secret_key_name(key), key


# ---------------------------------------------------------------------------------------------
# the secrets of a runtime
# ---------------------------------------------------------------------------------------------


class CustomAuth:
    """A provider plugin whose key lives in a variable no naming rule would catch."""

    @hookimpl
    def auth(self, config: Any) -> list[AuthMethod]:
        return [AuthMethod("custom", "env", "custom key", ["CUSTOM_PROVIDER_CREDENTIAL"])]


def write_user_config(hookcode_env: Any, text: str) -> None:
    # user-level config: always trusted, so its headers count whatever the project is
    hookcode_env.write_config(text, where="global")


def test_a_runtime_knows_the_secrets_of_every_source(hookcode_env: Any) -> None:
    hookcode_env.register(CustomAuth(), "custom_auth")
    write_user_config(
        hookcode_env,
        "[provider.corp]\n"
        'base_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "CORP_LLM"\n'
        f'headers = {{ Authorization = "Bearer {HEADER_TOKEN}", X-Title = "hookcode-title" }}\n'
        "[mcp.docs]\n"
        'url = "http://127.0.0.1:9/mcp"\n'
        'headers = { X-Api-Key = "mcp-header-value-123" }\n'
        "[mcp.local]\n"
        'command = ["true"]\n'
        'environment = { SERVICE_TOKEN = "mcp-env-token-456", LOG_LEVEL = "debug-verbose" }\n',
    )
    rt = hookcode_env.runtime(
        ANTHROPIC_API_KEY=ENV_KEY,
        CUSTOM_PROVIDER_CREDENTIAL="custom-credential-789",
        CORP_LLM="corp-llm-key-0001",
        MY_SERVICE_PASSWORD="service-password-1",
        SHORT_TOKEN="abc1234",
        HOOKCODE_PROC_TOKEN="0123456789abcdef",
        EDITOR="nano-editor-value",
    )
    rt.credentials.set("openai", STORED_KEY)
    (hookcode_env.data_dir / "mcp-auth.json").write_text(
        json.dumps(
            {
                "docs": {
                    "serverUrl": "http://127.0.0.1:9/mcp",
                    "tokens": {
                        "access_token": MCP_TOKEN,
                        "refresh_token": "mcp-refresh-Rr55Tt",
                        "token_type": "Bearer",
                    },
                    "clientInfo": {"client_id": "public-client-id", "client_secret": "cs-9988776"},
                }
            }
        )
    )
    rt.secrets.invalidate()
    known = {s.value: s.source for s in rt.secrets.known()}
    assert known[ENV_KEY] == "ANTHROPIC_API_KEY"
    assert known["custom-credential-789"] == "CUSTOM_PROVIDER_CREDENTIAL"  # the auth hook's
    assert known["corp-llm-key-0001"] == "CORP_LLM"  # named by api_key_env
    assert known["service-password-1"] == "MY_SERVICE_PASSWORD"
    assert known[STORED_KEY] == "auth.json openai"
    assert known[MCP_TOKEN] == known["mcp-refresh-Rr55Tt"] == "mcp-auth.json docs"
    assert known["cs-9988776"] == "mcp-auth.json docs"
    source = "config provider.corp.headers.Authorization"
    assert known[f"Bearer {HEADER_TOKEN}"] == known[HEADER_TOKEN] == source
    assert "hookcode-title" not in known  # X-Title never carries a credential
    assert known["mcp-header-value-123"] == "config mcp.docs.headers.X-Api-Key"
    assert known["mcp-env-token-456"] == "config mcp.local.environment.SERVICE_TOKEN"
    for ordinary in (
        "abc1234",  # too short
        "0123456789abcdef",  # hookcode's process tag
        "nano-editor-value",
        "debug-verbose",
        "public-client-id",
        "http://127.0.0.1:9/mcp",
        "CORP_LLM",  # a variable's name, not a secret
    ):
        assert ordinary not in known, ordinary


def test_a_login_is_redacted_from_then_on(hookcode_env: Any, monkeypatch: Any) -> None:
    # the files are looked at on every use here (by default: at most twice a second)
    monkeypatch.setattr("hookcode.secrets.RECHECK_SECONDS", 0.0)
    hookcode_env.register(ReplyWith("once"), "front_end")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules,tool_bash")
    echo = {"command": f"echo {STORED_KEY}", "description": "echo"}
    assert STORED_KEY in invoke_tool(rt, "bash", echo).result.output
    rt.credentials.set("openai", STORED_KEY)  # `hookcode auth login` in this process
    assert invoke_tool(rt, "bash", echo).result.output.strip() == "[redacted: auth.json openai]"
    # another process's login: seen at the next look at the file
    other = "other-process-key-42"
    data = json.loads((hookcode_env.data_dir / "auth.json").read_text())
    data["anthropic"] = {"type": "api", "key": other}
    (hookcode_env.data_dir / "auth.json").write_text(json.dumps(data))
    echo = {"command": f"echo {other}", "description": "echo"}
    assert invoke_tool(rt, "bash", echo).result.output.strip() == (
        "[redacted: auth.json anthropic]"
    )


# ---------------------------------------------------------------------------------------------
# nothing stored: bash through the pipeline, the store and its WAL, the spill file, the audit
# ---------------------------------------------------------------------------------------------

# the env key split over two writes with a pause: two reads, two chunks for the stream
STRADDLE = (
    "head -c 60000 /dev/zero | tr '\\0' a; echo; "
    'printf "%s" "${ANTHROPIC_API_KEY:0:17}"; sleep 0.3; printf "%s\\n" "${ANTHROPIC_API_KEY:17}"; '
    'cat "$HOOKCODE_DATA_DIR/auth.json"; printf "%s\\n" "$SHORT_API_KEY"; '
    "head -c 60000 /dev/zero | tr '\\0' b; echo; printenv ANTHROPIC_API_KEY"
)


def data_bytes(data_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in data_dir.rglob("*") if p.is_file()}


def test_a_bash_call_printing_keys_leaves_them_nowhere(hookcode_env: Any) -> None:
    hookcode_env.register(ReplyWith("once"), "front_end")
    rt = hookcode_env.runtime(
        HOOKCODE_LOAD_PLUGINS="policy_rules,policy_shell,tool_bash,audit",
        ANTHROPIC_API_KEY=ENV_KEY,
        SHORT_API_KEY="k3y-7ch",  # 7 characters: not treated as a secret
    )
    rt.credentials.set("openai", STORED_KEY)
    outcome = invoke_tool(rt, "bash", {"command": STRADDLE, "description": "print keys"})
    assert outcome.ok, outcome.error_text
    result = outcome.result
    # the model's view: head and tail, the last line redacted; the short value as it was
    assert result.output.rstrip().endswith("[redacted: ANTHROPIC_API_KEY]")
    assert result.metadata["truncated"] is True
    for text in (result.output, json.dumps(result.metadata)):
        assert ENV_KEY not in text and STORED_KEY not in text
    spill = Path(result.metadata["outputPath"])
    content = spill.read_text()
    assert ENV_KEY not in content and STORED_KEY not in content
    assert ENV_KEY[:17] not in content  # the half that came first is not left behind
    assert content.count("[redacted: ANTHROPIC_API_KEY]") == 2
    assert '"key": "[redacted: auth.json openai]"' in content
    assert "}k3y-7ch\n" in content  # auth.json ends without a newline

    # the store, its WAL and everything else in the data directory, read as raw bytes while
    # the connection is open (the WAL is not checkpointed yet)
    db = hookcode_env.data_dir / "hookcode.db"
    wal = Path(f"{db}-wal")
    assert wal.exists() and wal.stat().st_size > 0
    found = data_bytes(hookcode_env.data_dir)
    for name, data in found.items():
        if name == "auth.json":
            continue  # where the stored key lives
        assert ENV_KEY.encode() not in data, name
        assert STORED_KEY.encode() not in data, name
    part = rt.store.get_tool_part(outcome.call.call_id)
    assert part.output == result.output and ENV_KEY not in json.dumps(part.metadata)
    audit = (hookcode_env.data_dir / "audit.jsonl").read_text()
    assert "[redacted: ANTHROPIC_API_KEY]" in audit

    # modes: the directory and everything written in it are private
    data_dir = hookcode_env.data_dir
    assert mode(data_dir) == 0o700  # made 0755 by the test kit: tightened
    assert mode(data_dir / "tool-output") == 0o700
    for path in (
        db,
        wal,
        Path(f"{db}-shm"),
        spill,
        data_dir / "auth.json",
        data_dir / "audit.jsonl",
    ):
        assert mode(path) == 0o600, path
    rt.close()
    assert ENV_KEY.encode() not in db.read_bytes()


@tool
def leaky(ctx: ToolContext, fail: bool = False, note: str = "") -> ToolResult:
    """Says the key in its title, output and metadata, or fails with it."""
    key = ctx.runtime.env["ANTHROPIC_API_KEY"]
    if fail:
        raise ToolError(f"the server refused key {key}")
    return ToolResult(output=f"using {key}", title=f"key {key}", metadata={"nested": [key]})


class LeakyPack:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(leaky)


class AfterHook:
    """What an after hook sees of the result."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def tool_execute_after(self, call: Any, result: ToolResult, ctx: Any) -> None:
        self.seen.append(result.output + result.title + json.dumps(result.metadata))


def test_results_errors_and_hooks_see_the_same_redacted_text(hookcode_env: Any) -> None:
    hookcode_env.register(LeakyPack(), "leaky_pack")
    after = hookcode_env.register(AfterHook(), "after")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", ANTHROPIC_API_KEY=ENV_KEY)
    marker = "[redacted: ANTHROPIC_API_KEY]"
    ok = invoke_tool(rt, "leaky", {})
    assert ok.result.output == f"using {marker}" and ok.result.title == f"key {marker}"
    assert ok.result.metadata["nested"] == [marker]
    assert ENV_KEY not in after.seen[0] and marker in after.seen[0]  # type: ignore[attr-defined]
    failed = invoke_tool(rt, "leaky", {"fail": True})
    assert failed.error_text == f"the server refused key {marker}"
    stored = rt.store.get_tool_part(failed.call.call_id)
    assert stored.error == failed.error_text
    rt.close()
    assert ENV_KEY.encode() not in (hookcode_env.data_dir / "hookcode.db").read_bytes()


def test_a_pasted_key_and_the_model_repeating_it_are_stored_redacted(hookcode_env: Any) -> None:
    """The user pastes a key into the message; the model repeats it in its reasoning, its
    text and a call's arguments: the stored session (title included) has the marker only;
    the tool itself got the arguments as the model wrote them."""
    model = ScriptedModel(
        [
            Turn(
                reasoning=f"the user gave {ENV_KEY}",
                text=f"I will use {ENV_KEY}",
                # the arguments the model writes carry the key too (stored, and streamed raw)
                tool_calls=[ToolCallSpec("leaky", {"note": f"key {ENV_KEY}"})],
            ),
            Turn(text=f"done with {ENV_KEY[:20]}…{ENV_KEY[20:]} and {ENV_KEY}"),
        ],
        id="script",
    )

    class Pack(LeakyPack):
        @hookimpl
        def provider(self) -> list[Any]:
            return [model]

    hookcode_env.register(Pack(), "pack")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", ANTHROPIC_API_KEY=ENV_KEY)
    result = asyncio.run(run_session(rt, f"my key is {ENV_KEY} please", model="script/x"))
    assert result.error is None
    session = rt.store.get_session(result.session_id)
    assert session.title == "my key is [redacted: ANTHROPIC_API_KEY] please"
    stored = json.dumps(rt.store.messages(result.session_id))
    assert ENV_KEY not in stored and stored.count("[redacted: ANTHROPIC_API_KEY]") >= 5
    [outcome] = result.outcomes
    assert outcome.call.args["note"] == f"key {ENV_KEY}"
    wal = hookcode_env.data_dir / "hookcode.db-wal"
    assert ENV_KEY.encode() not in wal.read_bytes()
    rt.close()
    assert ENV_KEY.encode() not in (hookcode_env.data_dir / "hookcode.db").read_bytes()


class SlowKeyStream:
    """A provider streaming the key in two deltas with a pause between them longer than the
    loop's save interval, in its text and in a call's raw input: the loop stores the growing
    part in the middle of the key."""

    id = "slow"
    name = "slow"

    def models(self) -> list[Any]:
        return []

    async def stream(self, request: Any) -> Any:
        if any(m.role == "tool" for m in request.messages):
            yield TextDelta("ok")
            yield Finish("stop", Usage())
            return
        pause = SAVE_INTERVAL + 0.1
        yield TextDelta(f"part one {ENV_KEY[:10]}")
        await asyncio.sleep(pause)
        yield TextDelta(f"{ENV_KEY[10:]} end")
        yield ToolCallStart("c1", "leaky")
        yield ToolInputDelta("c1", '{"note": "' + ENV_KEY[:10])
        await asyncio.sleep(pause)
        yield ToolInputDelta("c1", ENV_KEY[10:20])  # stored now: the key is not whole yet
        yield ToolInputDelta("c1", ENV_KEY[20:] + '"}')
        yield ToolCallEnd("c1", "leaky", {"note": ENV_KEY})
        yield Finish("tool-calls", Usage())


def test_a_key_streamed_in_pieces_is_never_stored_in_part(hookcode_env: Any) -> None:
    class Pack(LeakyPack):
        @hookimpl
        def provider(self) -> list[Any]:
            return [SlowKeyStream()]

    hookcode_env.register(Pack(), "pack")
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="policy_rules", ANTHROPIC_API_KEY=ENV_KEY)
    result = asyncio.run(run_session(rt, "go", model="slow/x"))
    assert result.error is None
    texts = [
        p.get("text")
        for m in rt.store.messages(result.session_id)
        for p in m["parts"]
        if p["type"] == "text"
    ]
    assert "part one [redacted: ANTHROPIC_API_KEY] end" in texts
    # every version written (the WAL keeps them all): no key, and not its first half either
    wal = (hookcode_env.data_dir / "hookcode.db-wal").read_bytes()
    assert b"part one " in wal
    assert ENV_KEY[:10].encode() not in wal
    rt.close()
    assert ENV_KEY[:10].encode() not in (hookcode_env.data_dir / "hookcode.db").read_bytes()


# ---------------------------------------------------------------------------------------------
# through the CLI: exports and config show
# ---------------------------------------------------------------------------------------------


def hookcode(hookcode_env: Any, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookcode", "-C", str(hookcode_env.project), *args],
        capture_output=True,
        text=True,
        env={**hookcode_env.env, **env},
        timeout=120,
    )


def test_sessions_export_and_show_carry_no_secret(hookcode_env: Any) -> None:
    script = hookcode_env.root / "script.json"
    command = 'printenv ANTHROPIC_API_KEY; cat "$HOOKCODE_DATA_DIR/auth.json"; echo later-key-0042'
    script.write_text(
        json.dumps(
            [
                {
                    "text": f"repeating {ENV_KEY}",
                    "tool_calls": [
                        {"name": "bash", "args": {"command": command, "description": "keys"}}
                    ],
                },
                "done",
            ]
        )
    )
    env = {"ANTHROPIC_API_KEY": ENV_KEY}
    login = subprocess.run(
        [sys.executable, "-m", "hookcode", "auth", "login", "openai", "--key-stdin"],
        input=STORED_KEY,
        capture_output=True,
        text=True,
        env={**hookcode_env.env, **env},
        timeout=120,
    )
    assert login.returncode == 0, login.stderr
    run = hookcode(
        hookcode_env,
        "run",
        "--model",
        "scripted/x",
        "--script",
        str(script),
        "--yes",
        f"my key: {ENV_KEY} later-key-0042",
        **env,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    listed = hookcode(hookcode_env, "sessions", "list", "--json", **env)
    [session] = json.loads(listed.stdout)
    # a value that becomes a secret after it was stored is redacted from exports too
    later = subprocess.run(
        [sys.executable, "-m", "hookcode", "auth", "login", "anthropic", "--key-stdin"],
        input="later-key-0042",
        capture_output=True,
        text=True,
        env={**hookcode_env.env, **env},
        timeout=120,
    )
    assert later.returncode == 0, later.stderr
    exported = hookcode(hookcode_env, "sessions", "export", session["id"], **env)
    shown = hookcode(hookcode_env, "sessions", "show", session["id"], "--json", **env)
    text = hookcode(hookcode_env, "sessions", "show", session["id"], **env)
    relisted = hookcode(hookcode_env, "sessions", "list", "--json", **env)
    listed_text = hookcode(hookcode_env, "sessions", "list", **env)
    for out in (exported, shown, text, relisted, listed_text):
        assert out.returncode == 0, out.stderr
        assert ENV_KEY not in out.stdout and STORED_KEY not in out.stdout
        assert "later-key-0042" not in out.stdout
    data = json.loads(exported.stdout)
    title = "my key: [redacted: ANTHROPIC_API_KEY] [redacted: auth.json anthropic]"
    assert data["session"]["title"] == title
    assert json.loads(relisted.stdout)[0]["title"] == title
    assert "[redacted: auth.json openai]" in exported.stdout
    assert "[redacted: auth.json anthropic]" in exported.stdout


def test_config_show_masks_secret_values(hookcode_env: Any) -> None:
    write_user_config(
        hookcode_env,
        "[provider.corp]\n"
        'base_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "CORP_LLM"\n'
        'name = "corp-llm-key-0001 model"\n'
        f'headers = {{ Authorization = "Bearer {HEADER_TOKEN}", X-Title = "hookcode" }}\n'
        "[mcp.local]\n"
        'command = ["true"]\n'
        'environment = { SERVICE_TOKEN = "mcp-env-token-456", LOG_LEVEL = "debug" }\n',
    )
    env = {"CORP_LLM": "corp-llm-key-0001"}
    shown = hookcode(hookcode_env, "config", "show", **env)
    as_json = hookcode(hookcode_env, "config", "show", "--json", **env)
    for out in (shown, as_json):
        assert out.returncode == 0, out.stderr
        for secret in (HEADER_TOKEN, "mcp-env-token-456", "corp-llm-key-0001"):
            assert secret not in out.stdout
    data = json.loads(as_json.stdout)
    corp = data["provider"]["corp"]
    assert corp["headers"] == {"Authorization": MASK, "X-Title": MASK}
    assert corp["api_key_env"] == "CORP_LLM"  # a variable's name is no secret
    assert corp["name"] == "[redacted: CORP_LLM] model"  # a known secret anywhere
    assert data["mcp"]["local"]["environment"] == {"SERVICE_TOKEN": MASK, "LOG_LEVEL": "debug"}
    assert '"Authorization": "****"' in shown.stdout
    # the schema and its docs are unaffected
    schema = hookcode(hookcode_env, "config", "schema")
    assert schema.returncode == 0 and MASK not in schema.stdout


def test_mask_config_by_key_and_by_known_secret() -> None:
    data = {
        "provider": {"x": {"headers": {"A": "1"}, "api_key": "v", "note": "has sk-ABCDEFGH12"}},
        "list": [{"password": "p"}],
        "empty": {"token": ""},
    }
    masked = mask_config(data, Redactor([Secret("sk-ABCDEFGH12", "K")]).redact)
    assert masked == {
        "provider": {"x": {"headers": {"A": MASK}, "api_key": MASK, "note": "has [redacted: K]"}},
        "list": [{"password": MASK}],
        "empty": {"token": ""},
    }


# ---------------------------------------------------------------------------------------------
# the data directory's modes
# ---------------------------------------------------------------------------------------------


def test_an_existing_loose_data_directory_is_tightened(hookcode_env: Any, tmp_path: Path) -> None:
    data = hookcode_env.data_dir
    os.chmod(data, 0o755)
    (data / "tool-output").mkdir(mode=0o755)
    old = data / "tool-output" / "tool_0123456789abcdef"
    old.write_text("old output\n")
    os.chmod(old, 0o644)
    (data / "plans").mkdir(mode=0o777)
    os.chmod(data / "plans", 0o777)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours\n")
    os.chmod(outside, 0o644)
    (data / "link").symlink_to(outside)
    rt = hookcode_env.runtime(HOOKCODE_LOAD_PLUGINS="")
    rt.store  # noqa: B018 - opening the store secures the data directory
    assert mode(data) == 0o700
    assert mode(data / "tool-output") == mode(data / "plans") == 0o700
    assert mode(old) == 0o600
    assert mode(outside) == 0o644  # a link inside is not followed
    for name in ("hookcode.db", "hookcode.db-wal", "hookcode.db-shm"):
        if (data / name).exists():
            assert mode(data / name) == 0o600, name


def test_a_fresh_data_directory_is_created_private(hookcode_env: Any, tmp_path: Path) -> None:
    data = tmp_path / "deep" / "new-data"
    hookcode_env.register(ReplyWith("once"), "front_end")
    rt = hookcode_env.runtime(
        HOOKCODE_LOAD_PLUGINS="policy_rules,tool_bash", HOOKCODE_DATA_DIR=str(data)
    )
    long = {"command": "seq 1 30000", "description": "long"}
    outcome = invoke_tool(rt, "bash", long)
    assert outcome.ok and outcome.result.metadata["truncated"]
    assert mode(data) == mode(data / "tool-output") == 0o700
    assert mode(Path(outcome.result.metadata["outputPath"])) == 0o600
    for name in ("hookcode.db", "hookcode.db-wal", "hookcode.db-shm"):
        assert mode(data / name) == 0o600, name
