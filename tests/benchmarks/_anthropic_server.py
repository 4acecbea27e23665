"""A local fake Anthropic endpoint for the benchmarks, in a process of its own (so serving a
large stream never competes with the measured process for its interpreter lock); it answers
the OpenAI-compatible ``/v1/chat/completions`` too, with the text "done".

    python _anthropic_server.py     # prints "PORT\\n", then "REQUEST <monotonic>\\n" per request

The arrival times are ``time.monotonic()``, one clock for every process of the machine, so a
benchmark can tell when a process it started sent its first request.

The wire format is the test suite's (``tests/plugins/fake_anthropic.py``). Replies depend on
the request alone, so any number of runs may use one server:

- a request whose last message answers a tool call: the text "done" (the turn's end);
- model ``write-N@PATH``: one ``write`` call of ``N`` characters of content to ``PATH``, its
  input streamed in 24-character ``input_json_delta`` pieces, as real models stream it;
- any other model: the text "done".

The content's events are rendered once per size, so a repeated run measures the client, not
this server.
"""

from __future__ import annotations

import json
import random
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from fake_anthropic import SSE, Block, message_events, text
from fake_openai import chunk

#: the size of one streamed piece of tool input (what real models send)
PIECE = 24


def content_of(size: int, seed: int = 20) -> str:
    """``size`` characters of source-like text (lines of words), from a fixed seed."""
    rng = random.Random(seed)
    words = ["def", "return", "value", "self", "import", "for", "in", "if", "x", "data", "= 1"]
    out: list[str] = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(2, 12))) + "\n"
        out.append(line)
        total += len(line)
    return "".join(out)[:size]


def _deltas(raw: str) -> str:
    """``raw`` as the SSE text of ``input_json_delta`` events of block 0, PIECE characters each."""
    return "".join(
        "event: content_block_delta\ndata: "
        + json.dumps(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": raw[i : i + PIECE]},
            }
        )
        + "\n\n"
        for i in range(0, len(raw), PIECE)
    )


_MARK = "\x00bench-content\x00"
_content: dict[int, bytes] = {}
_done: bytes | None = None


def write_reply(path: str, size: int) -> bytes:
    """One ``write`` of ``size`` characters to ``path``; the content's events are rendered once
    per size (the path differs per run, so each run writes a new file)."""
    if size not in _content:
        _content[size] = _deltas(json.dumps(content_of(size))[1:-1]).encode()
    head = json.dumps({"filePath": path, "content": ""})[:-2]  # ends inside the open string
    block = Block(
        "tool_use",
        {"type": "tool_use", "id": "toolu_bench_write", "name": "write", "input": {}},
        [
            {"type": "input_json_delta", "partial_json": ""},
            {"type": "input_json_delta", "partial_json": _MARK},
        ],
    )
    rendered = SSE(message_events(block)).render().decode()
    mark = rendered.index(json.dumps(_MARK)[1:-1])
    start = rendered.rindex("event: ", 0, mark)
    end = rendered.index("\n\n", mark) + 2
    return (
        rendered[:start].encode()
        + _deltas(head).encode()
        + _content[size]
        + _deltas('"}').encode()
        + rendered[end:].encode()
    )


def reply_for(body: dict[str, Any]) -> bytes:
    global _done
    messages = body.get("messages") or []
    last = messages[-1].get("content") if messages else None
    answered = isinstance(last, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last
    )
    model = str(body.get("model", ""))
    if answered or not model.startswith("write-"):
        if _done is None:
            _done = SSE(message_events(text("done", chunks=1))).render()
        return _done  # type: ignore[return-value]  # set just above
    size, _, path = model.removeprefix("write-").partition("@")
    return write_reply(path, int(size))


#: the OpenAI-compatible reply: "done", the finish and the usage, then [DONE]
OPENAI_DONE = "".join(
    f"data: {json.dumps(event)}\n\n"
    for event in (
        chunk({"role": "assistant", "content": "done"}),
        chunk(finish="stop"),
        {**chunk(), "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
    )
).encode() + b"data: [DONE]\n\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        print(f"REQUEST {time.monotonic()}", flush=True)
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        data = OPENAI_DONE if self.path.endswith("/chat/completions") else reply_for(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_bench")
        self.end_headers()
        view = memoryview(data)
        for start in range(0, len(data), 1 << 16):
            self.wfile.write(view[start : start + (1 << 16)])


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
