"""The ``grep`` tool: lines matching a regex, files newest first (reference/tools.md §9).

ripgrep searches (``rg --json``: paths and line texts arrive intact whatever they contain, ``|``
included): hidden files included, ``.git`` excluded, ignore files honoured, also for the files
``include`` names (see :func:`hookcode_ripgrep.glob_filter`). Matches are ordered by their file's
modification time, newest first (ties: path order), line order within a file; at most 100 are
shown. Memory stays bounded on huge result sets: only the 100 best matches seen so far are kept
(a heap), every other match is just counted.

The ``read`` rules apply: matches in a file they deny are neither shown nor counted (a denied
file named as ``path`` is refused); a file whose reading asks is not shown either, but one line
names such files (the model can then ``read`` them, which asks). The search root's
``external_directory`` check follows symlinks, dangling ones included.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable
from typing import Annotated, Any

from hookcode import ToolContext, ToolResult, hookimpl, tool
from hookcode.errors import PermissionDenied

LIMIT = 100
MAX_LINE_LENGTH = 2000
#: files named at most in the note on matches that need the read permission
UNREAD_NAMES = 20

DESCRIPTION = """\
- Fast content search tool that works with any codebase size
- Searches file contents using regular expressions
- Supports full regex syntax (eg. "log.*Error", "function\\s+\\w+", etc.)
- Filter files by pattern with the include parameter (eg. "*.js", "*.{ts,tsx}")
- Returns file paths and line numbers with at least one match sorted by modification time
- Hidden files are searched; files ignored by .gitignore and the .git directory are not
- At most 100 matches are shown; use a more specific path, pattern or include when truncated
- Use this tool when you need to find files containing specific patterns
- If you need to identify/count the number of matches within files, use the bash tool with
  `rg` (ripgrep) directly. Do NOT use `grep`.
- When you are doing an open-ended search that may require multiple rounds of globbing and
  grepping, use the task tool instead"""

# a file type of our own: rg filters by it natively and, unlike a --glob, it never overrides
# the ignore files (used for includes that only look at file names)
_INCLUDE_TYPE = "hookcodeinclude"

_DROP, _COUNT, _KEEP = 0, 1, 2  # what happens to the matches of the file being read


@tool(name="grep", description=DESCRIPTION, asks_permission=True)
async def grep(
    ctx: ToolContext,
    pattern: Annotated[str, "The regex pattern to search for in file contents"],
    path: Annotated[
        str | None,
        "The directory (or file) to search in. Defaults to the current working directory.",
    ] = None,
    include: Annotated[
        str | None, 'File pattern to include in the search (e.g. "*.js", "*.{ts,tsx}")'
    ] = None,
) -> ToolResult:
    from hookcode.errors import ToolError
    from hookcode_ripgrep import glob_filter, name_glob, run_lines

    if not pattern:
        raise ToolError("pattern is required")
    await ctx.ask(
        "grep",
        [pattern],
        ["*"],
        metadata={"pattern": pattern, "path": path, "include": include},
    )
    search = ctx.resolve(path) if path else ctx.cwd
    is_file = search.is_file()
    await ctx.ask_external_directory(search, "file" if is_file else "directory")
    if not is_file and not search.is_dir():
        raise ToolError(f"No such file or directory: '{search}'")

    # the read rules: a denied file is never searched; one whose reading asks is named, not
    # shown (rg reports paths relative to `base`; a named file is judged as named, links and all)
    rules = ctx.read_rules()
    judge: Callable[[str], str] | None = None
    if is_file:
        verdict = rules(search)
        if verdict == "deny":
            raise PermissionDenied(f"The read rules deny {search}: grep does not search it.")
        if verdict == "ask":
            judge = lambda _relative: verdict  # noqa: E731
    elif not rules.allows_everything:
        judge = rules.under(search)

    # rg runs in the search directory (for a file: its directory), so the paths it reports and
    # the ones `include` is matched against are relative to it, as for the glob tool
    base = search.parent if is_file else search
    args = ["--json", "--hidden", "--no-messages", "--regexp", pattern]
    match = None
    if include:
        match = glob_filter(include)
        if match is None:  # a negation, or a glob left to rg (which reports its own errors)
            args.append(f"--glob={include}")
        elif (names := name_glob(include)) is not None:
            args += [f"--type-add={_INCLUDE_TYPE}:{names}", f"--type={_INCLUDE_TYPE}"]
        # else: rg searches everything and `match` filters (a --glob would list ignored files)
    args.append("--glob=!.git")  # last, so no include can whitelist it back
    # an explicit file is searched whatever the globs say (rg's rule): `include` does not apply
    args.append("./" + search.name if is_file else ".")

    found = _Matches(str(base), None if is_file else match, judge)
    returncode, stderr = await run_lines(args, found.line, cwd=base, abort=ctx.abort)
    if returncode not in (0, 1, 2) or (returncode == 2 and not found.reported and stderr):
        raise ToolError(f"ripgrep failed: {stderr}")
    partial = returncode == 2

    total = found.total
    unread = sorted(found.unread)
    if returncode == 1 or total == 0:
        output = f"No matches shown: {_unread_note(unread)}" if unread else "No files found"
        metadata: dict[str, Any] = {"matches": 0, "truncated": False}
        if unread:
            metadata["unread"] = len(unread)
        return ToolResult(title=pattern, output=output, metadata=metadata)
    truncated = total > LIMIT
    lines = [f"Found {total} matches" + (f" (showing first {LIMIT})" if truncated else "")]
    current = None
    for _mtime, name, _index, number, text in sorted(found.best, reverse=True):
        if name.value != current:
            if current is not None:
                lines.append("")
            current = name.value
            lines.append(f"{current}:")
        lines.append(f"  Line {number}: {text}")
    if truncated:
        lines += [
            "",
            f"(Results truncated: showing {LIMIT} of {total} matches ({total - LIMIT} hidden). "
            "Consider using a more specific path or pattern.)",
        ]
    if partial:
        lines += ["", "(Some paths were inaccessible and skipped)"]
    metadata = {"matches": total, "truncated": truncated}
    if unread:
        lines += ["", f"(Not shown: {_unread_note(unread)})"]
        metadata["unread"] = len(unread)
    return ToolResult(title=pattern, output="\n".join(lines), metadata=metadata)


def _unread_note(unread: list[str]) -> str:
    """One line naming the files whose matches need the read permission (at most
    UNREAD_NAMES of them)."""
    count = len(unread)
    names = ", ".join(unread[:UNREAD_NAMES])
    if count > UNREAD_NAMES:
        names += f" and {count - UNREAD_NAMES} more"
    files = "1 file matches" if count == 1 else f"{count} files match"
    return (
        f"{files} whose contents need the read permission (read them with the read tool, "
        f"which asks for it): {names}"
    )


class _Reversed:
    """A path that sorts backwards, so that a heap of (mtime, path, ...) keeps the newest
    files and, among files of the same time, the first paths."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


