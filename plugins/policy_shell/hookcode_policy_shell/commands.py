"""What the analyser knows about particular commands: which variables change what runs, which
arguments name files that are read or written, and which commands are read-only.

Most of this module is one table (:data:`SPECS`, about seventy commands): it is kept whole,
over the usual size of a module, so that a command's knowledge is found in one place.

The analyser (:mod:`hookcode_policy_shell.analyze`) is sound without this module: a command it
knows nothing about is still a pattern the rules judge. What this knowledge adds is precision:
paths checked against the project and the ``read`` rules, files written checked against the
protected paths, and the read-only commands the built-in agents allow by default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hookcode_policy_shell import READ_ONLY_GIT, READ_ONLY_NAMES

__all__ = [
    "READ_ONLY",
    "SPECS",
    "Spec",
    "sensitive_variable",
]

# ---------------------------------------------------------------------------------------------
# variables
# ---------------------------------------------------------------------------------------------

#: variables whose value decides which program runs, what code a program loads, or how the
#: shell itself reads and expands the rest of the command
SENSITIVE_NAMES = frozenset(
    [
        "PATH",
        "HOME",
        "ENV",
        "BASH_ENV",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "SHELLOPTS",
        "BASHOPTS",
        "POSIXLY_CORRECT",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_LOADABLES_PATH",
        "EXECIGNORE",
        "INPUTRC",
        "HISTFILE",
        "BASH_XTRACEFD",
        "BASH_COMPAT",
        "TMPDIR",
        "SHELL",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "BROWSER",
        "LESSOPEN",
        "LESSCLOSE",
        "LESSKEY",
        "LESSKEYIN",
        "LESS",
        "SUDO_ASKPASS",
        "SSH_ASKPASS",
        "SSH_AUTH_SOCK",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYLIB",
        "RUBYOPT",
        "GEM_HOME",
        "GEM_PATH",
        "BUNDLE_GEMFILE",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
        "GOFLAGS",
        "GOENV",
        "GOTOOLCHAIN",
        "GOPATH",
        "GOBIN",
        "GOROOT",
        "GOPROXY",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTDOC",
        "RUSTFLAGS",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "RUSTUP_TOOLCHAIN",
        "MAKEFLAGS",
        "MAKEFILES",
        "MFLAGS",
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "AS",
        "CFLAGS",
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "LIBS",
        "PKG_CONFIG_PATH",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_HOME",
        "XDG_DATA_DIRS",
        "XDG_RUNTIME_DIR",
        "GNUPGHOME",
        "EMACSLOADPATH",
        "VIMINIT",
        "EXINIT",
        "MYVIMRC",
        "ZDOTDIR",
        "TERMINFO",
        "TERMINFO_DIRS",
        "LUA_PATH",
        "LUA_CPATH",
        "LUA_INIT",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PROMPT_COMMAND",
    ]
)
#: prefixes of such variables (dynamic linker, interpreters, git, package managers, ours)
SENSITIVE_PREFIXES = (
    "LD_",
    "DYLD_",
    "PYTHON",
    "GIT_",
    "BASH_FUNC_",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "PNPM_",
    "PIP_",
    "PIPX_",
    "UV_",
    "POETRY_",
    "CARGO_",
    "HOOKCODE_",
    "DOCKER_",
    "KUBECONFIG",
    "LUA_INIT",
    "PERL",
    "RUBY",
    "JAVA",
)
#: well-known members of those families that change nothing about what runs
HARMLESS = frozenset(
    [
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONHASHSEED",
        "PYTHONFAULTHANDLER",
        "PYTHONWARNINGS",
        "PYTHONNOUSERSITE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
        "GIT_MERGE_AUTOEDIT",
        "GIT_OPTIONAL_LOCKS",
    ]
)


def sensitive_variable(name: str) -> bool:
    """Whether assigning ``name`` may change which program runs or what code runs (so the
    assignment is not something the rules can see through). Names that are not plain
    identifiers (``a[i]``: the subscript is evaluated) count as sensitive."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return True
    if name in HARMLESS:
        return False
    return name in SENSITIVE_NAMES or name.startswith(SENSITIVE_PREFIXES)


