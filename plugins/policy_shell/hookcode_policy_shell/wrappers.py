"""Wrappers: commands that run another command (sudo, env, timeout, nice, xargs, watch, ...)
and the shells and ``eval`` whose strings are parsed as commands. Each handler returns (index
of the wrapped command's name, flags), None when the wrapper runs nothing else (it is the
command itself), or :data:`DONE` when it handled everything."""

from __future__ import annotations

import re
from typing import Any

from hookcode_policy_shell.commands import READ, WRITE
from hookcode_policy_shell.nodes import REDIRECTS
from hookcode_policy_shell.nodes import operator as _operator
from hookcode_policy_shell.nodes import text as _text
from hookcode_policy_shell.walker import Walker
from hookcode_policy_shell.words import (
    Word,
    double_quoted_problem,
    heredoc_body_problem,
    heredoc_delimiter,
    unescape_double,
    unescape_word,
    unquoted_problem,
)

__all__ = ["DONE", "WRAPPERS"]

#: shells whose ``-c`` string (or standard input) is parsed with the bash grammar
PARSED_SHELLS = frozenset(["bash", "sh", "dash", "ash"])
#: shells with a grammar of their own: a string they run is opaque
OTHER_SHELLS = frozenset(
    ["zsh", "ksh", "ksh93", "mksh", "pdksh", "fish", "csh", "tcsh", "nu", "xonsh", "elvish",
     "pwsh", "powershell", "busybox", "yash", "oksh", "rc", "es"]
)  # fmt: skip


DONE: Any = object()


def _options(
    a: Walker,
    words: list[Word],
    name: str,
    *,
    flags: str = "",
    with_arg: str = "",
    long_flags: frozenset[str] = frozenset(),
    long_with_arg: frozenset[str] = frozenset(),
) -> tuple[int, list[tuple[str, str | None]]] | None:
    """Index of the first word after ``name``'s options, and the options seen. Every option
    must be known: ``flags`` (short, no argument), ``with_arg`` (short, with one),
    ``long_flags``, ``long_with_arg``. An unknown or dynamic option makes the command opaque
    (None): a wrong guess about which word is the wrapped command would let it pass unseen."""
    seen: list[tuple[str, str | None]] = []
    i = 1
    while i < len(words):
        v = words[i].value
        if v is None:
            a.opaque(f"an option of {name} is not static")
            return None
        if v == "--":
            return i + 1, seen
        if not v.startswith("-") or v == "-":
            return i, seen
        if v.startswith("--"):
            key, eq, attached = v.partition("=")
            if key in long_with_arg:
                if eq:
                    seen.append((key, attached))
                else:
                    seen.append((key, words[i + 1].value if i + 1 < len(words) else None))
                    i += 1
            elif key in long_flags and not eq:
                seen.append((key, None))
            else:
                a.opaque(f"{name} option {v} is not understood")
                return None
            i += 1
            continue
        j = 1
        consumed = False
        while j < len(v):
            ch = v[j]
            if ch in with_arg:
                rest = v[j + 1 :]
                if rest:
                    seen.append(("-" + ch, rest))
                else:
                    seen.append(("-" + ch, words[i + 1].value if i + 1 < len(words) else None))
                    consumed = True
                break
            if ch in flags:
                seen.append(("-" + ch, None))
                j += 1
                continue
            if name == "nice" and v[1:].isdigit():
                seen.append(("-n", v[1:]))
                break
            a.opaque(f"{name} option {v} is not understood")
            return None
        i += 2 if consumed else 1
    return i, seen


