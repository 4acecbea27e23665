"""Project identity (hookcode.project): the root commit, the same on every clone, cached in the
data directory; and what a clone may take from another folder's approvals (issue 21)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hookcode.permission import PermissionRequest, Ruleset
from hookcode.project import cache_file, git_dir, project_id
from hookcode.testing import HookcodeEnv


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "second")
    return repo


def clone(origin: Path, where: Path) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(where))
    return where


def test_a_folder_without_git_or_commits_is_its_path(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = tmp_path / "folder"
    folder.mkdir()
    assert project_id(folder, data) == str(folder)
    git(folder, "init", "-q")
    assert project_id(folder, data) == str(folder)  # no commit yet
    assert not (data / "projects").exists()  # nothing cached


def test_clones_share_the_root_commit_and_the_id_is_cached(
    origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git(origin, "rev-list", "--max-parents=0", "HEAD")
    data = tmp_path / "data"
    one = clone(origin, tmp_path / "one")
    two = clone(origin, tmp_path / "elsewhere" / "two")
    before = sorted(p.relative_to(one) for p in one.rglob("*"))
    ids = {project_id(origin, data), project_id(one, data), project_id(two, data)}
    assert ids == {f"git:{root}"}
    assert sorted(p.relative_to(one) for p in one.rglob("*")) == before  # nothing written there
    cached = cache_file((one / ".git").resolve(), data)
    assert cached is not None and cached.read_text().strip() == f"git:{root}"
    assert (cached.stat().st_mode & 0o777, cached.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    # cached: no git process runs again (none could: git is not on the PATH)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert project_id(one, data) == f"git:{root}"
    # a cache that is not an id is not believed (git is asked; here it cannot be: the path)
    broken = cache_file((two / ".git").resolve(), data)
    assert broken is not None
    broken.write_text("git:not-a-sha\n")
    assert project_id(two, data) == str(two)


def test_a_repository_replaced_at_the_same_path_is_asked_again(
    origin: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    here = clone(origin, tmp_path / "here")
    assert project_id(here, data).startswith("git:")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "x").write_text("x\n")
    git(other, "add", "x")
    git(other, "commit", "-q", "-m", "another history")
    keep = tmp_path / "keep"  # the old .git stays alive, so the new one gets another inode
    (here / ".git").rename(keep)
    shutil.copytree(other / ".git", here / ".git")
    root = git(other, "rev-list", "--max-parents=0", "HEAD")
    assert project_id(here, data) == f"git:{root}"


def test_a_linked_worktree_shares_the_cache(origin: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(origin, "worktree", "add", "-q", str(linked))
    assert git_dir(linked) == (origin / ".git").resolve()
    data = tmp_path / "data"
    assert project_id(linked, data) == project_id(origin, data)
    assert len(list((data / "projects").iterdir())) == 1  # one repository, one entry


def _remember(runtime, permission: str, pattern: str) -> None:
    """An "always" reply, remembered the way the permission flow does it."""
    request = PermissionRequest(
        id="per_1",
        session_id="",
        permission=permission,
        patterns=[pattern],
        always=[pattern],
        metadata={},
        agent="build",
        tool={},
        ruleset=Ruleset([]),
    )
    runtime.permissions.remember(request, "project")


def _approved(runtime) -> list[tuple[str, str]]:
    return [(rule.permission, rule.pattern) for rule in runtime.ruleset("build").approvals]


def test_another_clones_approvals_apply_only_in_a_trusted_folder(
    hookcode_env: HookcodeEnv, origin: Path, tmp_path: Path
) -> None:
    mine = clone(origin, tmp_path / "mine")
    fork = clone(origin, tmp_path / "fork")  # a fork shares the root commit
    rt_mine = hookcode_env.runtime(cwd=mine, trusted=True)
    _remember(rt_mine, "bash", "make deploy")
    [record] = rt_mine.store.approvals(project=rt_mine.project)
    assert record.project == project_id(mine) and record.directory == str(mine)
    assert _approved(rt_mine) == [("bash", "make deploy")]

    untrusted = hookcode_env.runtime(cwd=fork, trusted=False)
    assert untrusted.project == rt_mine.project
    assert _approved(untrusted) == []  # remembered in another folder: not here
    _remember(untrusted, "bash", "make test")  # remembered in this folder: applies here
    assert _approved(untrusted) == [("bash", "make test")]

    trusted = hookcode_env.runtime(cwd=fork, trusted=True)
    assert _approved(trusted) == [("bash", "make deploy"), ("bash", "make test")]
    # the same approval given in both folders is two records, one per folder
    _remember(untrusted, "bash", "make deploy")
    assert _approved(untrusted) == [("bash", "make test"), ("bash", "make deploy")]


def test_sessions_and_approvals_keyed_by_the_path_move_to_the_id(
    hookcode_env: HookcodeEnv, origin: Path
) -> None:
    from hookcode.store import SQLiteStore

    with SQLiteStore(hookcode_env.data_dir / "hookcode.db") as store:
        old = store.create_session(project=str(origin), directory=str(origin))
        store.add_approval(
            project=str(origin), permission="read", pattern="*", directory=str(origin)
        )
    runtime = hookcode_env.runtime(cwd=origin)
    assert runtime.project.startswith("git:")
    latest = runtime.store.latest_session(runtime.project)
    assert latest is not None and latest.id == old.id
    assert _approved(runtime) == [("read", "*")]
    assert runtime.store.list_sessions(str(origin)) == []