# ---------------------------------------------------------------------------------------------
# argument roles
# ---------------------------------------------------------------------------------------------

#: what an argument is to a command
READ = "read"  # a file whose contents the command shows or copies (read rules, outside check)
PATH = "path"  # a file or directory it names (outside check)
WRITE = "write"  # a file it creates, changes or deletes (outside check, protected paths)
RW = "rw"  # read and written (``sed -i``, ``mv``'s sources)
NONE = "none"  # not a path (a pattern, a mode, a number)


@dataclass(frozen=True)
class Spec:
    """How a command uses its arguments.

    ``positional`` is the role of the non-option arguments; ``first``/``last`` override it for
    the first one and (with at least two) the last one. ``options`` maps an option to the role
    of its argument (``NONE`` for one that takes a value that is not a path); an option not
    listed takes no argument. ``pattern_options``: options that supply the pattern, so the
    first positional is then a path too (``grep -e x file``). ``recursive``: options that make
    directory arguments read recursively (``grep -r``); ``always_recursive``: it always does.
    ``unsafe``: options that make the command write or run something (it is then not
    read-only); ``writes_unknown``: options (or ``"*"``: always) with which it writes files
    named in its input, which the analysis cannot see (opaque)."""

    positional: str = PATH
    first: str | None = None
    last: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    pattern_options: frozenset[str] = frozenset()
    recursive: frozenset[str] = frozenset()
    always_recursive: bool = False
    unsafe: frozenset[str] = frozenset()
    writes_unknown: frozenset[str] = frozenset()
    #: options whose argument is a program or command line the command runs
    runs: frozenset[str] = frozenset()
    #: options that make it rewrite the files it is given (``gawk -i inplace``)
    in_place: frozenset[str] = frozenset()


def _opts(role: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, role)


_HEAD = Spec(READ, options=_opts(NONE, "-n", "-c", "--lines", "--bytes"))
_GREP = Spec(
    READ,
    first=NONE,
    options={
        **_opts(
            NONE,
            "-e",
            "--regexp",
            "-m",
            "--max-count",
            "-A",
            "-B",
            "-C",
            "--after-context",
            "--before-context",
            "--context",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--label",
            "--color",
            "--colour",
            "-d",
            "--directories",
            "-D",
            "--devices",
            "--binary-files",
            "--group-separator",
        ),
        **_opts(READ, "-f", "--file", "--exclude-from"),
    },
    pattern_options=frozenset({"-e", "--regexp", "-f", "--file"}),
    recursive=frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
)
_RG = Spec(
    READ,
    first=NONE,
    options={
        **_opts(
            NONE,
            "-e",
            "--regexp",
            "-m",
            "--max-count",
            "-A",
            "-B",
            "-C",
            "-g",
            "--glob",
            "--iglob",
            "-t",
            "--type",
            "-T",
            "--type-not",
            "--type-add",
            "-M",
            "--max-columns",
            "--max-depth",
            "-d",
            "--max-filesize",
            "-j",
            "--threads",
            "--color",
            "--colors",
            "--sort",
            "--sortr",
            "-E",
            "--encoding",
            "-r",
            "--replace",
            "--context-separator",
            "--field-match-separator",
            "--path-separator",
            "--dfa-size-limit",
            "--regex-size-limit",
            "--engine",
            "--hostname-bin",
            "--hyperlink-format",
            "--pre-glob",
            "-V",
        ),
        **_opts(READ, "-f", "--file", "--ignore-file"),
        **_opts(PATH, "--pre"),
    },
    pattern_options=frozenset({"-e", "--regexp", "-f", "--file"}),
    always_recursive=True,
    unsafe=frozenset({"--pre", "--hostname-bin"}),
    runs=frozenset({"--pre", "--hostname-bin"}),
)
_CHMOD = Spec(WRITE, first=NONE, options=_opts(READ, "--reference"))