def _w_sudo(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(
        a,
        words,
        "sudo",
        flags="AbEHnPSkKlvVBNsi",
        with_arg="ugCDhprtTUR",
        long_flags=frozenset(
            {
                "--askpass",
                "--background",
                "--preserve-env",
                "--set-home",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--reset-timestamp",
                "--remove-timestamp",
                "--list",
                "--validate",
                "--version",
                "--bell",
                "--login",
                "--shell",
                "--edit",
                "--help",
            }
        ),
        long_with_arg=frozenset(
            {
                "--user",
                "--group",
                "--host",
                "--prompt",
                "--chdir",
                "--role",
                "--type",
                "--other-user",
                "--close-from",
                "--command-timeout",
                "--chroot",
            }
        ),
    )
    if got is None:
        return None
    i, seen = got
    names = {option for option, _ in seen}
    if names & {"-e", "--edit"}:
        a.opaque("sudo -e edits files as another user")
        return None
    if names & {"-l", "--list", "-v", "--validate", "-k", "-K", "-V", "--version", "--help"}:
        return None
    if names & {"-D", "--chdir", "-R", "--chroot"}:
        a.opaque("sudo changes directory or root before running the command")
    if names & {"-s", "-i", "--shell", "--login"}:
        if i < len(words):
            return _as_shell_string(a, words, i, depth)
        a.opaque("sudo runs an interactive shell")
        return None
    return (i, {"outer"})


def _w_doas(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(a, words, "doas", flags="ns", with_arg="uC")
    if got is None:
        return None
    i, seen = got
    if any(option in ("-s", "-C") for option, _ in seen):
        a.opaque("doas -s/-C runs a shell or checks a config")
        return None
    return (i, {"outer"})


def _as_shell_string(a: Walker, words: list[Word], start: int, depth: int) -> Any:
    """The rest of the words joined and run by a shell (``sudo -s``, ``watch``)."""
    rest = words[start:]
    if any(w.value is None for w in rest):
        a.opaque("a command run through a shell is not static")
        a.simple(rest, [], [], depth)
        return DONE
    a.source(" ".join(w.value or "" for w in rest), depth + 1)
    return DONE


def _w_env(a: Walker, words: list[Word], depth: int) -> Any:
    i = 1
    flags: set[str] = set()
    while i < len(words):
        w = words[i]
        v = w.value
        if v is None:
            a.opaque("an argument of env is not static")
            return None
        if v == "--":
            i += 1
            continue
        if v in ("-i", "-0", "-v", "--ignore-environment", "--null", "--debug", "-"):
            flags.add("outer")
            i += 1
            continue
        if v in ("-u", "--unset"):
            flags.add("outer")
            i += 2
            continue
        if v.startswith(("--unset=", "-u")):
            flags.add("outer")
            i += 1
            continue
        if v in ("-S", "--split-string") or v.startswith(("--split-string=", "-S")):
            if v in ("-S", "--split-string"):
                string = words[i + 1] if i + 1 < len(words) else None
                rest = words[i + 2 :]
                text = string.value if string is not None else ""
            else:
                text = v.split("=", 1)[1] if v.startswith("--") else v[2:]
                rest = words[i + 1 :]
            if text is None or any(x.value is None for x in rest):
                a.opaque("env -S with a string that is not static")
                return DONE
            a.source(" ".join([text, *(x.value or "" for x in rest)]), depth + 1)
            return DONE
        if v.startswith("-"):
            a.opaque(f"env option {v} is not understood")
            return None
        if "=" in v:
            name = v.split("=", 1)[0]
            if name in ("PATH", "BASH_ENV", "ENV") or not re.fullmatch(r"\w+", name):
                a.opaque(f"env {name}=... changes which program the command runs")
            flags.add("outer")
            i += 1
            continue
        break
    return (i, flags)


def _w_plain(
    name: str,
    flags: str = "",
    with_arg: str = "",
    long_flags: frozenset[str] = frozenset(),
    long_with_arg: frozenset[str] = frozenset(),
) -> Any:
    def handler(a: Walker, words: list[Word], depth: int) -> Any:
        got = _options(
            a,
            words,
            name,
            flags=flags,
            with_arg=with_arg,
            long_flags=long_flags,
            long_with_arg=long_with_arg,
        )
        return None if got is None else (got[0], set())

    return handler


def _w_timeout(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(
        a,
        words,
        "timeout",
        flags="v",
        with_arg="sk",
        long_flags=frozenset({"--preserve-status", "--foreground", "--verbose"}),
        long_with_arg=frozenset({"--signal", "--kill-after"}),
    )
    if got is None:
        return None
    return (got[0] + 1, set())  # the duration


def _w_time(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(
        a,
        words,
        "time",
        flags="pavq",
        with_arg="fo",
        long_flags=frozenset({"--portability", "--append", "--verbose", "--quiet"}),
        long_with_arg=frozenset({"--format", "--output"}),
    )
    if got is None:
        return None
    i, seen = got
    for option, value in seen:
        if option in ("-o", "--output"):
            a.path_argument(Word(value or "", value), WRITE)
    return (i, set())


def _w_command(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(a, words, "command", flags="pvV")
    if got is None:
        return None
    i, seen = got
    if any(option in ("-v", "-V") for option, _ in seen):
        return None  # a look-up, nothing runs
    return (i, set())


def _w_exec(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(a, words, "exec", flags="cl", with_arg="a")
    if got is None:
        return None
    return (got[0], set())


def _w_xargs(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(
        a,
        words,
        "xargs",
        flags="0prtxo",
        with_arg="adEeIiLlnPs",
        long_flags=frozenset(
            {
                "--null",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--open-tty",
                "--show-limits",
            }
        ),
        long_with_arg=frozenset(
            {
                "--arg-file",
                "--delimiter",
                "--eof",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
                "--replace",
            }
        ),
    )
    if got is None:
        return None
    i, seen = got
    replace: str | None = None
    for option, value in seen:
        if option in ("-I", "-i", "--replace"):
            replace = value or "{}"
        elif option in ("-a", "--arg-file"):
            a.path_argument(Word(value or "", value), READ)
        elif option == "--process-slot-var" and value is not None:
            a.assigns(value, "xargs --process-slot-var")
    if i >= len(words):
        return None
    if replace is None:
        return (i, {"tail"})
    for j in range(i, len(words)):
        if words[j].value is None or replace in (words[j].value or ""):
            words[j] = Word(words[j].text, None, "", words[j].node)
    return (i, set())


#: single-letter shell options that change nothing about how commands are read or what runs
SAFE_SHELL_LETTERS = frozenset("euxvnCabhmPTr")
#: ``-o`` options of the same kind
SAFE_SHELL_OPTIONS = frozenset(
    ["errexit", "nounset", "pipefail", "xtrace", "verbose", "noclobber", "noexec", "errtrace",
     "functrace"]
)  # fmt: skip


def _shell_options(words: list[Word], name: str) -> tuple[int, bool, bool, str | None]:
    """(index after the options, whether ``-c`` was given, whether ``-s`` was, the problem
    with an option: one that reads start-up files, changes how the shell reads commands or
    is not static)."""
    i = 1
    has_c = has_s = False
    problem: str | None = None
    while i < len(words):
        v = words[i].value
        if v is None:
            return i, has_c, has_s, f"an option of {name} is not static"
        if v in ("--", "-"):
            return i + 1, has_c, has_s, problem
        if v in ("-o", "+o"):
            option = words[i + 1].value if i + 1 < len(words) else None
            if option not in SAFE_SHELL_OPTIONS:
                problem = f"{name} {v} {option}: a shell option that changes how it runs"
            i += 2
            continue
        if v in ("--norc", "--noprofile", "--noediting", "--restricted"):
            i += 1
            continue
        if v.startswith("--") or v in ("-O", "+O"):
            problem = f"{name} {v}: an option that reads start-up files or changes parsing"
            i += 2 if v in ("-O", "+O", "--rcfile", "--init-file") else 1
            continue
        if v.startswith(("-", "+")):
            for ch in v[1:]:
                if ch == "c":
                    has_c = True
                elif ch == "s":
                    has_s = True
                elif ch not in SAFE_SHELL_LETTERS:
                    problem = (
                        f"{name} -{ch}: an option that reads start-up files or changes how "
                        "commands are read"
                    )
            i += 1
            continue
        return i, has_c, has_s, problem
    return i, has_c, has_s, problem


def _w_shell(a: Walker, words: list[Word], depth: int) -> Any:
    """``bash -c STRING``: the string is parsed; a script file is the command itself;
    commands read from a here-document or here-string are parsed; anything else is opaque.
    A shell with a grammar of its own, or an option that reads start-up files or changes
    parsing, makes the command opaque; the string is still parsed, for deny rules."""
    name = (words[0].value or "").rpartition("/")[2]
    i, has_c, has_s, problem = _shell_options(words, name)
    if name in OTHER_SHELLS:
        problem = f"{name} has a grammar of its own: what it runs is not analysed"
    if problem is not None:
        a.opaque(problem)
    if has_c:
        if i >= len(words):
            return None
        string = words[i]
        if string.value is None:
            a.opaque(f"{name} -c with a string that is not static")
            return DONE
        a.source(string.value, depth + 1)
        return DONE
    if i < len(words) and not has_s:
        a.path_argument(words[i], READ)
        return None  # a script: the command is `bash script.sh ...`, judged as such
    bodies = _stdin_bodies(a, words)
    if bodies is None:
        a.opaque(f"{name} reads commands from its standard input")
        return DONE
    for body in bodies:
        a.source(body, depth + 1)
    return DONE


def _stdin_bodies(a: Walker, words: list[Word]) -> list[str] | None:
    node = words[0].node
    command = node.parent if node is not None else None
    while command is not None and command.type != "command":
        command = command.parent
    if command is None:
        return None
    redirects = [c for c in command.children if c.type in REDIRECTS]
    parent = command.parent
    if parent is not None and parent.type == "redirected_statement":
        redirects += [c for c in parent.children if c.type in REDIRECTS]
    bodies: list[str] = []
    for r in redirects:
        if r.type == "herestring_redirect":
            target = r.named_children[-1] if r.named_children else None
            value = _static_text(target) if target is not None else None
            if value is None:
                a.opaque("a here-string that is not static is fed to a shell")
                return None
            bodies.append(value)
        elif r.type == "heredoc_redirect":
            start = next((c for c in r.children if c.type == "heredoc_start"), None)
            parsed = heredoc_delimiter(_text(start)) if start is not None else None
            for child in r.named_children:
                if child.type == "heredoc_body":
                    if parsed is None or (not parsed[1] and heredoc_body_problem(_text(child))):
                        a.opaque("a here-document with expansions is fed to a shell")
                        return None
                    body = _text(child)
                    bodies.append(body if parsed[1] else unescape_double(body))
        elif r.type == "file_redirect" and _operator(r) == "<":
            return None
    return bodies or None


def _w_coproc(a: Walker, words: list[Word], depth: int) -> Any:
    """``coproc``: the parser does not read its forms the way bash does (a NAME, a compound
    command): opaque, and what follows is still judged as a command."""
    a.opaque("coproc runs a command the parser does not read the way bash does")
    return (1, set()) if len(words) > 1 else None


def _w_eval(a: Walker, words: list[Word], depth: int) -> Any:
    rest = words[1:]
    if not rest:
        return None
    if any(w.value is None for w in rest):
        a.opaque("eval of a string that is not static")
        return DONE
    a.source(" ".join(w.value or "" for w in rest), depth + 1)
    return DONE


def _w_watch(a: Walker, words: list[Word], depth: int) -> Any:
    got = _options(
        a,
        words,
        "watch",
        flags="bcdegtwpx",
        with_arg="nq",
        long_flags=frozenset(
            {
                "--beep",
                "--color",
                "--no-color",
                "--differences",
                "--errexit",
                "--chgexit",
                "--no-title",
                "--no-wrap",
                "--precise",
                "--exec",
            }
        ),
        long_with_arg=frozenset({"--interval", "--equexit"}),
    )
    if got is None:
        return None
    i, seen = got
    if i >= len(words):
        return None
    if any(option in ("-x", "--exec") for option, _ in seen):
        return (i, set())
    return _as_shell_string(a, words, i, depth)


WRAPPERS: dict[str, Any] = {
    "sudo": _w_sudo,
    "doas": _w_doas,
    "env": _w_env,
    "nohup": _w_plain("nohup"),
    "timeout": _w_timeout,
    "nice": _w_plain("nice", with_arg="n", long_with_arg=frozenset({"--adjustment"})),
    "time": _w_time,
    "command": _w_command,
    "exec": _w_exec,
    "builtin": _w_plain("builtin"),
    "stdbuf": _w_plain(
        "stdbuf", with_arg="ioe", long_with_arg=frozenset({"--input", "--output", "--error"})
    ),
    "ionice": _w_plain(
        "ionice",
        flags="tu",
        with_arg="cn",
        long_flags=frozenset({"--ignore"}),
        long_with_arg=frozenset({"--class", "--classdata"}),
    ),
    "setsid": _w_plain("setsid", flags="cfw", long_flags=frozenset({"--ctty", "--fork", "--wait"})),
    "coproc": _w_coproc,
    "xargs": _w_xargs,
    "watch": _w_watch,
    "eval": _w_eval,
    **dict.fromkeys(PARSED_SHELLS | OTHER_SHELLS, _w_shell),
}


def _static_text(node: Any) -> str | None:
    """The value of a quoted or plain word node with nothing to expand, else None."""
    text = _text(node)
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "word" and unquoted_problem(text) is None:
        return unescape_word(text)[0]
    plain = all(c.type in ('"', "string_content") for c in node.children)
    if node.type == "string" and plain and double_quoted_problem(text[1:-1]) is None:
        return unescape_double(text[1:-1])
    return None
