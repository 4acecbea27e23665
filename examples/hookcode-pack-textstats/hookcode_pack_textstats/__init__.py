"""hookcode-pack-textstats: a small third-party tool pack for hookcode.

Two tools, both sync (hookcode runs them in a worker thread):

* ``wordcount`` counts the lines, words and characters of one file. It asks the ``read``
  permission for the file itself (``asks_permission=True``), so the rules that guard reading
  (``read = { "*.env" = "ask" }``) guard it too.
* ``todo_scan`` lists the TODO / FIXME / HACK / XXX comments of the files under a directory.
  The pipeline checks its own ``todo_scan`` permission before it runs.

Both ask ``external_directory`` for paths outside the project, like hookcode's file tools.
The module imports only the standard library and hookcode: installing the pack costs nothing
until a tool is called. The ``hookcode`` entry point (``tool_textstats``) names this module;
its ``tool`` hook returns the tools.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import hookcode
from hookcode import ToolContext, ToolError, ToolResult, hookimpl

__all__ = ["todo_scan", "wordcount"]

#: directories todo_scan never descends into (besides hidden ones: .git, .venv, ...)
SKIP_DIRS = frozenset({"__pycache__", "build", "dist", "node_modules", "venv"})
MARKER = re.compile(r"\b(TODO|FIXME|HACK|XXX)\b")
MAX_LINE = 200


@hookcode.tool(aliases={"file_path": "filePath"}, permission="read", asks_permission=True)
def wordcount(
    ctx: ToolContext,
    file_path: Annotated[str, "The file to count: absolute, or relative to the working directory"],
) -> ToolResult:
    """Count the lines, words and characters of a text file (like `wc`).

    Words are runs of non-whitespace characters; a last line without a newline still counts.
    """
    path = ctx.resolve(file_path)
    ctx.ask_external_directory_sync(path)
    ctx.ask_sync("read", [str(path)], always=["*"], metadata={"filepath": str(path)})
    if path.is_dir():
        raise ToolError(f"{path} is a directory; wordcount counts one file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"File not found: {path}") from None
    if b"\0" in data[:4096]:
        raise ToolError(f"Cannot count words of binary file: {path}")
    text = data.decode("utf-8", errors="replace")
    stats = {
        "lines": text.count("\n") + (1 if text and not text.endswith("\n") else 0),
        "words": len(text.split()),
        "characters": len(text),
        "bytes": len(data),
    }
    name = _display(ctx, path)
    output = (
        f"{name}: {_n(stats['lines'], 'line')}, {_n(stats['words'], 'word')}, "
        f"{_n(stats['characters'], 'character')} ({_n(stats['bytes'], 'byte')})"
    )
    return ToolResult(output=output, title=name, metadata=stats)


@hookcode.tool
def todo_scan(
    ctx: ToolContext,
    path: Annotated[str, "Directory to scan (default: the working directory)"] = ".",
    include: Annotated[
        str,
        "Glob of the files to scan, e.g. '*.py'; with a '/' it is matched against the path "
        "relative to the directory ('src/*.py'; '*' crosses '/')",
    ] = "*",
    limit: Annotated[int, "Maximum number of comments to list (at least 1)"] = 100,
) -> ToolResult:
    """Find TODO, FIXME, HACK and XXX comments in the text files under a directory.

    Prints one `path:line: text` line per comment, files in name order. Hidden directories
    (.git, .venv, ...), node_modules, __pycache__, venv, build and dist are skipped, and so are
    binary files.
    """
    if limit < 1:
        raise ToolError("limit must be at least 1")
    root = ctx.resolve(path)
    ctx.ask_external_directory_sync(root, kind="directory")
    if not root.is_dir():
        raise ToolError(f"Not a directory: {root}")
    found: list[str] = []
    files: set[str] = set()
    more = False
    for file in _walk(root, include):
        if ctx.abort.is_set():
            break
        for number, line in _marked_lines(file):
            if len(found) == limit:
                more = True
                break
            text = line.strip()
            if len(text) > MAX_LINE:
                text = text[:MAX_LINE] + "..."
            name = _display(ctx, file)
            found.append(f"{name}:{number}: {text}")
            files.add(name)
        if more:
            break
    where = _display(ctx, root)
    if not found:
        output = f"No TODO, FIXME, HACK or XXX comments found in {where}"
    else:
        output = "\n".join(found)
        if more:
            output += (
                f"\n\n(Showing the first {limit} comments; there are more. Use a narrower "
                "path or include pattern, or a higher limit.)"
            )
    return ToolResult(
        output=output,
        title=where,
        metadata={"count": len(found), "files": len(files), "more": more},
    )


@hookimpl
def register_tools(register: Callable[..., None]) -> None:
    """The pack's tools (the ``register_tools`` hook)."""
    register(wordcount, todo_scan)


# -- helpers ----------------------------------------------------------------------------------


def _display(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the working directory when inside it, else absolute."""
    try:
        return path.relative_to(ctx.cwd).as_posix() or "."
    except ValueError:
        return str(path)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _walk(root: Path, include: str) -> Iterator[Path]:
    """The files under ``root`` matching ``include``, in name order, skipping hidden directories and SKIP_DIRS."""
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            file = Path(directory, name)
            relative = file.relative_to(root).as_posix()
            if "/" in include:
                ok = fnmatch.fnmatchcase(relative, include) or (
                    include.startswith("**/") and fnmatch.fnmatchcase(relative, include[3:])
                )
            else:
                ok = fnmatch.fnmatchcase(name, include)
            if ok and file.is_file():
                yield file


def _marked_lines(file: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of each marked line of a text file; nothing for a binary one."""
    try:
        with file.open("rb") as fh:
            if b"\0" in fh.read(4096):
                return
            fh.seek(0)
            for number, raw in enumerate(fh, 1):
                line = raw.decode("utf-8", errors="replace")
                if MARKER.search(line):
                    yield number, line
    except OSError:
        return
