"""The data directory is private: its directories are mode 0700, its files 0600.

Whatever redaction does, the data directory holds secrets (``auth.json``, ``mcp-auth.json``)
and things that may quote one the runtime does not know (the session store, spill files, the
audit log, transcripts), so nobody else on the machine may read it. Everything hookcode
creates there is created private (:func:`private_dir`, :func:`private_file`); a data
directory that lets others in (made by an older hookcode, or by hand) is tightened with
everything in it the first time the store is opened (:func:`secure_data_dir`).

Symbolic links inside the data directory are never followed when tightening: the mode of
what they point to is not ours to change. (The data directory itself may be a link.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "private_dir", "private_file", "secure_data_dir"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def private_dir(path: str | os.PathLike[str], *, tighten: bool = True) -> Path:
    """Create the directory ``path`` (and its missing parents) with mode 0700; with
    ``tighten``, an existing one that others may enter becomes 0700 too. Returns ``path``."""
    target = Path(path)
    try:
        os.mkdir(target, PRIVATE_DIR)
    except FileNotFoundError:
        private_dir(target.parent, tighten=False)
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(target, PRIVATE_DIR)
    except FileExistsError:
        if tighten and target.is_dir():
            _tighten(target, PRIVATE_DIR, directory=True, follow=True)
    return target


def private_file(path: str | os.PathLike[str], *, create: bool = True) -> None:
    """Create the file ``path`` with mode 0600 if it is missing (``create``; else
    FileNotFoundError), or make an existing one 0600 if others may read it (before a library
    such as SQLite opens it)."""
    flags = os.O_RDWR | _CLOEXEC | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)


def secure_data_dir(data_dir: str | os.PathLike[str]) -> list[str]:
    """Create ``data_dir`` with mode 0700; if it exists and others may enter it, make it 0700
    and everything in it private (directories 0700, files 0600). Returns the problems met,
    one line each (a file system without modes). A data directory of another user is refused
    (:class:`~hookcode.errors.HookcodeError`): its owner could read what is kept there."""
    target = Path(data_dir)
    try:
        os.mkdir(target, PRIVATE_DIR)
        return []
    except FileNotFoundError:
        private_dir(target)
        return []
    except FileExistsError:
        pass
    problems: list[str] = []
    try:
        st = os.stat(target)
    except OSError as exc:
        return [f"{target}: cannot check its mode: {exc.strerror or exc}"]
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid not in (None, 0, st.st_uid):
        # made by someone else (a shared /tmp path): its owner could read everything kept there
        from hookcode.errors import HookcodeError

        raise HookcodeError(
            f"{target}: the data directory belongs to another user (uid {st.st_uid}), who could "
            "read the sessions and credentials kept there; set HOOKCODE_DATA_DIR to a "
            "directory of your own"
        )
    if not st.st_mode & 0o077:
        return []
    try:
        _tighten(target, PRIVATE_DIR, directory=True, follow=True)
    except OSError as exc:
        return [
            f"{target}: others may read the data directory and its mode cannot be changed "
            f"({exc.strerror or exc}); run `chmod 700 {target}` or set HOOKCODE_DATA_DIR"
        ]
    for root, dirs, files in os.walk(target):
        for name in dirs:
            _tighten_quietly(Path(root, name), PRIVATE_DIR, True, problems)
        for name in files:
            _tighten_quietly(Path(root, name), PRIVATE_FILE, False, problems)
    return problems


def _tighten_quietly(path: Path, mode: int, directory: bool, problems: list[str]) -> None:
    try:
        _tighten(path, mode, directory=directory, follow=False)
    except OSError as exc:
        if len(problems) < 5:
            problems.append(f"{path}: cannot make it private: {exc.strerror or exc}")


def _tighten(path: Path, mode: int, *, directory: bool, follow: bool) -> None:
    """Set ``mode`` on ``path`` if others may use it. Without ``follow`` a symbolic link is
    left alone, and so are FIFOs, sockets and devices. (Inside the data directory, once it is
    0700, nobody else can swap a link in between the look and the change.)"""
    st = os.stat(path) if follow else os.lstat(path)
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    if kind_ok and st.st_mode & 0o077:
        os.chmod(path, mode)
