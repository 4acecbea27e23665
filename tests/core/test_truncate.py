"""The truncation layer (reference/truncation.md): the string path against a literal reading of
§2, the streaming path against the string path, spill files, hints and cleanup."""

from __future__ import annotations

import random
import re
import time
import tracemalloc
from pathlib import Path

import pytest
from hookcode.ids import new_id
from hookcode.truncate import (
    CLEANUP_EVERY,
    DEFAULT_ADVICE,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    DEFAULT_SPILL_MAX,
    RETENTION_SECONDS,
    Direction,
    StreamingOutput,
    Truncated,
    Truncator,
    hint_text,
)

FIRST = "The tool call succeeded but the output was truncated. Full output saved to: "
TASK = (
    "Use the Task tool to have the explore agent search this file with Grep and Read "
    "(offset/limit) instead of reading it whole."
)
PLAIN = "Use Grep to search the full content, or Read with offset/limit to view parts of it."
DIRECTIONS: list[Direction] = ["head", "tail", "both"]
# multi-byte characters (2 and 4 bytes), CR for CRLF, and empty lines via repeated "\n"
ALPHABET = ["a", "b", "x", " ", "\n", "\n", "\r\n", "é", "😀", "\r"]


def _nb(text: str) -> int:
    return len(text.encode("utf-8"))


