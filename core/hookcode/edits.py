"""The file-edit transaction: how every tool that changes files changes them.

::

    async with ctx.edit_files(path) as tx:    # or several paths: one transaction for all
        current = tx.read(path)               # the file as stored (exists=False: missing)
        tx.write(path, new_text)              # or tx.delete(path), tx.move(src, dst)
    # written here, or not at all

``write``, ``edit``, ``multiedit`` and ``apply_patch`` are built on it, and a tool pack's tool
that uses it edits files exactly as they do. Each step has its one place here:

1. **Enter**: the paths are locked (:class:`hookcode.fileio.PathLocks`, by real path, in sorted
   order: two transactions on one file run one after the other, never deadlock), how each
   resolves is noted, and ``external_directory`` is asked for those outside the project (each
   directory once).
2. **Inside the block** nothing touches the disk but reads. :meth:`EditTransaction.read`,
   :meth:`~EditTransaction.write`, :meth:`~EditTransaction.delete` and
   :meth:`~EditTransaction.move` check and record; each sees what the earlier ones did. A write
   lands where the OS would write (:func:`hookcode.writes.write_target`: through symlinks; a
   path under a dangling directory link, a loop or a file is refused naming the culprit); a
   directory is refused (:class:`NotAFile`); the first time an existing file is touched the
   read-before-write rule applies (it must have been read in this session and not modified
   since, :meth:`hookcode.filetime.FileTimes.assert_fresh`) unless the transaction was opened
   with ``require_read=False``.
3. **Exit** (no exception): ONE ``edit`` ask for every path changed, as spelled and as resolved
   (:func:`hookcode.writes.edit_request`; a protected path marks the request
   ``metadata["protected"]``, so that only a person or a rule naming it allows it), with
   metadata ``filepath`` (the files' absolute paths, joined by ", ") and ``diff`` (one unified
   diff per file, common indentation removed: :func:`trim_diff`), plus whatever the tool put
   in :attr:`EditTransaction.metadata` (which may replace those two). After the ask, which may
   have waited for a person: the call's abort signal, and every path must still resolve as it
   did (a symbolic link on the way changed: nothing is written). Then every file is written
   atomically (:func:`hookcode.fileio.atomic_write`, through symlinks, keeping an existing
   file's encoding, BOM and mode; parents created; the runtime's ``pending_writes``), then
   deleted files and moved sources are removed; ``file.edited`` (``file``, ``deleted``) is
   published per file and each written file's read time recorded.

An exception inside the block, a refused ask or a failed check writes nothing: every check is
made before the first file is written. The text given to :meth:`~EditTransaction.write` is
written as given; to follow the file's line-ending style convert it first
(``fileio.to_newline(text, current.newline)``, as ``write`` does).

A sync tool (running in a worker thread) uses the same object with ``with`` instead of
``async with``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookcode.errors import ToolError
from hookcode.fileio import TextFile

if TYPE_CHECKING:
    from types import TracebackType

    from hookcode.protocols import EditContext
    from hookcode.writes import EditRequest

__all__ = ["Change", "EditTransaction", "MissingFile", "NotAFile", "trim_diff"]


class NotAFile(ToolError):
    """The path names a directory (or another non-regular file): nothing can be read from it
    or written over it as a text file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: whether it is a directory
        self.directory = os.path.isdir(path)
        if self.directory:
            super().__init__(f"Path is a directory, not a file: {path}")
        else:
            super().__init__(f"Path is not a regular file: {path}")


