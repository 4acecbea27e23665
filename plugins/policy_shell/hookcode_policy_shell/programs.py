"""Commands with semantics of their own: how each uses its arguments (by :mod:`.commands`'
specs, or by a handler here: find, tar, dd, git, go, and the builtins that assign, evaluate or
change how the shell reads), what they run, and whether they only read."""

from __future__ import annotations

import re
from typing import Any

from hookcode_policy_shell.commands import (
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
from hookcode_policy_shell.git import judge_git
from hookcode_policy_shell.paths import SPECIAL_FILES
from hookcode_policy_shell.sed import judge_sed
from hookcode_policy_shell.shell_builtins import BUILTINS
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


def _s_go(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    values = [w.value for w in args]
    if not values or any(v is None for v in values):
        return not values
    sub = values[0]
    unknown_program(a, args)
    if sub not in GO_READ_ONLY:
        return False
    return not any((v or "").split("=", 1)[0] in GO_UNSAFE_OPTIONS for v in values[1:])


def _s_test(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    values = [w.value for w in args]
    for k, v in enumerate(values):
        if v in ("-v", "-R"):
            target = values[k + 1] if k + 1 < len(values) else None
            if target is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", target):
                a.opaque(f"{name} {v} evaluates a subscript or a name that is not static")
    return by_spec(a, name, SPECS[name], args)


def _s_cd(a: Walker, name: str, args: list[Word], depth: int) -> bool:
    return True


_SPECIAL: dict[str, Any] = {
    **BUILTINS,
    "find": _s_find,
    "tar": _s_tar,
    "dd": _s_dd,
    "git": judge_git,
    "go": _s_go,
    "sed": judge_sed,
    "test": _s_test,
    "[": _s_test,
    "cd": _s_cd,
    "pushd": _s_cd,
    "popd": _s_cd,
}
