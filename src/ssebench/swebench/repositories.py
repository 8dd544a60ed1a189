"""The import's git: the clones of the instances' repositories, found under --repos or
fetched into ssebench's own cache (only the commits an instance needs), and the trees
and files read out of them without touching the clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ssebench.errors import UserError
from ssebench.swebench.instances import Instance, InstanceSkipped

# Where repositories are cloned from when the user gives no --repos and no --clone-from.
DEFAULT_CLONE_FROM = "https://github.com/{repo}.git"
REPOSITORY_CACHE_VARIABLE = "SSEBENCH_REPOSITORY_CACHE"


def find_clone(repos: Path, repo: str) -> Path | None:
    """The local clone (or bare mirror) of OWNER/NAME under repos, by the usual layouts:
    OWNER__NAME, OWNER/NAME or NAME, each with or without .git."""
    owner, name = repo.split("/", 1)
    for base in (f"{owner}__{name}", f"{owner}/{name}", name):
        for candidate in (repos / base, repos / f"{base}.git"):
            if candidate.is_dir():
                return candidate
    return None


def git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=environment,
            input=stdin,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise UserError("git is not installed (not on PATH); the import needs it") from None


def last_line(completed: subprocess.CompletedProcess[bytes]) -> str:
    lines = completed.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {completed.returncode}"


def export_tree(clone: Path, commit: str, dest: Path) -> None:
    """Write the tree of commit into dest (no .git), with a private index so the clone
    is not touched and export-ignore attributes do not apply."""
    found = git(["-C", str(clone), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
    if found.returncode != 0:
        raise InstanceSkipped(f"base_commit {commit} is not in the clone {clone}")
    git_dir = git(["-C", str(clone), "rev-parse", "--absolute-git-dir"]).stdout.decode().strip()
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="ssebench-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        base = ["--git-dir", git_dir, "--work-tree", str(dest)]
        for step in (["read-tree", commit], ["checkout-index", "--all", "--force"]):
            completed = git([*base, *step], env=env)
            if completed.returncode != 0:
                raise InstanceSkipped(f"git {step[0]} of {commit} failed: {last_line(completed)}")


def commit_date(clone: Path, commit: str) -> str | None:
    shown = git(["-C", str(clone), "show", "-s", "--format=%cI", commit])
    return shown.stdout.decode().strip() or None if shown.returncode == 0 else None


def show(clone: Path, commit: str, path: str) -> str | None:
    shown = git(["-C", str(clone), "show", f"{commit}:{path}"])
    return shown.stdout.decode(errors="replace") if shown.returncode == 0 else None


def repository_cache() -> Path:
    """Where the import keeps the repositories it clones when --repos is not given:
    $SSEBENCH_REPOSITORY_CACHE, else $XDG_CACHE_HOME/ssebench/repositories (~/.cache)."""
    configured = os.environ.get(REPOSITORY_CACHE_VARIABLE)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ssebench" / "repositories"


def needed_commits(instance: Instance) -> list[str]:
    commits = [instance.base_commit]
    if instance.environment_setup_commit and instance.environment_setup_commit not in commits:
        commits.append(instance.environment_setup_commit)
    return commits


def has_commit(clone: Path, commit: str) -> bool:
    found = git(["-C", str(clone), "cat-file", "-e", f"{commit}^{{commit}}"])
    return found.returncode == 0


def clone_of(
    instance: Instance, repos: Path, clone_from: str | None, progress: TextIO | None
) -> Path:
    """The clone holding the instance's commits: found under repos, or fetched there from
    clone_from ({repo} is OWNER/NAME): only the commits the instance needs when the
    server gives single commits, else the whole repository."""
    clone = find_clone(repos, instance.repo)
    missing = [
        commit
        for commit in needed_commits(instance)
        if clone is None or not has_commit(clone, commit)
    ]
    if not missing:
        assert clone is not None
        return clone
    if clone_from is None:
        if clone is None:
            raise InstanceSkipped(
                f"no clone of {instance.repo} under {repos} "
                f"(looked for {instance.repo.replace('/', '__')}, {instance.repo}, "
                f"{instance.repo_name}); pass --clone-from URL to clone it"
            )
        return clone  # export_tree names the commit that is missing
    return fetch_commits(repos, clone, instance.repo, clone_from, missing, progress)


def fetch_commits(
    repos: Path,
    clone: Path | None,
    repo: str,
    clone_from: str,
    commits: list[str],
    progress: TextIO | None,
) -> Path:
    """Fetch commits of OWNER/NAME from the clone_from template into clone, or into a new
    bare repository repos/OWNER__NAME.git that later imports find. InstanceSkipped when
    the fetch fails."""
    url = clone_from.replace("{repo}", repo)
    made = clone is None
    target = clone if clone is not None else repos / f"{repo.replace('/', '__')}.git"
    if progress is not None:
        progress.write(f"fetching {len(commits)} commit(s) of {repo} from {url}\n")
        progress.flush()
    if made:
        repos.mkdir(parents=True, exist_ok=True)
        initialized = git(["init", "--quiet", "--bare", str(target)])
        if initialized.returncode != 0:
            raise InstanceSkipped(f"cannot make {target}: {last_line(initialized)}")
    # Each commit under a ref of its own, so that no gc of the cache drops it.
    refspecs = [f"{commit}:refs/ssebench/{commit}" for commit in commits]
    single = git(["-C", str(target), "fetch", "--quiet", "--depth", "1", "--", url, *refspecs])
    if single.returncode != 0:
        # A server that does not give single commits: the whole repository instead.
        branches = "+refs/heads/*:refs/heads/*"
        whole = git(["-C", str(target), "fetch", "--quiet", "--tags", "--", url, branches])
        if whole.returncode != 0 or not all(has_commit(target, commit) for commit in commits):
            if made:
                shutil.rmtree(target, ignore_errors=True)
            reason = last_line(whole) if whole.returncode != 0 else "the commits are not there"
            raise InstanceSkipped(f"cloning {url} failed: {reason}")
    return target