SPECS: dict[str, Spec] = {
    # readers of contents
    **dict.fromkeys(
        [
            "cat",
            "tac",
            "nl",
            "more",
            "wc",
            "strings",
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "cksum",
            "sum",
            "base64",
            "base32",
            "fold",
            "fmt",
            "expand",
            "unexpand",
            "rev",
            "paste",
            "comm",
            "join",
            "zcat",
            "bzcat",
            "xzcat",
            "zstdcat",
            "diff",
            "cmp",
            "sdiff",
            "column",
            "hexdump",
            "od",
        ],
        # an option value these take is checked as a path too: over-checking is safe,
        # taking a path for an option's value would not be
        Spec(READ),
    ),
    "head": _HEAD,
    "tail": Spec(
        READ,
        options=_opts(
            NONE,
            "-n",
            "-c",
            "--lines",
            "--bytes",
            "--pid",
            "-s",
            "--sleep-interval",
            "--max-unchanged-stats",
        ),
    ),
    "less": Spec(
        READ,
        options={
            **_opts(NONE, "-b", "-h", "-j", "-k", "-p", "-P", "-t", "-T", "-x", "-y", "-z", "-#"),
            **_opts(WRITE, "-o", "-O"),
        },
        unsafe=frozenset({"-o", "-O", "--log-file", "--LOG-FILE"}),
    ),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "ag": Spec(
        READ,
        first=NONE,
        always_recursive=True,
        options=_opts(
            NONE, "-G", "--file-search-regex", "--ignore", "-m", "-A", "-B", "-C", "--depth"
        ),
    ),
    "ack": Spec(READ, first=NONE, always_recursive=True, options=_opts(NONE, "--type", "-m")),
    "sort": Spec(
        READ,
        options={
            **_opts(
                NONE,
                "-k",
                "--key",
                "-t",
                "--field-separator",
                "-S",
                "--buffer-size",
                "--parallel",
                "--batch-size",
            ),
            **_opts(WRITE, "-o", "--output"),
            **_opts(PATH, "-T", "--temporary-directory", "--compress-program"),
            **_opts(READ, "--files0-from"),
        },
        unsafe=frozenset({"-o", "--output", "--compress-program"}),
        runs=frozenset({"--compress-program"}),
    ),
    "uniq": Spec(
        READ,
        last=WRITE,
        options=_opts(NONE, "-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"),
    ),
    "cut": Spec(
        READ,
        options=_opts(
            NONE,
            "-b",
            "-c",
            "-d",
            "-f",
            "--bytes",
            "--characters",
            "--delimiter",
            "--fields",
            "--output-delimiter",
        ),
    ),
    "tr": Spec(NONE),
    "jq": Spec(
        READ,
        first=NONE,
        options={
            **_opts(NONE, "--arg", "--argjson", "--indent", "--tab", "-L"),
            **_opts(READ, "-f", "--from-file", "--slurpfile", "--rawfile"),
        },
        pattern_options=frozenset({"-f", "--from-file"}),
    ),
    "file": Spec(
        READ,
        options=_opts(READ, "-m", "--magic-file", "-f", "--files-from"),
        unsafe=frozenset({"-C", "--compile"}),
    ),
    "awk": Spec(
        READ,
        first=NONE,
        options={
            **_opts(NONE, "-F", "-v", "--assign", "-i", "--include", "-l", "--load"),
            **_opts(READ, "-f", "--file"),
        },
        pattern_options=frozenset({"-f", "--file"}),
        in_place=frozenset({"-i", "--include"}),
        runs=frozenset({"-l", "--load"}),
    ),
    # names of files and directories
    "ls": Spec(
        PATH,
        options=_opts(
            NONE,
            "-w",
            "--width",
            "-I",
            "--ignore",
            "--hide",
            "-T",
            "--tabsize",
            "--block-size",
            "--color",
            "--format",
            "--sort",
            "--time",
            "--time-style",
            "--quoting-style",
            "--indicator-style",
        ),
    ),
    "stat": Spec(PATH, options=_opts(NONE, "-c", "--format", "--printf")),
    "du": Spec(
        PATH,
        options={
            **_opts(
                NONE,
                "-d",
                "--max-depth",
                "-B",
                "--block-size",
                "--exclude",
                "-t",
                "--threshold",
                "--time-style",
            ),
            **_opts(READ, "--files0-from", "-X", "--exclude-from"),
        },
    ),
    "tree": Spec(
        PATH,
        options={
            **_opts(NONE, "-L", "-P", "-I", "--filelimit", "--timefmt", "--charset", "--sort"),
            **_opts(WRITE, "-o"),
        },
        unsafe=frozenset({"-o"}),
    ),
    "realpath": Spec(PATH, options=_opts(PATH, "--relative-to", "--relative-base")),
    "readlink": Spec(PATH),
    "basename": Spec(NONE, options=_opts(NONE, "-s", "--suffix")),
    "dirname": Spec(NONE),
    "pwd": Spec(NONE),
    "echo": Spec(NONE),
    "printf": Spec(NONE),
    "test": Spec(PATH),
    "[": Spec(PATH),
    "which": Spec(NONE),
    "type": Spec(NONE),
    "whereis": Spec(NONE),
    "whatis": Spec(NONE),
    "date": Spec(
        NONE,
        options={
            **_opts(NONE, "-d", "--date", "-I", "--iso-8601", "--rfc-3339"),
            **_opts(READ, "-f", "--file", "-r", "--reference"),
        },
        unsafe=frozenset({"-s", "--set"}),
    ),
    "hostname": Spec(NONE, unsafe=frozenset({"-F", "--file", "-b", "--boot"})),
    # writers
    "rm": Spec(WRITE, recursive=frozenset({"-r", "-R", "--recursive"})),
    "rmdir": Spec(WRITE),
    "unlink": Spec(WRITE),
    "shred": Spec(WRITE, options=_opts(NONE, "-n", "--iterations", "-s", "--size")),
    "truncate": Spec(
        WRITE, options={**_opts(NONE, "-s", "--size"), **_opts(READ, "-r", "--reference")}
    ),
    "touch": Spec(
        WRITE, options={**_opts(NONE, "-d", "--date", "-t"), **_opts(READ, "-r", "--reference")}
    ),
    "mkdir": Spec(WRITE, options=_opts(NONE, "-m", "--mode")),
    "mkfifo": Spec(WRITE, options=_opts(NONE, "-m", "--mode")),
    "chmod": _CHMOD,
    "chown": _CHMOD,
    "chgrp": _CHMOD,
    "tee": Spec(WRITE),
    "cp": Spec(
        READ,
        last=WRITE,
        options={
            **_opts(WRITE, "-t", "--target-directory"),
            **_opts(NONE, "-S", "--suffix", "--backup"),
        },
        recursive=frozenset({"-r", "-R", "--recursive", "-a", "--archive"}),
    ),
    "mv": Spec(
        RW,
        last=WRITE,
        options={
            **_opts(WRITE, "-t", "--target-directory"),
            **_opts(NONE, "-S", "--suffix", "--backup"),
        },
    ),
    "install": Spec(
        READ,
        last=WRITE,
        options={
            **_opts(WRITE, "-t", "--target-directory"),
            **_opts(NONE, "-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"),
        },
    ),
    "ln": Spec(READ, last=WRITE, options=_opts(WRITE, "-t", "--target-directory")),
    "dd": Spec(NONE),
    # writers of files named inside their input: nobody can see which
    "patch": Spec(READ, writes_unknown=frozenset({"*"})),
    "unzip": Spec(READ, writes_unknown=frozenset({"*"})),
    "cpio": Spec(READ, writes_unknown=frozenset({"*"})),
    "7z": Spec(READ, writes_unknown=frozenset({"*"})),
    "rsync": Spec(
        READ,
        last=WRITE,
        runs=frozenset({"-e", "--rsh", "--rsync-path"}),
        options=_opts(
            NONE,
            "-e",
            "--rsh",
            "--rsync-path",
            "--exclude",
            "--include",
            "-f",
            "--filter",
            "--chmod",
            "--chown",
        ),
        recursive=frozenset({"-r", "--recursive", "-a", "--archive"}),
    ),
    "scp": Spec(
        READ,
        last=WRITE,
        options=_opts(NONE, "-P", "-i", "-o", "-F", "-S", "-c", "-l", "-J"),
        runs=frozenset({"-S", "-o"}),
        recursive=frozenset({"-r"}),
    ),
    "find": Spec(PATH),  # handled by the analyser (expressions)
    "tar": Spec(PATH),  # handled by the analyser (modes)
    "xxd": Spec(READ, last=WRITE, options=_opts(NONE, "-c", "-g", "-l", "-s", "-o", "-n")),
}