class MissingFile(ToolError):
    """A file to delete or move is not there (or an earlier operation removed it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"File {path} not found")


class Change:
    """One operation of a transaction, in the order they were made (``tx.changes``)."""

    __slots__ = ("_stats", "after", "before", "moved_to", "path")

    def __init__(
        self, path: Path, before: TextFile, after: str | None, moved_to: Path | None = None
    ) -> None:
        #: the path as the tool gave it (absolute)
        self.path = path
        #: the file as the earlier operations left it (``exists=False``: there was none)
        self.before = before
        #: its new text; None when it is deleted
        self.after = after
        #: where a move puts it (the source is removed)
        self.moved_to = moved_to
        self._stats: tuple[int, int] | None = None

    @property
    def stats(self) -> tuple[int, int]:
        """(additions, deletions) in lines, as :func:`hookcode.fileio.diff_stats` counts."""
        if self._stats is None:
            from hookcode.fileio import diff_stats

            self._stats = diff_stats(self.before.text, self.after or "")
        return self._stats


class EditTransaction:
    """A set of file changes made together or not at all (see the module's docstring).

    Made by :meth:`hookcode.ToolContext.edit_files`; used as ``async with`` by an async tool,
    as ``with`` by a sync one (in its worker thread). The operations are synchronous (they
    read files): an async tool with large files may run them in a worker thread, one thread
    at a time."""

    def __init__(
        self, ctx: EditContext, paths: Iterable[str | Path], *, require_read: bool
    ) -> None:
        self._ctx = ctx
        self._paths = list(dict.fromkeys(ctx.resolve(p) for p in paths))
        self._declared = set(self._paths)
        #: the read-before-write rule applies (``apply_patch`` opens with False: its context
        #: lines verify the content); with False read times are not recorded either
        self.require_read = require_read
        #: the operations so far, in order
        self.changes: list[Change] = []
        #: what the tool adds to the ``edit`` ask's metadata (keys ``filepath`` and ``diff``
        #: replace the transaction's own); after the block, the metadata that was asked
        self.metadata: dict[str, Any] = {}
        #: (file, deleted) for every file written or removed, once the block has ended
        self.written: list[tuple[Path, bool]] = []
        # every file's final state, by where the OS finds it (a write's key is its target,
        # symlinks followed; a removal's the directory entry, a link itself), in order of
        # first touch: the file to write, or None to remove it
        self._final: dict[Path, TextFile | None] = {}
        self._names: dict[Path, Path] = {}  # each key's path as first given (events, diffs)
        self._stored: dict[Path, TextFile] = {}  # files read from disk, by real path
        self._touched: dict[Path, None] = {}  # the paths changed, in order (the ask's patterns)
        self._resolved: dict[Path, tuple[str, str]] = {}
        #: releases the locks (set while the transaction is open)
        self._stack: contextlib.AsyncExitStack | contextlib.ExitStack | None = None

    # -- operations ---------------------------------------------------------------------------

    def read(self, path: str | Path) -> TextFile:
        """The file at ``path`` as this transaction sees it: as the earlier operations left it,
        else as stored (its text with its own line endings, encoding, BOM, mode). A missing
        file has ``exists=False`` when a write could create it; a path no write could reach
        (under a dangling directory link, a loop, a file) raises ToolError naming the culprit;
        a directory raises :class:`NotAFile`."""
        spelled = self._path(path)
        key = self._source(spelled)
        if key in self._final:
            return self._final[key] or TextFile(key, "", exists=False)
        file = self._load(key, spelled)
        if not file.exists:
            from hookcode.writes import write_target

            write_target(spelled)  # refuses what could never be written, naming why
        return file

    def write(self, path: str | Path, text: str) -> Change:
        """Make ``text`` the content of the file at ``path`` (through a symlink to its target;
        an existing file keeps its encoding, BOM and mode; a new one is UTF-8, the umask's
        mode, parents created). ``text`` is written with the line endings it has."""
        spelled = self._path(path)
        key = self._target(spelled)
        before = self._current(key, spelled)
        if before.exists:
            after = dataclasses.replace(before, path=key, text=text)
        else:  # a new file: UTF-8, no mode yet (the umask's when written)
            after = TextFile(key, text)
        self._put(key, spelled, after)
        return self._record(Change(spelled, before, text), spelled)

    def delete(self, path: str | Path) -> Change:
        """Remove the file at ``path`` (a symbolic link is removed itself, not its target).
        Raises :class:`MissingFile` when there is none, :class:`NotAFile` for a directory."""
        spelled = self._path(path)
        before = self._current(self._source(spelled), spelled)
        if not before.exists:
            raise MissingFile(spelled)
        self._put(self._entry(spelled), spelled, None)
        return self._record(Change(spelled, before, None), spelled)

    def move(self, src: str | Path, dst: str | Path, text: str | None = None) -> Change:
        """Move the file at ``src`` to ``dst`` (replacing what is there; through a symlink at
        ``dst`` to its target), with ``text`` as its new content if given. It keeps its
        encoding, BOM and mode; ``src`` is removed (a link itself)."""
        source = self._path(src)
        destination = self._path(dst)
        before = self._current(self._source(source), source)
        if not before.exists:
            raise MissingFile(source)
        key = self._target(destination)
        if key not in self._final and os.path.isfile(key):
            self._fresh(key)  # it is replaced: the read-before-write rule covers it too
        after = before.text if text is None else text
        self._put(self._entry(source), source, None)
        self._put(key, destination, dataclasses.replace(before, path=key, text=after))
        return self._record(Change(source, before, after, destination), source, destination)

    def request(self) -> EditRequest:
        """The ``edit`` request the changes so far make (:func:`hookcode.writes.edit_request`):
        ``patterns`` (each path worktree-relative, as given and as resolved), ``protected``,
        ``always``."""
        from hookcode.writes import edit_request

        return edit_request(self._ctx, self._touched)

    def result_metadata(self) -> dict[str, Any]:
        """The result metadata of a transaction that wrote one file (``write``, ``edit``,
        ``multiedit``): ``diff`` (as asked), ``filediff`` (``file``, ``before``, ``after``,
        ``additions``, ``deletions``) and ``diagnostics`` (``{}``: the lsp plugin's after-hook
        fills it). Read after the block."""
        [change] = self.changes
        additions, deletions = change.stats
        return {
            "diff": self.metadata["diff"],
            "filediff": {
                "file": str(change.path),
                "before": change.before.text,
                "after": change.after,
                "additions": additions,
                "deletions": deletions,
            },
            "diagnostics": {},
        }

    # -- entering and leaving -----------------------------------------------------------------

    async def __aenter__(self) -> EditTransaction:
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(self._ctx.runtime.path_locks.hold(*self._paths))
        try:
            for path in self._begin():
                await self._ctx.ask_external_directory(path, "file")
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        assert isinstance(stack, contextlib.AsyncExitStack)
        try:
            if exc_type is None and self._final:
                await self._commit()
        finally:
            await stack.aclose()

    def __enter__(self) -> EditTransaction:
        stack = contextlib.ExitStack()
        stack.enter_context(self._ctx.runtime.path_locks.hold_sync(*self._paths))
        try:
            for path in self._begin():
                self._ctx.ask_external_directory_sync(path, "file")
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        assert isinstance(stack, contextlib.ExitStack)
        try:
            if exc_type is None and self._final:
                request = self._prepare()
                self._ctx.ask_sync("edit", request.patterns, request.always, self.metadata)
                self._check()
                try:
                    self._write()
                finally:
                    self._announce()
        finally:
            stack.close()

    async def _commit(self) -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        executor = self._ctx.runtime.executor
        request = await loop.run_in_executor(executor, self._prepare)
        await self._ctx.ask("edit", request.patterns, request.always, self.metadata)
        self._check()
        future = loop.run_in_executor(executor, self._write)
        try:
            await asyncio.shield(future)
        finally:
            if not future.done():
                # cancelled while the files are written: they will be; wait for that, so that
                # the events and read times follow what is on disk, then stop
                await asyncio.wait({future})
            self._announce()

    def _begin(self) -> list[Path]:
        """Note how every path resolves now (compared after the ask); the paths to ask
        ``external_directory`` for (one per directory)."""
        from hookcode.writes import resolution

        self._resolved = dict(zip(self._paths, resolution(self._paths), strict=True))
        asked: dict[str, Path] = {}
        for path in self._paths:
            pattern = self._ctx.external_directory(path, "file")
            if pattern is not None:
                asked.setdefault(pattern, path)
        return list(asked.values())

    def _prepare(self) -> EditRequest:
        """The ``edit`` request, and :attr:`metadata` completed for it."""
        from hookcode.fileio import diff, read_text

        request = self.request()
        metadata = dict(self.metadata)
        if "filepath" not in metadata:
            metadata["filepath"] = ", ".join(str(self._names[key]) for key in self._final)
        if "diff" not in metadata:
            parts = []
            for key, file in self._final.items():
                stored = self._stored.get(key)
                if stored is None:
                    stored = read_text(key) if os.path.isfile(key) else None
                before = stored.text if stored is not None else ""
                after = file.text if file is not None else ""
                parts.append(trim_diff(diff(str(self._names[key]), before, after)))
            metadata["diff"] = "".join(parts)
        if request.protected:
            metadata["protected"] = request.protected
        self.metadata = metadata
        return request

    def _check(self) -> None:
        """After the ask (which may have waited for a person): not aborted, and every path
        still resolves as it did."""
        from hookcode.errors import ToolAborted
        from hookcode.writes import unchanged

        if self._ctx.abort.aborted:
            raise ToolAborted()
        paths = list(self._touched)
        unchanged([self._resolved[p] for p in paths], paths)

    def _write(self) -> None:
        """Every new text, then every removal; :attr:`written` grows as they are done."""
        from hookcode.fileio import atomic_write

        pending = self._ctx.runtime.pending_writes
        removals: list[Path] = []
        for key, file in self._final.items():
            if file is None:
                removals.append(key)
                continue
            # a new file: UTF-8, the umask's mode; an existing (or moved) one keeps its
            # encoding, BOM and mode, and the text has the line endings it must have
            atomic_write(key, file.encode(file.text), mode=file.mode, pending=pending)
            self.written.append((key, False))
        for key in removals:
            if os.path.lexists(key):
                os.unlink(key)
                self.written.append((key, True))

    def _announce(self) -> None:
        """``file.edited`` for each file written or removed; the read times of those written."""
        for key, deleted in self.written:
            self._ctx.publish("file.edited", file=str(self._names[key]), deleted=deleted)
            if self.require_read and not deleted:
                self._ctx.files.record(key)

    # -- where things are ---------------------------------------------------------------------

    def _path(self, path: str | Path) -> Path:
        spelled = self._ctx.resolve(path)
        if spelled not in self._declared:
            raise ValueError(f"{spelled} is not one of the paths given to edit_files()")
        if self._stack is None:
            raise RuntimeError("a transaction is used inside `async with ctx.edit_files(...)`")
        return spelled

    @staticmethod
    def _entry(path: Path) -> Path:
        """The directory entry ``path`` names: its parent's symlinks resolved, not its own."""
        return Path(os.path.realpath(path.parent)) / path.name

    def _source(self, path: Path) -> Path:
        """The key of the file read at ``path``: the entry when this transaction already
        decided what is there (a link removed earlier is gone), else its real path."""
        entry = self._entry(path)
        return entry if entry in self._final else Path(os.path.realpath(path))

    def _target(self, path: Path) -> Path:
        """The key a file written at ``path`` lands in, never a directory."""
        from hookcode.writes import write_target

        entry = self._entry(path)
        if entry in self._final:
            return entry
        key = write_target(path)
        if key not in self._final and os.path.isdir(key):
            raise NotAFile(path)
        return key

    def _current(self, key: Path, path: Path) -> TextFile:
        """The file at ``key`` as the earlier operations left it, else as stored."""
        if key in self._final:
            return self._final[key] or TextFile(key, "", exists=False)
        return self._load(key, path)

    def _load(self, key: Path, path: Path) -> TextFile:
        """The file stored at ``key`` (``path`` as given, for messages), read once; the
        read-before-write rule applies to an existing one."""
        from hookcode.fileio import read_text

        stored = self._stored.get(key)
        if stored is not None:
            return stored
        if not os.path.exists(key):
            stored = TextFile(key, "", exists=False)
        elif not os.path.isfile(key):
            raise NotAFile(path)
        else:
            self._fresh(key)
            stored = read_text(key)
        self._stored[key] = stored
        return stored

    def _fresh(self, key: Path) -> None:
        if self.require_read:
            self._ctx.files.assert_fresh(key)

    def _put(self, key: Path, path: Path, file: TextFile | None) -> None:
        self._final[key] = file
        self._names.setdefault(key, path)

    def _record(self, change: Change, *paths: Path) -> Change:
        for path in paths:
            self._touched.setdefault(path, None)
        self.changes.append(change)
        return change


_LEADING = re.compile(r"\s*")


def trim_diff(patch: str) -> str:
    """A unified diff with the common indentation of its body lines (``+``, ``-``, context;
    blank ones aside) removed, as the reference shows an edit."""
    lines = patch.split("\n")

    def is_body(line: str) -> bool:
        return line[:1] in ("+", "-", " ") and not line.startswith(("---", "+++"))

    indent: int | None = None
    for line in lines:
        if is_body(line) and line[1:].strip():
            width = len(_LEADING.match(line, 1).group(0))  # type: ignore[union-attr]
            indent = width if indent is None else min(indent, width)
    if not indent:
        return patch
    return "\n".join(line[0] + line[1 + indent :] if is_body(line) else line for line in lines)
