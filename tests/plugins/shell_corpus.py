"""Adversarial shell commands for policy_shell (issue 4): each tries to run ``rm`` (denied) or
something unknown past the allow rules of

    bash = { "*" = "ask", "git *" = "allow", "ls *" = "allow", "rm *" = "deny" }

Each entry is (command, expected vote): ``deny`` where the analysis must see the ``rm``,
``ask`` where it cannot see through (or sees a command that no rule allows). None may be
``allow``. ``CONTROLS`` are commands that must still be allowed.
"""

from __future__ import annotations

CONFIG = {"permission": {"bash": {"*": "ask", "git *": "allow", "ls *": "allow", "rm *": "deny"}}}

CORPUS: list[tuple[str, str]] = [
    # -- chaining and pipes
    ("git status; rm -rf x", "deny"),
    ("git status && rm -rf x", "deny"),
    ("git status || rm -rf x", "deny"),
    ("ls & rm -rf x", "deny"),
    ("ls\nrm -rf x", "deny"),
    ("ls;rm x", "deny"),
    ("ls&&rm x", "deny"),
    ("ls | rm -rf x", "deny"),
    ("ls & disown; rm x", "deny"),
    ("! rm x", "deny"),
    # -- substitutions
    ("ls $(rm -rf x)", "deny"),
    ("ls `rm -rf x`", "deny"),
    ('ls "$(rm -rf x)"', "deny"),
    ('git log --format="$(rm x)"', "deny"),
    ("ls ${x:-$(rm y)}", "deny"),
    ("echo $((1 + $(rm x)))", "deny"),
    ("[[ -n $(rm x) ]] && ls", "deny"),
    ("X=$(rm x) git status", "deny"),
    ('git status <<< "$(rm x)"', "deny"),
    ("cat <<EOF\n$(rm -rf x)\nEOF", "deny"),
    ("ls $(bash -c 'rm x')", "deny"),
    # -- process substitution, subshells, groups, control flow
    ("cat <(rm -rf x)", "deny"),
    ("ls | tee >(rm x)", "deny"),
    ("(rm -rf x)", "deny"),
    ("(cd /tmp && rm -rf x)", "deny"),
    ("{ git status; rm -rf x; }", "deny"),
    ("if git status; then rm -rf x; fi", "deny"),
    ("while ls; do rm x; done", "deny"),
    ('for f in *; do rm "$f"; done', "deny"),
    ("case x in x) rm -rf y;; esac", "deny"),
    # -- quoting tricks and spellings of the name
    ('r""m -rf x', "deny"),
    ("'r'm -rf x", "deny"),
    ('"rm" -rf x', "deny"),
    ("\\rm -rf x", "deny"),
    ("r\\m -rf x", "deny"),
    ("r\\\nm -rf x", "deny"),
    ("git status; r\\\nm -rf x", "deny"),
    ("$'rm' -rf x", "deny"),
    ("$'\\x72m' -rf x", "deny"),
    ("$'\\162m' -rf x", "deny"),
    ("/bin/rm -rf x", "deny"),
    ("/usr/bin/rm -rf x", "deny"),
    ("./rm -rf x", "deny"),
    # -- wrappers
    ("/usr/bin/env rm -rf x", "deny"),
    ("env rm -rf x", "deny"),
    ("env -i PATH=/bin rm x", "deny"),
    ("FOO=1 rm -rf x", "deny"),
    ("sudo rm -rf x", "deny"),
    ("sudo -u root -E rm x", "deny"),
    ("git status; sudo -s rm -rf x", "deny"),
    ("nohup rm -rf x &", "deny"),
    ("timeout 5 rm -rf x", "deny"),
    ("timeout -s KILL 5 rm x", "deny"),
    ("nice -n 10 rm x", "deny"),
    ("nice -5 rm x", "deny"),
    ("time rm x", "deny"),
    ("ls; time -p rm x", "deny"),
    ("command rm x", "deny"),
    ("command -p rm x", "deny"),
    ("exec rm x", "deny"),
    ("builtin command rm x", "deny"),
    ("exec 3>&1; rm x", "deny"),
    ("stdbuf -oL rm x", "deny"),
    ("setsid rm x", "deny"),
    ("coproc rm x", "deny"),
    ("watch -n 1 'rm x'", "deny"),
    ("env -S 'rm -rf x'", "deny"),
    ("sudo timeout 5 env A=1 nice rm x", "deny"),
    # -- xargs and find
    ("git ls-files | xargs rm", "deny"),
    ("xargs rm < list", "deny"),
    ("xargs -I{} rm {} < list", "deny"),
    ("xargs -0 sh -c 'rm \"$@\"' _ < list", "deny"),
    ("git ls-files | xargs git", "ask"),
    ("find . -exec rm {} \\;", "deny"),
    ("find . -execdir rm -rf {} +", "deny"),
    ("find . -ok rm {} ';'", "deny"),
    ("find . -name '*.py' -exec sh -c 'rm \"$1\"' _ {} \\;", "deny"),
    # -- strings run by shells
    ("bash -c 'rm -rf x'", "deny"),
    ('sh -c "rm -rf x"', "deny"),
    ("zsh -c 'git status; rm x'", "deny"),
    ("bash -lc 'rm x'", "deny"),
    ("bash -c \"bash -c 'rm x'\"", "deny"),
    ("eval 'rm -rf x'", "deny"),
    ("eval rm -rf x", "deny"),
    ("builtin eval 'rm x'", "deny"),
    ("trap 'rm -rf x' EXIT; ls", "deny"),
    ('bash -c "$CMD"', "ask"),
    ("eval $CMD", "ask"),
    # -- here-documents and here-strings to a shell
    ("bash <<EOF\nrm -rf x\nEOF", "deny"),
    ("bash <<'EOF'\nrm -rf x\nEOF", "deny"),
    ("sh <<< 'rm -rf x'", "deny"),
    ("bash <<EOF\n$X\nEOF", "ask"),
    ("git show HEAD:script.sh | bash", "ask"),
    ("ls > >(sh)", "ask"),
    # -- functions and aliases defined inline
    ("f() { rm -rf x; }; f", "deny"),
    ("function ls { rm -rf x; }; ls", "deny"),
    ("ls() { git status; }; ls", "ask"),
    ("alias ls='rm -rf x'; ls", "deny"),
    ("alias git=rm\ngit status", "deny"),
    # -- the command name is not static
    ("$X -rf x", "ask"),
    ("${X} x", "ask"),
    ("X=rm; $X -rf x", "ask"),
    ("RM=rm; git status && ${RM} -rf x", "ask"),
    ("$(echo rm) -rf x", "ask"),
    ("`echo rm` -rf x", "ask"),
    ("ls; $(printf rm) x", "ask"),
    ('git status && "$SHELL" -c "rm x"', "ask"),
    ("/bin/r? -rf x", "ask"),
    ("{rm,-rf,x}", "ask"),
    # -- the subcommand is not static, or the program is not what it seems
    ("git $(echo status)", "ask"),
    ("git -c alias.st='!rm -rf x' st", "ask"),
    ("GIT_PAGER='rm x' git log", "ask"),
    ("PATH=/tmp/evil:$PATH git status", "ask"),
    ("export PATH=/tmp; git status", "ask"),
    ("./git status", "ask"),
    ("/tmp/ls -la", "ask"),
    ("source ./evil.sh", "ask"),
    (". ./evil.sh && ls", "ask"),
    # -- cannot be parsed
    ('ls; echo "unterminated', "ask"),
    ("ls )", "ask"),
]

#: commands the same rules must allow (positive controls)
CONTROLS: list[str] = [
    "git status",
    "ls -la",
    "git status && ls",
    "git log --oneline -5; git diff",
    "cd sub && git status",
    "git show $(git rev-parse HEAD)",
    "timeout 5 git status",
    "nohup git fetch &",
    "git status 2>&1",
    "ls > /dev/null",
    "'git' \"status\"",
    "/usr/bin/git status",
    'bash -c "git status && ls"',
    "git log | git stash list",
]

#: commands the same rules must ask about (neither allowed nor denied)
ASK_CONTROLS: list[str] = ["git log | head", "echo hi", "make"]