SPECS["gawk"] = SPECS["mawk"] = SPECS["awk"]

#: the commands whose every use (with the options they are given) reads only: the built-in
#: agents allow them by default when every path is inside the project (the strict profile's
#: safe list); git and go have sub-command lists of their own in the rules
READ_ONLY = frozenset([*READ_ONLY_NAMES, "git", "go"])

#: read-only git sub-commands (checked for options that write or run programs), and those
#: read-only only in their listing forms (``git branch``, ``git config --get``)
GIT_READ_ONLY = frozenset(READ_ONLY_GIT)
GIT_LISTING = frozenset(["branch", "tag", "remote", "config"])
#: git options that make a read-only sub-command write a file or run a program
GIT_UNSAFE_OPTIONS = ("--output", "-O", "--open-files-in-pager", "--ext-diff", "--textconv")

GO_READ_ONLY = frozenset(["version", "list", "doc", "vet", "env"])
GO_UNSAFE_OPTIONS = ("-w", "-u", "-vettool", "-toolexec", "-exec", "-overlay", "-modfile")


def split_options(
    args: Sequence[str | None], spec: Spec
) -> tuple[list[tuple[str, str | None]], list[int]]:
    """Walk ``args`` (static values, None for dynamic ones) the way ``spec``'s command reads
    them. Returns ([(option, its argument value or None)], indexes of the positional
    arguments). An unknown option is taken to have no argument; after ``--`` everything is
    positional."""
    options: list[tuple[str, str | None]] = []
    positional: list[int] = []
    i = 0
    done = False
    while i < len(args):
        value = args[i]
        if done or value is None or value == "-" or not value.startswith("-"):
            positional.append(i)
            i += 1
            continue
        if value == "--":
            done = True
            i += 1
            continue
        if value.startswith("--"):
            name, eq, attached = value.partition("=")
            if eq:
                options.append((name, attached))
            elif name in spec.options:
                options.append((name, args[i + 1] if i + 1 < len(args) else None))
                i += 1
            else:
                options.append((name, None))
            i += 1
            continue
        # a bundle of short options: -rf, -n5, -tDIR
        j = 1
        consumed_next = False
        while j < len(value):
            name = "-" + value[j]
            if name in spec.options:
                rest = value[j + 1 :]
                if rest:
                    options.append((name, rest))
                else:
                    options.append((name, args[i + 1] if i + 1 < len(args) else None))
                    consumed_next = True
                break
            options.append((name, None))
            j += 1
        i += 2 if consumed_next else 1
    return options, positional
