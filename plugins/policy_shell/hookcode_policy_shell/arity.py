"""The arity table (reference/permissions.md §9): how many tokens an "always" prefix keeps.

The longest table entry that is a prefix of the tokens gives the count; no entry -> the
first token only; no tokens -> nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

ARITY_1 = [
    "cat",
    "cd",
    "chmod",
    "chown",
    "cp",
    "echo",
    "env",
    "export",
    "grep",
    "kill",
    "killall",
    "ln",
    "ls",
    "mkdir",
    "mv",
    "ps",
    "pwd",
    "rm",
    "rmdir",
    "sleep",
    "source",
    "tail",
    "touch",
    "unset",
    "which",
]

ARITY_2 = [
    "bazel",
    "brew",
    "bun",
    "cargo",
    "cdk",
    "cf",
    "cmake",
    "composer",
    "consul",
    "crictl",
    "deno",
    "docker",
    "eksctl",
    "firebase",
    "flyctl",
    "git",
    "go",
    "gradle",
    "helm",
    "heroku",
    "hugo",
    "ip",
    "kind",
    "kubectl",
    "kustomize",
    "make",
    "mc",
    "minikube",
    "mongosh",
    "mysql",
    "mvn",
    "ng",
    "npm",
    "nvm",
    "nx",
    "openssl",
    "pip",
    "pipenv",
    "pnpm",
    "poetry",
    "podman",
    "psql",
    "pulumi",
    "pyenv",
    "python",
    "rake",
    "rbenv",
    "redis-cli",
    "rustup",
    "serverless",
    "skaffold",
    "sls",
    "sst",
    "swift",
    "systemctl",
    "terraform",
    "tmux",
    "turbo",
    "ufw",
    "vault",
    "vercel",
    "volta",
    "wp",
    "yarn",
]

ARITY_3 = [
    *["aws", "az", "doctl", "gcloud", "gh", "sfdx"],
    "bun run",
    "bun x",
    "cargo add",
    "cargo run",
    "consul kv",
    "deno task",
    *(f"docker {s}" for s in ["builder", "compose", "container", "image", "network", "volume"]),
    "eksctl create",
    "git config",
    "git remote",
    "git stash",
    *(f"ip {s}" for s in ["addr", "link", "netns", "route"]),
    "kind create",
    "kubectl kustomize",
    "kubectl rollout",
    "mc admin",
    *(f"npm {s}" for s in ["exec", "init", "run", "view"]),
    "openssl req",
    "openssl x509",
    *(f"pnpm {s}" for s in ["dlx", "exec", "run"]),
    "podman container",
    "podman image",
    "pulumi stack",
    "terraform workspace",
    "vault auth",
    "vault kv",
    "yarn dlx",
    "yarn run",
]

#: prefix (as a tuple of tokens) -> how many tokens the "always" prefix keeps
TABLE: dict[tuple[str, ...], int] = {}
for _names, _n in ((ARITY_1, 1), (ARITY_2, 2), (ARITY_3, 3)):
    for _entry in _names:
        TABLE[tuple(_entry.split())] = _n

#: the entries by their first token (for the "could a dynamic token change the prefix" check)
BY_FIRST: dict[str, list[tuple[tuple[str, ...], int]]] = {}
for _key, _n in TABLE.items():
    BY_FIRST.setdefault(_key[0], []).append((_key, _n))
MAX_KEY = max(len(k) for k in TABLE)


def arity(tokens: Sequence[str]) -> int:
    """How many tokens the prefix keeps (the longest matching entry; else 1)."""
    for length in range(min(MAX_KEY, len(tokens)), 0, -1):
        n = TABLE.get(tuple(tokens[:length]))
        if n is not None:
            return n
    return 1


def prefix(tokens: Sequence[str]) -> list[str]:
    """The "always" prefix tokens: ``git log --oneline`` -> ``["git", "log"]``."""
    if not tokens:
        return []
    return list(tokens[: arity(tokens)])


def decisive(tokens: Sequence[str | None], index: int) -> bool:
    """Whether the token at ``index`` (not statically known) could change which entry
    matches, i.e. it belongs to the subcommand part (``git $X``, ``docker compose $X``)."""
    if index == 0:
        return True
    head = tokens[:index]
    if any(t is None for t in head):
        return True
    for key, n in BY_FIRST.get(str(head[0]), ()):
        if len(key) <= index:
            if tuple(head[: len(key)]) == key and n > index:
                return True
        elif key[:index] == tuple(head):
            return True
    return False