def reference(
    text: str, max_lines: int, max_bytes: int, direction: Direction, hint: str
) -> str | None:
    """§2 read literally on the whole split text (None: not truncated); "both" as specified:
    half budgets, the tail paying a newline before each kept line and never reaching the head."""
    lines = text.split("\n")
    total_bytes = _nb(text)
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return None

    def head(n_lines: int, n_bytes: int) -> tuple[list[str], int, bool]:
        out: list[str] = []
        used = 0
        i = 0
        while i < len(lines) and i < n_lines:
            size = _nb(lines[i]) + (1 if i > 0 else 0)
            if used + size > n_bytes:
                return out, used, True
            out.append(lines[i])
            used += size
            i += 1
        return out, used, False

    def tail(n_lines: int, n_bytes: int, stop: int, sep_first: bool) -> tuple[list[str], int, bool]:
        out: list[str] = []
        used = 0
        i = len(lines) - 1
        while i >= stop and len(out) < n_lines:
            size = _nb(lines[i]) + (1 if out or sep_first else 0)
            if used + size > n_bytes:
                return out, used, True
            out.insert(0, lines[i])
            used += size
            i -= 1
        return out, used, False

    def removed(hit: bool, kept_lines: int, kept_bytes: int) -> str:
        if hit:
            return f"{total_bytes - kept_bytes} bytes"
        return f"{len(lines) - kept_lines} lines"

    if direction == "head":
        out, used, hit = head(max_lines, max_bytes)
        return "\n".join(out) + f"\n\n...{removed(hit, len(out), used)} truncated...\n\n{hint}"
    if direction == "tail":
        out, used, hit = tail(max_lines, max_bytes, 0, False)
        return f"...{removed(hit, len(out), used)} truncated...\n\n{hint}\n\n" + "\n".join(out)
    h, h_used, h_hit = head(max_lines // 2, max_bytes // 2)
    t, t_used, t_hit = tail(max_lines // 2, max_bytes // 2, len(h), True)
    assert len(h) + len(t) < len(lines), "head and tail met"
    gap = removed(h_hit or t_hit, len(h) + len(t), h_used + t_used)
    return "\n".join(h) + f"\n\n...{gap} truncated...\n\n{hint}\n\n" + "\n".join(t)


def random_text(rng: random.Random, n_chars: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n_chars))


def text_of_bytes(rng: random.Random, n_bytes: int) -> str:
    """Random text of exactly ``n_bytes`` UTF-8 bytes."""
    parts: list[str] = []
    size = 0
    while size < n_bytes - 4:
        ch = rng.choice(ALPHABET)
        parts.append(ch)
        size += _nb(ch)
    return "".join(parts) + "a" * (n_bytes - size)


def text_of_lines(rng: random.Random, n_lines: int) -> str:
    """Random text of exactly ``n_lines`` lines (n_lines - 1 newlines), short lines."""
    pieces = ("", "ab", "é😀", "x\r", "hello world")
    return "\n".join(rng.choice(pieces) for _ in range(n_lines))


def chunkings(rng: random.Random, data: bytes, count: int) -> list[list[bytes | str]]:
    """``count`` random splits of ``data`` at arbitrary byte offsets (inside characters too),
    with empty chunks, and clean pieces sometimes given as str."""
    result: list[list[bytes | str]] = [[data], [data[i : i + 1] for i in range(len(data))]]
    for _ in range(count):
        cuts = sorted(rng.randint(0, len(data)) for _ in range(rng.randint(0, 40)))
        chunks: list[bytes | str] = []
        start = 0
        for cut in [*cuts, len(data)]:
            piece = data[start:cut]
            start = cut
            if rng.random() < 0.3:
                try:
                    chunks.append(piece.decode("utf-8"))
                    continue
                except UnicodeDecodeError:
                    pass
            chunks.append(piece)
        result.append(chunks)
    return result


def stream(truncator: Truncator, chunks: list[bytes | str], **kwargs: object) -> Truncated:
    with truncator.writer(**kwargs) as out:  # type: ignore[arg-type]
        for chunk in chunks:
            out.write(chunk)
    return out.finish()


def shown(result: Truncated) -> str:
    """The content with the spill path replaced, so two results can be compared."""
    if result.output_path is None:
        return result.content
    return result.content.replace(str(result.output_path), "<PATH>")


@pytest.fixture
def truncator(tmp_path: Path) -> Truncator:
    return Truncator(tmp_path / "data")


# §2 examples ------------------------------------------------------------------------------


def test_hundred_lines_max_ten(truncator: Truncator) -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    result = truncator.truncate(text, max_lines=10)
    assert result.truncated
    assert result.output_path is not None
    assert result.output_path.parent == truncator.spill_dir
    assert result.output_path.name.startswith("tool_")
    kept = "\n".join(f"line {i}" for i in range(10))
    hint = hint_text(result.output_path)
    assert result.content == f"{kept}\n\n...90 lines truncated...\n\n{hint}"
    assert result.output_path.read_text(encoding="utf-8") == text
    assert (result.total_lines, result.total_bytes) == (100, _nb(text))


def test_one_long_line_keeps_nothing(truncator: Truncator) -> None:
    text = "x" * 61440
    result = truncator.truncate(text)
    assert result.output_path is not None
    hint = hint_text(result.output_path)
    assert result.content == f"\n\n...61440 bytes truncated...\n\n{hint}"
    assert result.output_path.read_text(encoding="utf-8") == text


def test_seq_2500_keeps_2000_lines_and_spills_all(truncator: Truncator) -> None:
    text = "".join(f"{i}\n" for i in range(1, 2501))
    result = truncator.truncate(text)
    assert result.truncated and result.output_path is not None
    assert result.total_lines == 2501  # the trailing newline adds one empty line
    kept, _, rest = result.content.partition("\n\n")
    assert kept.split("\n") == [str(i) for i in range(1, 2001)]
    assert rest.startswith("...501 lines truncated...\n\n" + FIRST)
    assert result.output_path.read_text(encoding="utf-8").split() == [
        str(i) for i in range(1, 2501)
    ]


def test_small_output_untouched_no_file(truncator: Truncator) -> None:
    result = truncator.truncate("hello\n")
    assert result == Truncated("hello\n", False, None, 2, 6)
    assert not truncator.spill_dir.exists()


def test_exactly_at_both_limits_is_untouched(truncator: Truncator) -> None:
    text = "\n".join(["abc"] * DEFAULT_MAX_LINES)
    assert truncator.truncate(text).truncated is False
    text = "é" * (DEFAULT_MAX_BYTES // 2)
    assert truncator.truncate(text).truncated is False
    assert truncator.truncate(text + "a").truncated is True


# formats --------------------------------------------------------------------------------


def test_tail_format(truncator: Truncator) -> None:
    text = "\n".join(str(i) for i in range(100))
    result = truncator.truncate(text, max_lines=10, direction="tail")
    assert result.output_path is not None
    hint = hint_text(result.output_path)
    kept = "\n".join(str(i) for i in range(90, 100))
    assert result.content == f"...90 lines truncated...\n\n{hint}\n\n{kept}"


def test_tail_by_bytes(truncator: Truncator) -> None:
    text = "\n".join(["y" * 100] * 10)  # 1009 bytes
    result = truncator.truncate(text, max_bytes=350, direction="tail")
    assert result.output_path is not None
    hint = hint_text(result.output_path)
    # 100 + 101 + 101 = 302 bytes fit, a fourth line would make 403
    kept = "\n".join(["y" * 100] * 3)
    assert result.content == f"...{1009 - 302} bytes truncated...\n\n{hint}\n\n{kept}"


def test_both_format(truncator: Truncator) -> None:
    lines = [f"row {i}" for i in range(100)]
    text = "\n".join(lines)
    result = truncator.truncate(text, max_lines=10, direction="both", advice=TASK)
    assert result.output_path is not None
    hint = hint_text(result.output_path, TASK)
    head = "\n".join(lines[:5])
    tail = "\n".join(lines[95:])
    assert result.content == f"{head}\n\n...90 lines truncated...\n\n{hint}\n\n{tail}"
    assert result.content.count("truncated...") == 1
    assert result.content.count(FIRST) == 1
    for i in range(5, 95):
        assert f"row {i}\n" not in result.content + "\n"
    assert result.output_path.read_text(encoding="utf-8") == text


def test_both_by_bytes(truncator: Truncator) -> None:
    text = "\n".join(["z" * 100] * 20)  # 2019 bytes
    result = truncator.truncate(text, max_bytes=1000, direction="both")
    assert result.output_path is not None
    hint = hint_text(result.output_path)
    # head: 100 + 3 * 101 = 403 <= 500; tail pays a newline per line: 4 * 101 = 404 <= 500
    head = "\n".join(["z" * 100] * 4)
    tail = "\n".join(["z" * 100] * 4)
    removed = 2019 - 403 - 404
    assert result.content == f"{head}\n\n...{removed} bytes truncated...\n\n{hint}\n\n{tail}"


def test_both_never_duplicates_at_the_edge(truncator: Truncator) -> None:
    # 11 bytes for a budget of 10: each half would fit one line on its own
    result = truncator.truncate("aaaaa\nbbbbb", max_bytes=10, direction="both")
    assert result.output_path is not None
    hint = hint_text(result.output_path)
    assert result.content == f"aaaaa\n\n...6 bytes truncated...\n\n{hint}\n\n"


def test_hint_texts() -> None:
    assert hint_text("/d/tool_x") == f"{FIRST}/d/tool_x\n{PLAIN}"
    assert hint_text(Path("/d/tool_x"), TASK) == f"{FIRST}/d/tool_x\n{TASK}"
    assert "Grep" in hint_text("p", TASK) and "Grep" in hint_text("p")
    assert "Task tool" not in hint_text("p")
    assert DEFAULT_ADVICE == PLAIN


def test_advice_reaches_the_content(truncator: Truncator) -> None:
    text = "x\n" * 50
    assert TASK in truncator.truncate(text, max_lines=5, advice=TASK).content
    assert PLAIN in truncator.truncate(text, max_lines=5).content
    with truncator.writer(max_lines=5, advice=TASK) as out:
        out.write(text)
    assert TASK in out.finish().content


def test_advice_given_as_a_function_is_asked_only_for_a_cut(truncator: Truncator) -> None:
    asked: list[int] = []

    def advice() -> str | None:
        asked.append(1)
        return None if len(asked) > 1 else TASK

    assert not truncator.truncate("short", max_lines=5, advice=advice).truncated
    assert asked == []
    assert TASK in truncator.truncate("x\n" * 50, max_lines=5, advice=advice).content
    assert PLAIN in truncator.truncate("x\n" * 50, max_lines=5, advice=advice).content
    assert len(asked) == 2


def test_bad_arguments(truncator: Truncator) -> None:
    with pytest.raises(ValueError):
        truncator.truncate("x", direction="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        truncator.writer(max_bytes=-1)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_string_path_matches_literal_reading(truncator: Truncator, direction: Direction) -> None:
    rng = random.Random(f"literal-{direction}")
    for _ in range(1500):
        text = random_text(rng, rng.randint(0, 40))
        max_lines, max_bytes = rng.randint(0, 8), rng.randint(0, 30)
        result = truncator.truncate(
            text, max_lines=max_lines, max_bytes=max_bytes, direction=direction
        )
        expected = reference(text, max_lines, max_bytes, direction, hint_text("<PATH>"))
        if expected is None:
            assert result == Truncated(text, False, None, text.count("\n") + 1, _nb(text))
        else:
            assert result.truncated
            assert shown(result) == expected, (text, max_lines, max_bytes)


# streaming ------------------------------------------------------------------------------

MAX_LINES, MAX_BYTES = 40, 600


def sized_text(rng: random.Random, size: str) -> str:
    return {
        "empty": lambda: "",
        "below": lambda: text_of_bytes(rng, MAX_BYTES // 3),
        "lines_at": lambda: text_of_lines(rng, MAX_LINES),
        "lines_over": lambda: text_of_lines(rng, MAX_LINES + 1),
        "bytes_at": lambda: text_of_bytes(rng, MAX_BYTES).replace("\n", "-"),
        "bytes_over": lambda: text_of_bytes(rng, MAX_BYTES + 1).replace("\n", "-"),
        "mixed_over": lambda: text_of_bytes(rng, MAX_BYTES + 7),
        "far_over": lambda: text_of_bytes(rng, MAX_BYTES * 20),
        "one_long_line": lambda: "é" * MAX_BYTES,
    }[size]()


SIZES = [
    "empty",
    "below",
    "lines_at",
    "lines_over",
    "bytes_at",
    "bytes_over",
    "mixed_over",
    "far_over",
    "one_long_line",
]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("size", SIZES)
def test_streaming_equals_string(truncator: Truncator, direction: Direction, size: str) -> None:
    rng = random.Random(f"{direction}-{size}")
    text = sized_text(rng, size)
    budget = {"max_lines": MAX_LINES, "max_bytes": MAX_BYTES, "direction": direction}
    expected = truncator.truncate(text, **budget)  # type: ignore[arg-type]
    for chunks in chunkings(rng, text.encode("utf-8"), 25):
        got = stream(truncator, chunks, **budget)
        assert shown(got) == shown(expected)
        assert (got.truncated, got.total_lines, got.total_bytes) == (
            expected.truncated,
            expected.total_lines,
            expected.total_bytes,
        )
        if expected.truncated:
            assert got.output_path is not None and got.output_path != expected.output_path
            assert got.output_path.read_bytes() == text.encode("utf-8")
        else:
            assert got.output_path is None


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_streaming_equals_string_random_budgets(truncator: Truncator, direction: Direction) -> None:
    rng = random.Random(f"budgets-{direction}")
    for _ in range(300):
        text = random_text(rng, rng.randint(0, 60))
        budget = {
            "max_lines": rng.randint(0, 8),
            "max_bytes": rng.randint(0, 40),
            "direction": direction,
        }
        expected = truncator.truncate(text, **budget)  # type: ignore[arg-type]
        for chunks in chunkings(rng, text.encode("utf-8"), 3):
            assert shown(stream(truncator, chunks, **budget)) == shown(expected)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_streaming_invalid_utf8_is_replaced(truncator: Truncator, direction: Direction) -> None:
    rng = random.Random(f"invalid-{direction}")
    data = b"ok \xff\xfe line\n" * 30 + "é😀\n".encode() * 50 + b"\xe2\x82"  # cut-off sequence
    text = data.decode("utf-8", "replace")
    budget = {"max_lines": 20, "max_bytes": 300, "direction": direction}
    expected = truncator.truncate(text, **budget)  # type: ignore[arg-type]
    for chunks in chunkings(rng, data, 20):
        got = stream(truncator, chunks, **budget)
        assert shown(got) == shown(expected)
        assert got.output_path is not None
        assert got.output_path.read_text(encoding="utf-8") == text


def test_streaming_default_budget(truncator: Truncator) -> None:
    text = "".join(f"{i}\n" for i in range(1, 30001))
    data = text.encode()
    for direction in DIRECTIONS:
        expected = truncator.truncate(text, direction=direction)
        chunks: list[bytes | str] = [data[i : i + 4093] for i in range(0, len(data), 4093)]
        got = stream(truncator, chunks, direction=direction)
        assert shown(got) == shown(expected)
        assert got.output_path is not None
        assert got.output_path.read_bytes() == data


def test_streaming_not_truncated_leaves_no_file(truncator: Truncator) -> None:
    with truncator.writer() as out:
        out.write(b"hel")
        out.write("lo")
        out.write(b"\n")
        assert (out.total_lines, out.total_bytes) == (2, 6)
    assert out.finish() == Truncated("hello\n", False, None, 2, 6)
    assert not truncator.spill_dir.exists()


def test_streaming_spills_once_crossed(truncator: Truncator) -> None:
    out = truncator.writer(max_lines=3)
    out.write("a\nb\n")
    assert out.output_path is None
    out.write("c\nd")
    path = out.output_path
    assert path is not None and path.exists()
    result = out.finish()
    assert result.output_path == path
    assert path.read_text(encoding="utf-8") == "a\nb\nc\nd"


def test_streaming_file_complete_after_exception(truncator: Truncator) -> None:
    data = b"line of output\n" * 5000
    with pytest.raises(RuntimeError), truncator.writer(direction="both") as out:
        out.write(data)
        raise RuntimeError("tool timed out")
    result = out.finish()
    assert result is out.finish()  # idempotent
    assert result.output_path is not None
    assert result.output_path.read_bytes() == data
    with pytest.raises(ValueError):
        out.write(b"more")


def test_preview(truncator: Truncator) -> None:
    out = truncator.writer(direction="tail")
    out.write("ab")
    assert out.preview() == "ab"
    out.write("x" * 40000)
    assert out.preview() == ("ab" + "x" * 40000)[:30000] + "\n\n..."
    assert out.preview(5) == "abxxx\n\n..."
    out.finish()
    exact = truncator.writer()
    exact.write("y" * 30000)
    assert exact.preview() == "y" * 30000
    exact.finish()


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_latest_is_the_newest_text_in_every_direction(
    truncator: Truncator, direction: Direction
) -> None:
    """``latest`` (a live display's tail) keeps the newest LATEST_CHARS characters, redacted,
    whatever window the cut keeps, before and after a limit is crossed."""
    from hookcode.secrets import Redactor, Secret
    from hookcode.truncate import LATEST_CHARS

    redactor = Redactor([Secret("sk-live-0123456789abcdef", "KEY")])
    out = StreamingOutput(truncator, direction=direction, redactor=redactor)
    out.write(b"first\n")
    assert out.latest() == "first\n"
    for n in range(20000):
        out.write(f"{n}\n".encode())
    out.write(b"token sk-live-0123456789abcdef\n")
    latest = out.latest()
    assert len(latest) == LATEST_CHARS
    assert latest.endswith("19999\ntoken [redacted: KEY]\n")
    assert out.latest(12) == latest[-12:]
    with pytest.raises(ValueError, match="at most"):
        out.latest(LATEST_CHARS + 1)
    out.finish()


@pytest.mark.parametrize(
    ("direction", "line"),
    [
        ("head", b"0123456789" * 9 + b"abcdefgh\n"),
        ("tail", b"0123456789" * 9 + b"abcdefgh\n"),
        ("both", b"0123456789" * 9 + b"abcdefgh\n"),
        ("both", "é😀".encode() * 16 + b"\n"),  # the non-ASCII decode/encode path
    ],
    ids=["head", "tail", "both", "both-multibyte"],
)
def test_streaming_memory_is_bounded(
    truncator: Truncator, direction: Direction, line: bytes
) -> None:
    # ~200 MB in 1 MB chunks; only the chunk in hand and O(budget) windows may be live
    chunk = line * (1_048_576 // len(line))
    count = 200
    tracemalloc.start()
    try:
        with truncator.writer(direction=direction) as out:
            for _ in range(count):
                out.write(chunk)
        result = out.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1_048_576, f"peak {peak} bytes"
    assert result.total_bytes == count * len(chunk)
    assert result.output_path is not None
    # the spill file stops at spill_max (100 MB): its head and tail, and what was dropped
    # (cut between characters: a few bytes less with multi-byte ones)
    size = result.output_path.stat().st_size
    with result.output_path.open("rb") as f:
        assert f.read(len(chunk) // 2) == chunk[: len(chunk) // 2]
        f.seek(DEFAULT_SPILL_MAX // 2 - 8)
        middle = f.read(200)
        f.seek(-len(line) * 3, 2)
        assert f.read() == line * 3
    found = re.search(rb"\n\n\[\.\.\. (\d+) bytes dropped here: .*?\.\.\.\]\n\n", middle)
    assert found is not None
    kept = size - len(found.group(0))
    assert DEFAULT_SPILL_MAX - 8 <= kept <= DEFAULT_SPILL_MAX
    assert kept + int(found.group(1)) == count * len(chunk)
    result.output_path.unlink()


# cleanup --------------------------------------------------------------------------------


def _id_at(seconds: float, suffix: str = "abcdef") -> str:
    return f"tool_{int(seconds * 1000):012x}0000{suffix}"


def test_cleanup_by_id_time(truncator: Truncator) -> None:
    now = time.time()
    assert truncator.cleanup(now) == 0  # no spill dir yet
    spill = truncator.spill_dir
    spill.mkdir(parents=True)
    old = [spill / _id_at(now - RETENTION_SECONDS - 60), spill / _id_at(now - 30 * 86400, "123456")]
    new = [spill / _id_at(now - RETENTION_SECONDS + 60), truncator.new_spill_path()]
    foreign = [spill / "notes.txt", spill / "tool_nothex", spill / "other_000000000001"]
    for path in old + new + foreign:
        path.write_text("x")
    (spill / _id_at(now - 30 * 86400, "654321")).mkdir()  # a directory is not a spill file
    assert truncator.cleanup(now) == 2
    assert not any(p.exists() for p in old)
    assert all(p.exists() for p in new + foreign)
    assert (spill / _id_at(now - 30 * 86400, "654321")).is_dir()
    # a shorter retention reaches the newer files too (a moment later: the fresh id may carry
    # the very millisecond `now` was taken in)
    assert truncator.cleanup(time.time() + 1, retention=0) == 2


def test_cleanup_is_due_once_a_day_by_a_marker_any_process_sees(tmp_path: Path) -> None:
    truncator = Truncator(tmp_path)
    now = time.time()
    assert not truncator.cleanup_due(now)  # no spill directory: nothing to clean
    truncator.spill_dir.mkdir()
    assert truncator.cleanup_due(now)  # never cleaned
    old = truncator.spill_dir / _id_at(now - RETENTION_SECONDS - 60)
    old.write_text("x")
    assert truncator.cleanup(now) == 1 and not old.exists()
    other = Truncator(tmp_path)  # another process: the marker says it was done
    assert not other.cleanup_due(now) and not other.cleanup_due(now + CLEANUP_EVERY - 60)
    assert other.cleanup_due(now + CLEANUP_EVERY)
    marker = [p for p in truncator.spill_dir.iterdir() if not p.name.startswith("tool_")]
    assert len(marker) == 1 and (marker[0].stat().st_mode & 0o777) == 0o600


def _spilled(truncator: Truncator, text: str, stream: bool, rng: random.Random) -> str:
    if not stream:
        cut = truncator.truncate(text, max_lines=10, max_bytes=100)
    else:
        writer = truncator.writer(max_lines=10, max_bytes=100)
        data = text.encode()
        at = 0
        while at < len(data):  # chunks of any size, splitting UTF-8 sequences too
            size = rng.choice([1, 3, 7, 64, 333, 1500])
            writer.write(data[at : at + size])
            at += size
        cut = writer.finish()
    assert cut.truncated and cut.output_path is not None
    assert cut.total_bytes == _nb(text)  # what the model is told counts all of it
    return cut.output_path.read_bytes().decode()  # whole UTF-8 sequences only


@pytest.mark.parametrize("stream", [False, True])
def test_a_spill_file_keeps_its_head_and_tail_past_spill_max(tmp_path: Path, stream: bool) -> None:
    rng = random.Random(20)
    truncator = Truncator(tmp_path, spill_max=1000)
    text = "".join(f"line {i}\n" for i in range(1000))  # 8,890 bytes
    spilled = _spilled(truncator, text, stream, rng)
    dropped = len(text) - 1000
    assert spilled == (
        text[:500]
        + f"\n\n[... {dropped} bytes dropped here: the output was longer than the spill file's "
        "limit ([truncation] spill_max) ...]\n\n" + text[-500:]
    )
    # no more than the limit: the whole output, nothing said
    short = "".join(f"line {i}\n" for i in range(100))  # 790 bytes, over the model's budget
    assert _spilled(truncator, short, stream, rng) == short
    # the cuts fall between characters, and both ways cut alike
    wide = "".join(rng.choice(["é", "😀", "a", "\n"]) for _ in range(3000))
    kept = _spilled(truncator, wide, stream, rng)
    head, _, tail = kept.partition("\n\n[... ")
    assert wide.startswith(head) and 497 <= _nb(head) <= 500
    tail = tail.split("...]\n\n", 1)[1]
    assert wide.endswith(tail) and 497 <= _nb(tail) <= 500
    assert _spilled(truncator, wide, not stream, rng) == kept
    assert [
        p.name for p in tmp_path.joinpath("tool-output").iterdir() if "tool_" not in p.name
    ] == []


def test_spill_max_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="spill_max"):
        Truncator(tmp_path, spill_max=0)


def test_spill_names_sort_by_creation(truncator: Truncator) -> None:
    names = [truncator.new_spill_path().name for _ in range(50)]
    assert names == sorted(names)
    assert new_id("tool").startswith("tool_")


def test_writer_is_a_streaming_output(truncator: Truncator) -> None:
    assert isinstance(truncator.writer(), StreamingOutput)


# known secrets (hookcode.secrets) -----------------------------------------------------------

KEY = "sk-ant-api03-Zq8XwJ2mVn4Lr7Tb0Yc5"


def _redacting(tmp_path: Path) -> Truncator:
    from hookcode.secrets import Redactor, Secret

    redactor = Redactor([Secret(KEY, "ANTHROPIC_API_KEY")])
    return Truncator(tmp_path / "data", lambda: redactor)


def test_streaming_redacts_a_key_split_at_every_byte(tmp_path: Path) -> None:
    """The key straddles two chunks at every possible place, after the spill file was opened:
    neither the file nor what the model sees holds it, whole or in part."""
    truncator = _redacting(tmp_path)
    before = b"x" * 60_000 + b"\n"
    line = f"key={KEY}\n".encode()
    for cut in range(len(line) + 1):
        out = truncator.writer(direction="both")
        out.write(before)
        out.write(line[:cut])
        out.write(line[cut:])
        out.write(b"y" * 100)
        result = out.finish()
        assert result.output_path is not None
        data = result.output_path.read_text()
        assert data == before.decode() + "key=[redacted: ANTHROPIC_API_KEY]\n" + "y" * 100
        assert KEY[:12] not in result.content
        assert result.total_bytes == len(data)
        result.output_path.unlink()


def test_streaming_holds_back_only_what_could_start_a_key(tmp_path: Path) -> None:
    truncator = _redacting(tmp_path)
    out = truncator.writer()
    out.write("no key here, sk-an")
    assert out.preview() == "no key here, "  # the rest could be the start of the key
    out.write("other text")
    assert out.preview() == "no key here, sk-another text"
    assert out.finish().content == "no key here, sk-another text"


def test_string_truncation_spills_redacted_text(tmp_path: Path) -> None:
    truncator = _redacting(tmp_path)
    text = "\n".join(f"line {i} {KEY}" for i in range(3000))
    cut = truncator.truncate(text, direction="head")
    assert cut.truncated and cut.output_path is not None
    assert KEY not in cut.output_path.read_text() and KEY not in cut.content
    assert cut.content.startswith("line 0 [redacted: ANTHROPIC_API_KEY]\n")
    # under budget: returned as given (the pipeline redacts what it keeps)
    small = f"one {KEY}"
    assert truncator.truncate(small).content == small


def test_spill_files_and_their_directory_are_private(truncator: Truncator) -> None:
    out = truncator.writer(max_lines=1)
    out.write("a\nb\nc\n")
    path = out.finish().output_path
    assert path is not None
    assert path.stat().st_mode & 0o777 == 0o600
    assert truncator.spill_dir.stat().st_mode & 0o777 == 0o700
    assert truncator.spill_dir.parent.stat().st_mode & 0o777 == 0o700  # made by the truncator
    cut = truncator.truncate("x\n" * 3000)
    assert cut.output_path is not None and cut.output_path.stat().st_mode & 0o777 == 0o600
