"""Shell builtins with semantics of their own: those that assign the variables they name
(``read``, ``mapfile``, ``printf -v``, ``getopts``, ``wait -p``), evaluate arithmetic (``let``),
change how the shell finds or reads commands (``enable``, ``hash``, ``set``, ``shopt``), run
strings (``trap``, ``alias``, ``complete -C``) or files (``source``). Each returns whether the
command only reads."""

from __future__ import annotations

from typing import Any

from hookcode_policy_shell.commands import READ
from hookcode_policy_shell.walker import Walker
from hookcode_policy_shell.words import Word

__all__ = ["BUILTINS"]


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


BUILTINS: dict[str, Any] = {
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
    "trap": _s_trap,
    "alias": _s_alias,
    "source": _s_source,
    ".": _s_source,
    "complete": _s_complete,
    "compgen": _s_complete,
    "fc": _s_opaque("fc runs commands from the history"),
    "bind": _s_opaque("bind can run commands on key presses"),
    "declare": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "typeset": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "export": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "local": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "readonly": _s_opaque("{name} with arguments the parser did not read as a declaration"),
    "unset": _s_opaque("{name} with arguments the parser did not read as such"),
}