class _Matches:
    """Reads rg's JSON lines: counts every match of a file that can be stat'ed (and that
    ``match`` accepts) and keeps the ``LIMIT`` best of them in ``best``, a heap whose first
    entry is the one to drop next. An entry is ``(mtime_ns, _Reversed(abs path), -index,
    line number, text)``; sorted in reverse, the entries are in output order."""

    def __init__(self, base: str, match: Any, judge: Callable[[str], str] | None) -> None:
        import json

        self.loads = json.loads  # bound once per search: `line` runs for every line rg prints
        self.base = base
        self.match = match
        self.judge = judge  # the read rules' action for a relative path; None: all allowed
        #: files with matches whose reading asks: named in the output, their lines not shown
        self.unread: list[str] = []
        self.total = 0
        self.reported = False  # rg reported a match (kept or not)
        self.best: list[tuple[int, _Reversed, int, int, str]] = []
        self.mode = _DROP
        self.mtime = 0
        self.name = _Reversed("")
        self.index = 0

    def line(self, raw: bytes) -> None:
        if raw.startswith(b'{"type":"match"'):
            self.reported = True
            if self.mode == _COUNT:
                self.total += 1
                return
            if self.mode == _DROP:
                return
        elif not raw.startswith(b'{"type":"begin"'):
            return  # end, summary (and context, which we never ask for)
        try:
            message = self.loads(raw)
            data = message["data"]
            if message["type"] == "begin":
                self.begin(_text(data["path"], path=True))
            else:
                self.add(data)
        except (ValueError, KeyError, TypeError):
            return  # not rg's JSON: nothing we can use

    def begin(self, relative: str) -> None:
        if relative.startswith("./"):
            relative = relative[2:]
        self.mode = _DROP
        if self.match is not None and not self.match(relative.replace(os.sep, "/")):
            return
        full = os.path.join(self.base, relative)
        if self.judge is not None:
            action = self.judge(relative.replace(os.sep, "/"))
            if action != "allow":
                if action == "ask":
                    self.unread.append(full)
                return  # a denied file: its matches are neither shown nor counted
        try:
            self.mtime = os.stat(full).st_mtime_ns
        except OSError:
            return  # gone or unreadable: its matches are dropped
        self.name = _Reversed(full)
        self.index = 0
        best = self.best
        # the whole file loses when even its first match is worse than the worst one kept
        worse = len(best) >= LIMIT and (self.mtime, self.name, 0) < best[0][:3]
        self.mode = _COUNT if worse else _KEEP

    def add(self, data: dict[str, Any]) -> None:
        self.total += 1
        key = (self.mtime, self.name, -self.index)
        self.index += 1
        best = self.best
        if len(best) >= LIMIT and key < best[0][:3]:
            self.mode = _COUNT  # so are all the later lines of this file
            return
        text = _text(data["lines"])
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        if len(text) > MAX_LINE_LENGTH:
            text = text[:MAX_LINE_LENGTH] + "..."
        entry = (*key, int(data["line_number"]), text)
        if len(best) < LIMIT:
            heapq.heappush(best, entry)
        else:
            heapq.heapreplace(best, entry)


def _text(field: dict[str, str], *, path: bool = False) -> str:
    """rg's JSON text field: ``{"text": ...}``, or ``{"bytes": base64}`` for text that is not
    UTF-8 (paths decoded as the file system does, line texts with replacement characters)."""
    if "text" in field:
        return field["text"]
    import base64

    raw = base64.b64decode(field["bytes"])
    return os.fsdecode(raw) if path else raw.decode("utf-8", "replace")


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    register(grep)
