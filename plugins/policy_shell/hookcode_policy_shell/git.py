"""git as the analysis reads it: options that run programs or point git at another
repository's settings (opaque), sub-commands that run strings given to them (judged as
commands), the forms that write git's configuration (a protected file), the files it shows
from the work tree or the history (read rules), and whether an invocation only reads."""

from __future__ import annotations

import os
from pathlib import Path

from hookcode.configfiles import find_worktree

from hookcode_policy_shell.commands import (
    GIT_LISTING,
    GIT_READ_ONLY,
    GIT_UNSAFE_OPTIONS,
    PATH,
    READ,
    WRITE,
)
from hookcode_policy_shell.walker import Walker
from hookcode_policy_shell.words import Word

__all__ = ["judge_git"]


def judge_git(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    """git: options that run programs or point git at another repository are opaque; the
    sub-commands that run strings given to them have those strings judged; the forms that
    write git's configuration report it as written."""
    i = 0
    workdir: str | None = None
    while i < len(args):
        v = args[i].value
        if v is None:
            a.opaque("a git option is not static")
            return False
        if not v.startswith("-"):
            break
        if v in ("-c", "--config-env") or v.startswith(
            ("--config-env=", "--exec-path", "--git-dir", "--namespace", "--super-prefix")
        ):
            a.opaque(f"git {v} can run arbitrary programs or use another repository's settings")
            return False
        if v == "-C":
            target = args[i + 1] if i + 1 < len(args) else None
            if target is not None:
                a.path_argument(target, PATH)
                workdir = target.value
            i += 2
            continue
        if v.startswith("--work-tree"):
            if "=" not in v:
                i += 1
            i += 1
            continue
        i += 1
    if i >= len(args):
        return True
    sub = args[i].value or ""
    rest = args[i + 1 :]
    values = [w.value for w in rest]
    safe = all(v is not None for v in values) and not any(
        (v or "").startswith(GIT_UNSAFE_OPTIONS) for v in values
    )
    strings: list[tuple[str, str | None]] = []
    if sub == "submodule" and values[:1] == ["foreach"]:
        cmd = [v for v in values[1:] if v not in ("--recursive", "-q", "--quiet")]
        strings.append(("git submodule foreach", _joined(cmd)))
    elif sub == "rebase":
        for k, v in enumerate(values):
            if v in ("-x", "--exec"):
                strings.append(
                    ("git rebase --exec", values[k + 1] if k + 1 < len(values) else None)
                )
            elif v and v.startswith("--exec="):
                strings.append(("git rebase --exec", v.split("=", 1)[1]))
    elif sub == "bisect" and values[:1] == ["run"]:
        strings.append(("git bisect run", _joined(values[1:])))
    elif sub == "filter-branch":
        for k, v in enumerate(values):
            if v and v.endswith("-filter") and v.startswith("--"):
                strings.append(
                    (f"git filter-branch {v}", values[k + 1] if k + 1 < len(values) else None)
                )
    elif sub in ("difftool", "mergetool"):
        for k, v in enumerate(values):
            if v in ("-x", "--extcmd", "-t", "--tool"):
                strings.append((f"git {sub} {v}", values[k + 1] if k + 1 < len(values) else None))
            elif v and v.startswith(("--extcmd=", "--tool=")):
                strings.append((f"git {sub}", v.split("=", 1)[1]))
        if sub == "mergetool":
            a.opaque("git mergetool runs the configured merge tool")
    if any(
        (v or "").startswith(("--upload-pack", "--receive-pack", "--exec=", "-u")) for v in values
    ) and sub in ("clone", "fetch", "pull", "push", "ls-remote", "archive"):
        a.opaque(f"git {sub} with --upload-pack/--receive-pack/--exec runs a program")
    if sub in ("apply", "am") and not {"--check", "--stat", "--numstat", "--summary"} & {
        v for v in values if v
    }:
        a.opaque(f"git {sub} writes the files named inside the patch, which cannot be checked")
        safe = False
    if sub in ("init", "clone") and any((v or "").startswith("--template") for v in values):
        a.opaque(f"git {sub} --template copies hooks into the repository")
    if sub in ("clone",) and any(
        v in ("-c", "--config") or (v or "").startswith("--config=") for v in values
    ):
        a.opaque("git clone --config writes settings that can run programs")
    for what, string in strings:
        if string is None:
            a.opaque(f"{what} with a command that is not static")
        else:
            a.source(string, depth + 1)
        safe = False
    if _git_writes_config(sub, values):
        scope = "--global" in values or "--system" in values
        file = None
        for k, v in enumerate(values):
            if v in ("-f", "--file") and k + 1 < len(values):
                file = values[k + 1]
            elif v and v.startswith("--file="):
                file = v.split("=", 1)[1]
        if file is not None:
            a.path_argument(Word(file, file), WRITE)
        elif "--global" in values:
            a.path_argument(Word("~/.gitconfig", os.path.expanduser("~/.gitconfig")), WRITE)
        elif not scope:
            for path in _repository_files(a, workdir, ".git/config"):
                a.path_argument(Word(path, path), WRITE)
        safe = False
    if (
        sub == "submodule"
        and values[:1]
        and values[0] in ("add", "set-url", "set-branch", "sync", "init", "deinit", "absorbgitdirs")
    ):
        for path in _repository_files(a, workdir, ".gitmodules"):
            a.path_argument(Word(path, path), WRITE)
    _git_files(a, sub, rest)
    if sub in GIT_LISTING:
        safe = safe and _git_listing(sub, values)
    elif sub not in GIT_READ_ONLY:
        safe = False
    return safe


#: git sub-commands that show file contents: ``REV:PATH`` and paths after ``--`` are read
_GIT_SHOWING = frozenset(
    ["show", "log", "diff", "cat-file", "blame", "grep", "archive", "whatchanged"]
)


def _git_files(a: Walker, sub: str, rest: list[Word]) -> None:
    """The files a git sub-command writes (``--output``) or shows from the work tree or the
    history (``diff --no-index A B``, ``show REV:PATH``, ``log -p -- PATH``): checked like any
    other path (read rules, protected files, outside the project)."""
    values = [w.value for w in rest]
    no_index = sub == "diff" and "--no-index" in values
    after_dashes = False
    for k, w in enumerate(rest):
        v = w.value
        if v is None:
            continue
        if v.startswith("--output="):
            a.path_argument(Word(v[9:], v[9:], v[9:]), WRITE)
        elif v in ("--output", "-o") and sub in ("log", "diff", "show", "format-patch"):
            if k + 1 < len(rest):
                a.path_argument(rest[k + 1], WRITE)
        elif v == "--":
            after_dashes = True
        elif sub in _GIT_SHOWING and not v.startswith("-"):
            if after_dashes or no_index:
                a.path_argument(w, READ)
            elif ":" in v and "://" not in v:
                path = v.split(":", 1)[1]
                if path:
                    a.path_argument(Word(path, path), READ, quiet=True)


def _joined(values: list[str | None]) -> str | None:
    """The words joined by spaces, as git hands them to a shell; None if one is dynamic."""
    static = [v for v in values if v is not None]
    return " ".join(static) if len(static) == len(values) else None


def _repository_files(a: Walker, workdir: str | None, name: str) -> list[str]:
    """``name`` in the repository that git would use from each directory the command may be
    in (``git -C DIR`` first goes to DIR)."""
    found: list[str] = []
    for base in a.places.cwds:
        start = os.path.join(base, workdir) if workdir else base
        found.append(os.path.join(find_worktree(Path(start)), name))
    return list(dict.fromkeys(found))


def _git_listing(sub: str, values: list[str | None]) -> bool:
    """Whether a branch/tag/remote/config invocation only lists or reads."""
    positional = [v for v in values if v is not None and not v.startswith("-")]
    options = {v.split("=", 1)[0] for v in values if v is not None and v.startswith("-")}
    if sub == "branch":
        listing = {
            "-a",
            "-r",
            "-v",
            "-vv",
            "-av",
            "-va",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
            "--list",
            "-l",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--sort",
            "--format",
            "--points-at",
            "--color",
            "--no-color",
            "--column",
            "--no-column",
            "-i",
            "--ignore-case",
        }
        return options <= listing and (not positional or bool(options & {"--list", "-l"}))
    if sub == "tag":
        listing = {
            "-l",
            "--list",
            "-n",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--sort",
            "--format",
            "--points-at",
            "--color",
            "--column",
            "-i",
            "--ignore-case",
        }
        return options <= listing and (not positional or bool(options & {"-l", "--list"}))
    if sub == "remote":
        if not positional:
            return options <= {"-v", "--verbose"}
        return positional[0] in ("get-url", "show") and options <= {"--push", "--all", "-n"}
    if sub == "config":
        reading = {
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "--list",
            "-l",
            "--show-origin",
            "--show-scope",
            "--name-only",
            "--null",
            "-z",
            "--global",
            "--system",
            "--local",
            "--worktree",
            "--type",
            "--bool",
            "--int",
            "--path",
            "--default",
            "--includes",
            "--no-includes",
            "--file",
            "-f",
        }
        if positional and positional[0] in ("get", "list"):
            return options <= reading
        return options <= reading and bool(
            options & {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
        )
    return False


def _git_writes_config(sub: str, values: list[str | None]) -> bool:
    """Whether a git invocation writes git's configuration (so a protected file)."""
    positional = [v for v in values if v is not None and not v.startswith("-")]
    options = {(v or "").split("=", 1)[0] for v in values if (v or "").startswith("-")}
    if sub == "config":
        if positional and positional[0] in (
            "set",
            "unset",
            "rename-section",
            "remove-section",
            "edit",
        ):
            return True
        if positional and positional[0] in ("get", "list"):
            return False
        writing = {
            "--unset",
            "--unset-all",
            "--add",
            "--replace-all",
            "--rename-section",
            "--remove-section",
            "-e",
            "--edit",
        }
        if options & writing:
            return True
        reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"}
        return not (options & reading) and len(positional) >= 2
    if sub == "remote":
        return bool(positional) and positional[0] in (
            "add",
            "rename",
            "remove",
            "rm",
            "set-url",
            "set-head",
            "set-branches",
            "prune",
            "update",
        )
    if sub == "submodule":
        return bool(positional) and positional[0] in (
            "add",
            "init",
            "deinit",
            "sync",
            "set-url",
            "set-branch",
            "absorbgitdirs",
        )
    if sub == "branch":
        return bool(
            options
            & {
                "-u",
                "--set-upstream-to",
                "--unset-upstream",
                "-m",
                "-M",
                "--move",
                "-c",
                "-C",
                "--copy",
                "--edit-description",
                "-t",
                "--track",
                "-d",
                "-D",
                "--delete",
            }
        )
    if sub in ("lfs",):
        return bool(positional) and positional[0] in ("install", "uninstall", "track")
    return sub == "maintenance" and bool(positional) and positional[0] in ("start", "register")
