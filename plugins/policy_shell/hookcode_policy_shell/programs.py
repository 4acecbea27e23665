"""Commands with semantics of their own: how each uses its arguments (by :mod:`.commands`'
specs, or by a handler here: find, tar, dd, git, go, and the builtins that assign, evaluate or
change how the shell reads), what they run, and whether they only read."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from hookcode.configfiles import find_worktree

from hookcode_policy_shell.commands import (
    GIT_LISTING,
    GIT_READ_ONLY,
    GIT_UNSAFE_OPTIONS,
    GO_READ_ONLY,
    GO_UNSAFE_OPTIONS,
    NONE,
    PATH,
    READ,
    RW,
    SPECS,
    WRITE,
    Spec,
    split_options,
)
from hookcode_policy_shell.paths import SPECIAL_FILES
from hookcode_policy_shell.walker import Walker
from hookcode_policy_shell.words import Word, assigned_value

__all__ = ["by_spec", "judge", "unknown_program"]


def judge(a: Walker, name: str, words: list[Word], depth: int) -> bool:
    """Commands that run, assign or touch files in ways of their own. Returns whether
    the command (with these arguments) only reads."""
    args = words[1:]
    values = [w.value for w in args]
    handler = _SPECIAL.get(name)
    if handler is not None:
        return bool(handler(a, name, args, depth))
    spec = SPECS.get(name)
    if spec is not None:
        return by_spec(a, name, spec, args)
    unknown_program(a, args)
    return not any(v is None for v in values)


def by_spec(a: Walker, name: str, spec: Spec, args: list[Word]) -> bool:
    args = _with_option_matches(a, args)
    options, positional = split_options([w.value for w in args], spec)
    names = {option for option, _ in options}
    safe = not (names & spec.unsafe)
    if spec.writes_unknown and ("*" in spec.writes_unknown or names & spec.writes_unknown):
        a.opaque(f"{name} writes files named inside its input, which cannot be checked")
        safe = False
    if names & spec.runs:
        a.opaque(f"{name} {' '.join(sorted(names & spec.runs))} runs a program given as an option")
        safe = False
    recursive = spec.always_recursive or bool(names & spec.recursive)
    if name in ("grep", "egrep", "fgrep"):
        for option, value in options:
            if option in ("-d", "--directories") and value == "recurse":
                recursive = True
    in_place = any(
        option in spec.in_place and value in (None, "inplace") for option, value in options
    )
    has_pattern = bool(names & spec.pattern_options)
    searched = False
    for option, value in options:
        role = spec.options.get(option)
        if role in (READ, PATH, WRITE, RW) and value is not None:
            a.path_argument(Word(value, value), role)
            if role in (WRITE, RW):
                safe = False
    for order, index in enumerate(positional):
        role = spec.positional
        if order == 0 and spec.first is not None and not (spec.first == NONE and has_pattern):
            role = spec.first
        if order == len(positional) - 1 and len(positional) >= 2 and spec.last is not None:
            role = spec.last
        if any(option in ("-t", "--target-directory") for option, _ in options) and (
            spec.last == WRITE
        ):
            role = spec.positional
        if in_place and role == READ:
            role = RW
        w = args[index]
        if w.value == "-" and role in (READ, PATH):
            continue
        if role in (WRITE, RW):
            safe = False
        a.path_argument(w, role, recursive=recursive)
        searched = searched or role == READ
    if recursive and not searched:
        # `grep -r PATTERN` and `rg PATTERN` search the working directory
        a.path_argument(Word(".", "."), READ, recursive=True)
    return safe and all(w.harmless for w in args)


def _with_option_matches(a: Walker, args: list[Word]) -> list[Word]:
    """``args`` with each glob that matches a file named like an option (``sort *`` next to a
    file called ``--output=hookcode.toml``) replaced by its matches, as the command will see
    them: such a match is an option to it, not a path."""
    out: list[Word] = []
    for w in args:
        if w.value is not None and w.glob and w.mask[:1] in ("*", "?", "["):
            matches = [
                m for base in a.places.cwds for m in a.places.expand_glob(base, w.value, w.mask)[1]
            ]
            if any(m.startswith("-") for m in matches):
                out += [Word(m, m, node=w.node) for m in dict.fromkeys(matches)]
                continue
        out.append(w)
    return out


def unknown_program(a: Walker, args: list[Word]) -> None:
    """A program the analysis knows nothing about: an argument that names an existing
    file is taken as read, one that names a place outside the project as such."""
    for w in [choice for word in args for choice in (word.choices or [word])]:
        value = w.value
        if value is None or not value or w.expands:
            continue
        if value.startswith("-"):
            _, eq, rest = value.partition("=")
            if not eq or not rest.startswith(("/", "~", "./", "../")):
                continue
            value = rest
            w = Word(rest, rest, w.mask[len(w.mask) - len(rest) :] if w.mask else rest)
        if "://" in value or value in SPECIAL_FILES:
            continue
        looks_like_path = value.startswith(("/", "~")) or ".." in value.split("/")
        found = [a.places.exists(base, value) for base in a.places.cwds]
        if not (looks_like_path or any(exists for exists, _ in found)):
            continue
        is_file = any(is_file for _, is_file in found)
        a.path_argument(w, READ if is_file else PATH, quiet=True)


# ---------------------------------------------------------------------------------------------
# commands with semantics of their own (not wrappers): each returns whether it only reads
# ---------------------------------------------------------------------------------------------


def _s_find(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    safe = True
    i = 0
    # global options, then the starting points (until the first expression token)
    while i < len(args) and args[i].value in ("-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"):
        i += 1
    if i < len(args) and args[i].value in ("-D",):
        i += 2
    starts: list[Word] = []
    while i < len(args):
        v = args[i].value
        if v is None:
            a.opaque("a starting point or expression of find is not static")
            return False
        if v.startswith("-") or v in ("(", "!", ")", ","):
            break
        starts.append(args[i])
        i += 1
    deletes = False
    while i < len(args):
        v = args[i].value
        if v is None:
            a.opaque("an expression of find is not static")
            return False
        if v in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j].value not in (";", "+"):
                j += 1
            inner = [
                Word(w.text, None, node=w.node) if w.value is None or "{}" in w.value else w
                for w in args[i + 1 : j]
            ]
            if inner:
                saved, a.found = a.found, starts or [Word(".", ".", ".")]
                try:
                    a.simple(inner, [], [], depth)
                finally:
                    a.found = saved
            safe = False
            i = j + 1
            continue
        if v == "-delete":
            deletes = True
            safe = False
        elif v in ("-fprint", "-fprint0", "-fls", "-fprintf"):
            if i + 1 < len(args):
                a.path_argument(args[i + 1], WRITE)
            safe = False
            i += 3 if v == "-fprintf" else 2
            continue
        elif v in ("-newer", "-anewer", "-cnewer", "-samefile") or (
            v.startswith("-newer") and len(v) == 8
        ):
            if i + 1 < len(args):
                a.path_argument(args[i + 1], PATH)
            i += 2
            continue
        elif v in ("-files0-from",):
            if i + 1 < len(args):
                a.path_argument(args[i + 1], READ)
            i += 2
            continue
        i += 1
    for w in starts or [Word(".", ".", ".")]:
        a.path_argument(w, WRITE if deletes else PATH, recursive=True)
    return safe


def _s_tar(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    values = [w.value for w in args]
    if any(v is None for v in values):
        a.opaque("an argument of tar is not static")
        return False
    first = values[0] if values else ""
    assert first is not None
    letters = first.lstrip("-") if first and not first.startswith("--") else ""
    mode = ""
    longs = {v for v in values if v and v.startswith("--")}
    for ch in letters + "".join(v[1:] for v in values[1:] if v and re.fullmatch(r"-[A-Za-z]+", v)):
        if ch in "cxtrudA":
            mode = mode or ch
    for long, ch in (
        ("--create", "c"),
        ("--extract", "x"),
        ("--get", "x"),
        ("--list", "t"),
        ("--append", "r"),
        ("--update", "u"),
        ("--diff", "d"),
    ):
        if long in longs:
            mode = mode or ch
    if mode == "x":
        a.opaque("tar extracts files named inside the archive, which cannot be checked")
        return False
    if (
        any(
            v.startswith(
                (
                    "--to-command",
                    "--use-compress-program",
                    "--rsh-command",
                    "--info-script",
                    "--new-volume-script",
                    "--checkpoint-action",
                )
            )
            for v in longs
        )
        or "-I" in values
    ):
        a.opaque("tar runs a program given as an option")
        return False
    archive: str | None = None
    for k, v in enumerate(values):
        assert v is not None
        if v.startswith("--file="):
            archive = v.split("=", 1)[1]
        elif v in ("-f", "--file") and k + 1 < len(values):
            archive = values[k + 1]
        elif k == 0 and "f" in letters and len(values) > 1:
            archive = values[1]
    paths = [
        w
        for k, w in enumerate(args)
        if k > 0 and not (w.value or "").startswith("-") and w.value != archive
    ]
    if archive is not None and archive != "-":
        a.path_argument(Word(archive, archive), WRITE if mode in "cru" else READ)
    for w in paths:
        a.path_argument(w, READ if mode in "cru" else PATH, recursive=True)
    return mode in ("t", "d")


def _s_dd(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    for w in args:
        if w.value is None:
            a.opaque("an operand of dd is not static")
            return False
        key, eq, value = w.value.partition("=")
        if key == "if" and eq:
            a.path_argument(assigned_value(value), READ)
        elif key == "of" and eq:
            a.path_argument(assigned_value(value), WRITE)
    return False


def _s_git(a: Walker, name: str, args: list[Word], depth: int) -> bool:
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


def _s_sed(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    """sed: the files given are read (and written with ``-i``); the script's own ``w``/``W``
    writes and ``r``/``R`` reads are paths like any other; ``e`` runs commands (opaque)."""
    from hookcode_policy_shell.sed import read_script

    scripts: list[str | None] = []
    files: list[Word] = []
    in_place = sandbox = False
    k = 0
    done = False
    while k < len(args):
        w = args[k]
        v = w.value
        if done or v is None or v == "-" or not v.startswith("-"):
            files.append(w)
            k += 1
            continue
        if v == "--":
            done = True
        elif v in ("-e", "--expression"):
            scripts.append(args[k + 1].value if k + 1 < len(args) else None)
            k += 1
        elif v.startswith("--expression="):
            scripts.append(v.split("=", 1)[1])
        elif v in ("-f", "--file") or v.startswith("--file="):
            target = (
                v.split("=", 1)[1]
                if "=" in v
                else (args[k + 1].value if k + 1 < len(args) else None)
            )
            if "=" not in v:
                k += 1
            scripts.append(_script_file(a, target))
        elif v in ("-l", "--line-length"):
            k += 1
        elif v.startswith("--in-place") or (v.startswith("-i") and not v.startswith("--")):
            in_place = True
        elif v == "--sandbox":
            sandbox = True
        elif not v.startswith("--") and len(v) > 2:
            # a bundle of short options: -ne 'script', -i.bak is handled above, -nE
            letters = v[1:]
            if "i" in letters:
                in_place = True
            if letters.endswith("e"):
                scripts.append(args[k + 1].value if k + 1 < len(args) else None)
                k += 1
            elif letters.endswith("f"):
                scripts.append(_script_file(a, args[k + 1].value if k + 1 < len(args) else None))
                k += 1
        k += 1
    if not scripts and files:
        first = files.pop(0)
        scripts.append(first.value)
    safe = not in_place
    for script in scripts:
        found = read_script(script) if script is not None else None
        if found is None:
            a.opaque("a sed script that is not static or not understood can write files and run "
                     "commands")  # fmt: skip
            return False
        if found.runs and not sandbox:
            a.opaque("the sed script runs commands (e)")
            safe = False
        for path in [] if sandbox else found.writes:
            if path not in ("/dev/stdout", "/dev/stderr"):
                a.path_argument(Word(path, path), WRITE)
                safe = False
        for path in [] if sandbox else found.reads:
            a.path_argument(Word(path, path), READ)
    for w in files:
        if w.value != "-":
            a.path_argument(w, RW if in_place else READ)
    return safe and all(w.harmless for w in args)


def _script_file(a: Walker, path: str | None) -> str | None:
    """The text of a ``sed -f`` script (checked as a file read), or None when it cannot be
    read now."""
    if path is None:
        return None
    a.path_argument(Word(path, path), READ)
    full = os.path.join(a.places.cwds[0], path) if len(a.places.cwds) == 1 else None
    try:
        if full is None or os.path.getsize(full) > 1 << 16:
            return None
        with open(full, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _s_go(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    values = [w.value for w in args]
    if not values or any(v is None for v in values):
        return not values
    sub = values[0]
    unknown_program(a, args)
    if sub not in GO_READ_ONLY:
        return False
    return not any((v or "").split("=", 1)[0] in GO_UNSAFE_OPTIONS for v in values[1:])


def _s_assigning(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    """Builtins that assign the variables they name (read, mapfile, printf -v, getopts,
    wait -p): a sensitive or unknown name makes the command opaque."""
    values = [w.value for w in args]
    if any(v is None for v in values) and name != "printf":
        a.opaque(f"{name} with an argument that is not static may assign any variable")
        return False
    if name == "printf":
        k = 0
        if values and values[0] is None:
            a.opaque("printf with a first argument that is not static may assign any variable")
            return False
        while k < len(values) and (values[k] or "").startswith("-"):
            v = values[k] or ""
            if v == "--":
                break
            if v == "-v":
                target = values[k + 1] if k + 1 < len(values) else None
                if target is None:
                    a.opaque("printf -v with a name that is not static")
                    return False
                a.assigns(target, "printf -v")
                k += 2
                continue
            if v.startswith("-v"):
                a.assigns(v[2:], "printf -v")
            k += 1
        return True
    if name in ("mapfile", "readarray") and any((v or "").startswith("-C") for v in values):
        a.opaque(f"{name} -C runs a callback")
        return False
    names: list[str] = []
    skip = False
    for k, v in enumerate(values):
        assert v is not None
        if skip:
            skip = False
            if (name, values[k - 1]) in (("read", "-a"), ("wait", "-p")):
                names.append(v)
            continue
        if v.startswith("-"):
            skip = v in _TAKES_ARGUMENT.get(name, ())
            continue
        if name == "getopts":
            if k == 1:
                names.append(v)
            continue
        if name == "wait":
            continue
        names.append(v)
    for target in names:
        a.assigns(target, name)
    if name in ("read",) and not names:
        a.assigns("REPLY", name)
    return True


#: options of the assigning builtins that take an argument
_TAKES_ARGUMENT = {
    "read": ("-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"),
    "mapfile": ("-d", "-n", "-O", "-s", "-u", "-c"),
    "readarray": ("-d", "-n", "-O", "-s", "-u", "-c"),
    "wait": ("-p",),
}


def _s_opaque(reason: str) -> Any:
    def handler(a: Walker, name: str, args: list[Word], depth: int) -> bool:
        a.opaque(reason.format(name=name))
        return False

    return handler


def _s_enable(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    if args:
        a.opaque("enable loads or switches builtins, which changes what runs")
    return not args


def _s_hash(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    if any((w.value or "-p").startswith("-p") for w in args) or any(w.value is None for w in args):
        a.opaque("hash -p decides which program a name runs")
        return False
    return True


def _s_set(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    safe_letters = set("euxvfCETbmhnp")
    safe_o = {
        "errexit",
        "nounset",
        "pipefail",
        "xtrace",
        "verbose",
        "noglob",
        "noclobber",
        "errtrace",
        "functrace",
        "monitor",
        "notify",
    }
    k = 0
    while k < len(args):
        v = args[k].value
        if v is None:
            a.opaque("set with an argument that is not static")
            return False
        if v in ("--", "-"):
            break  # positional parameters follow
        if v in ("-o", "+o"):
            option = args[k + 1].value if k + 1 < len(args) else None
            if option is not None and option not in safe_o:
                a.opaque(f"set {v} {option} changes how the shell reads or runs commands")
                return False
            k += 2
            continue
        if v.startswith(("-", "+")):
            if not set(v[1:]) <= safe_letters:
                a.opaque(f"set {v} changes how the shell reads or runs commands")
                return False
            k += 1
            continue
        break
    return True


def _s_shopt(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    if any(w.value is None or w.value.startswith(("-s", "-u", "-o")) for w in args):
        a.opaque("shopt changes how the shell reads and expands commands")
        return False
    return True


def _s_let(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    for w in args:
        a.arithmetic_text(w.value if w.value is not None else "$", "let")
    return True


def _s_test(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    values = [w.value for w in args]
    for k, v in enumerate(values):
        if v in ("-v", "-R"):
            target = values[k + 1] if k + 1 < len(values) else None
            if target is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", target):
                a.opaque(f"{name} {v} evaluates a subscript or a name that is not static")
    return by_spec(a, name, SPECS[name], args)


def _s_trap(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    if args:
        action = args[0]
        if action.value is None:
            a.opaque("trap with an action that is not static")
        elif not action.value.startswith("-"):
            a.source(action.value, depth + 1)
    return False


def _s_alias(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    for w in args:
        if w.value is not None and "=" in w.value:
            a.opaque("defines an alias")
            a.source(w.value.split("=", 1)[1], depth + 1)
        elif w.value is None:
            a.opaque("defines an alias")
    return not args


def _s_source(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    if args:
        a.path_argument(args[0], READ)
    return False


def _s_complete(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    for w in args:
        if w.value is None or w.value.startswith(("-C", "-F")):
            a.opaque(f"{name} -C/-F runs a command or a function")
            return False
    return True


def _s_cd(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    return True


_SPECIAL: dict[str, Any] = {
    "find": _s_find,
    "tar": _s_tar,
    "dd": _s_dd,
    "git": _s_git,
    "go": _s_go,
    "sed": _s_sed,
    "read": _s_assigning,
    "mapfile": _s_assigning,
    "readarray": _s_assigning,
    "printf": _s_assigning,
    "getopts": _s_assigning,
    "wait": _s_assigning,
    "enable": _s_enable,
    "hash": _s_hash,
    "set": _s_set,
    "shopt": _s_shopt,
    "let": _s_let,
    "test": _s_test,
    "[": _s_test,
    "trap": _s_trap,
    "alias": _s_alias,
    "source": _s_source,
    ".": _s_source,
    "complete": _s_complete,
    "compgen": _s_complete,
    "fc": _s_opaque("fc runs commands from the history"),
    "bind": _s_opaque("bind can run commands on key presses"),
    "cd": _s_cd,
    "pushd": _s_cd,
    "popd": _s_cd,
    "declare": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "typeset": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "export": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "local": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "readonly": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "unset": _s_opaque("{name} with arguments the parser did not read as such"),
}
