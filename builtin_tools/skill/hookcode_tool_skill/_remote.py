"""Remote skill indexes: ``[skills] urls`` (agent-loop.md §10, item 4).

``<url>/index.json`` is ``{"skills": [{"name", "description", "files": [...]}]}``. Each listed
file is fetched from ``<url>/<name>/<file>`` into ``<cache>/<name>/<file>`` unless it is already
there (so a cached file is never refreshed: delete the directory to fetch it again). The caller
scans the returned directories for ``**/SKILL.md``.

Nothing here raises for what the network or the index does: a bad URL, an unreachable server,
an error status, a body over :data:`MAX_SIZE`, an index that is not JSON or not shaped as above,
an unsafe name or file path, each becomes a warning naming the URL (and the skill or file), and
whatever else the index lists is still fetched. Downloads are written atomically, so a crash
never leaves a torn file that a later run would take as "already there".

Imported when ``[skills] urls`` is set (it imports httpx).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import httpx
from hookcode.datadir import private_dir
from hookcode.fileio import atomic_write

#: bytes accepted for index.json and for each file, counted while streaming
MAX_SIZE = 5 * 1024 * 1024
#: seconds to connect, and between two reads
TIMEOUT = 10.0
#: seconds for one whole response (a server trickling bytes cannot hold discovery longer)
DEADLINE = 60.0
MAX_REDIRECTS = 5


class _Refused(Exception):
    """A response that is not used; the message says why."""


def pull(url: str, cache: Path, warnings: list[str]) -> list[Path]:
    """The skill directories of the index at ``url``, under ``cache``, fetched as needed."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        warnings.append(f"skills: URL {url!r} skipped: it is not a valid URL ({exc})")
        return []
    if parts.scheme not in ("http", "https") or not parts.netloc:
        warnings.append(
            f"skills: URL {url!r} skipped: only http:// and https:// URLs are supported"
        )
        return []
    base = url if url.endswith("/") else url + "/"
    index_url = urljoin(base, "index.json")
    with httpx.Client(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=TIMEOUT,
        headers={"User-Agent": "hookcode"},
    ) as client:
        try:
            data = _get(client, index_url, accept="application/json")
        except _Refused as exc:
            warnings.append(f"skills: index {index_url} skipped: {exc}")
            return []
        try:
            index = json.loads(data)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            warnings.append(f"skills: index {index_url} skipped: it is not JSON ({exc})")
            return []
        except RecursionError:  # a server's JSON nested thousands of levels deep
            warnings.append(f"skills: index {index_url} skipped: it is nested too deeply")
            return []
        entries = index.get("skills") if isinstance(index, dict) else None
        if not isinstance(entries, list):
            warnings.append(
                f"skills: index {index_url} skipped: expected an object "
                '{"skills": [{"name", "description", "files": [...]}]}'
            )
            return []
        dirs: list[Path] = []
        for position, entry in enumerate(entries):
            root = _skill(client, base, index_url, position, entry, cache, warnings)
            if root is not None and root not in dirs:
                dirs.append(root)
        return dirs


def _skill(
    client: httpx.Client,
    base: str,
    index_url: str,
    position: int,
    entry: Any,
    cache: Path,
    warnings: list[str],
) -> Path | None:
    """The directory of one index entry after its files are fetched; None if refused."""
    where = f"skills: index {index_url}, entry {position}"
    name = entry.get("name") if isinstance(entry, dict) else None
    files = entry.get("files") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not isinstance(files, list):
        warnings.append(f'{where} skipped: expected {{"name": string, "files": [string, ...]}}')
        return None
    if not _safe_segment(name):
        warnings.append(f"{where} skipped: unsafe skill name {name!r}")
        return None
    root = cache / name
    skill_url = urljoin(base, quote(name, safe="") + "/")
    where = f"skills: index {index_url}, skill {name!r}"
    if not any(isinstance(f, str) and PurePosixPath(f).name == "SKILL.md" for f in files):
        warnings.append(f"{where} lists no SKILL.md")
    for file in files:
        if not isinstance(file, str):
            warnings.append(f"{where}: file entry {file!r} skipped: not a string")
            continue
        destination = _destination(root, file)
        if destination is None:
            warnings.append(f"{where}: file {file!r} refused: unsafe path")
            continue
        if destination.is_file():
            continue
        file_url = urljoin(skill_url, "/".join(quote(s, safe="") for s in file.split("/")))
        try:
            data = _get(client, file_url)
            private_dir(destination.parent)  # the data directory's cache: 0700, files 0600
            atomic_write(destination, data, mode=0o600)
        except _Refused as exc:
            warnings.append(f"{where}: file {file_url} skipped: {exc}")
        except OSError as exc:
            warnings.append(
                f"{where}: file {file!r} could not be written to {destination}: "
                f"{exc.strerror or exc}"
            )
    return root if root.is_dir() else None


def _safe_segment(value: str) -> bool:
    """One plain path component: no separator, no ``.``/``..``, no drive, no NUL."""
    return (
        value not in ("", ".", "..")
        and not any(c in value for c in "/\\\0")
        and not PureWindowsPath(value).drive
    )


def _destination(root: Path, file: str) -> Path | None:
    """Where ``file`` (a relative POSIX path from the index) goes under ``root``; None if it
    is absolute, has a backslash or a ``..``, or would land outside ``root``."""
    if not file or PurePosixPath(file).is_absolute():
        return None
    segments = file.split("/")
    if not all(_safe_segment(s) for s in segments):
        return None
    destination = root.joinpath(*segments)
    # the cache may hold symlinks (a user's doing): what counts is where a write would land
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(destination))
    if real == real_root or not real.is_relative_to(real_root):
        return None
    return destination


def _get(client: httpx.Client, url: str, *, accept: str = "*/*") -> bytes:
    """The body of a successful GET of ``url``; :class:`_Refused` for every failure."""
    started = time.monotonic()
    try:
        with client.stream("GET", url, headers={"Accept": accept}) as response:
            if not response.is_success:
                raise _Refused(f"the server answered {response.status_code}")
            declared = response.headers.get("content-length", "")
            if declared.strip().isdigit() and int(declared) > MAX_SIZE:
                raise _Refused(f"larger than the {MAX_SIZE // (1024 * 1024)} MB limit")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_SIZE:
                    raise _Refused(f"larger than the {MAX_SIZE // (1024 * 1024)} MB limit")
                if time.monotonic() - started > DEADLINE:
                    raise _Refused(f"not received within {DEADLINE:g} seconds")
            return bytes(body)
    except httpx.TooManyRedirects:
        raise _Refused(f"more than {MAX_REDIRECTS} redirects") from None
    except httpx.TimeoutException:
        raise _Refused(f"no answer within {TIMEOUT:g} seconds") from None
    except httpx.HTTPError as exc:
        raise _Refused(f"request failed: {str(exc).strip() or type(exc).__name__}") from None
    except httpx.InvalidURL as exc:
        raise _Refused(f"invalid URL: {exc}") from None
