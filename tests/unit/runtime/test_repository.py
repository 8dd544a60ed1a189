from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ssebench.runtime.repository import BaseRepository, count_patch_files

from .conftest import FIXED, Project, git

PATH = os.environ["PATH"]


def snapshot(project: Project) -> BaseRepository:
    return BaseRepository.snapshot(
        source_dir=project.source,
        git_dir=project.layout.base_repository,
        base_commit=None,
        path_value=PATH,
    )


def apply_to_copy(repository: BaseRepository, patch: bytes, tmp_path: Path) -> Path:
    """The patch applied to a fresh export of the base commit."""
    tree = tmp_path / "applied"
    tree.mkdir()
    tar_file = tmp_path / "base.tar"
    repository.export(tar_file)
    subprocess.run(["tar", "-x", "-f", str(tar_file), "-C", str(tree)], check=True)
    subprocess.run(
        ["git", "apply", "-"],
        input=patch,
        cwd=tree,
        check=True,
        env={"PATH": PATH, "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )
    return tree


def test_base_is_the_head_when_the_container_starts(project: Project) -> None:
    repository = snapshot(project)
    assert repository.base == git(project.source, "rev-parse", "HEAD").strip()
    assert repository.diff() == b""


def test_diff_has_changes_deletions_and_new_untracked_files(
    project: Project, tmp_path: Path
) -> None:
    repository = snapshot(project)
    (project.source / "calc.py").write_text(FIXED)
    (project.source / "README.md").unlink()
    (project.source / "pkg").mkdir()
    (project.source / "pkg" / "new.py").write_text("NEW = 1\n")
    (project.source / "blob.bin").write_bytes(bytes(range(256)) * 4)
    patch = repository.diff()

    assert b"+++ b/pkg/new.py" in patch
    assert b"deleted file mode" in patch
    assert b"GIT binary patch" in patch
    assert count_patch_files(patch) == 4
    tree = apply_to_copy(repository, patch, tmp_path)
    assert (tree / "calc.py").read_text() == FIXED
    assert (tree / "pkg" / "new.py").read_text() == "NEW = 1\n"
    assert (tree / "blob.bin").read_bytes() == bytes(range(256)) * 4
    assert not (tree / "README.md").exists()


def test_diff_follows_the_tree_as_it_changes(project: Project) -> None:
    repository = snapshot(project)
    (project.source / "extra.txt").write_text("one\n")
    assert b"extra.txt" in repository.diff()
    (project.source / "extra.txt").unlink()
    assert repository.diff() == b""


def test_diff_ignores_what_gitignore_excludes(project: Project) -> None:
    repository = snapshot(project)
    (project.source / ".gitignore").write_text("build/\n")
    (project.source / "build").mkdir()
    (project.source / "build" / "out.o").write_text("object")
    patch = repository.diff()
    assert b".gitignore" in patch
    assert b"out.o" not in patch


def test_a_symlink_is_recorded_as_a_link_never_followed(project: Project) -> None:
    repository = snapshot(project)
    secret = project.source.parent / "outside-secret.txt"
    secret.write_text("TOP SECRET CONTENT\n")
    (project.source / "link").symlink_to(secret)
    patch = repository.diff()
    assert b"new file mode 120000" in patch
    assert str(secret).encode() in patch
    assert b"TOP SECRET CONTENT" not in patch


def test_commits_and_history_rewrites_by_the_agent_do_not_move_the_base(
    project: Project,
) -> None:
    repository = snapshot(project)
    (project.source / "calc.py").write_text(FIXED)
    git(project.source, "commit", "-q", "-am", "agent commit")
    git(project.source, "reset", "-q", "--soft", "HEAD")
    assert b"+    return a + b" in repository.diff()
    # A second start of the container reuses the first copy, not the moved HEAD.
    again = snapshot(project)
    assert again.base == repository.base
    assert b"+    return a + b" in again.diff()


def test_the_agents_git_configuration_never_runs(project: Project, tmp_path: Path) -> None:
    repository = snapshot(project)
    marker = tmp_path / "pwned"
    hook = project.source / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(project.source, "config", "core.fsmonitor", f"touch {marker}; false")
    git(project.source, "config", "filter.evil.clean", f"touch {marker}; cat")
    (project.source / ".gitattributes").write_text("* filter=evil\n")
    (project.source / "calc.py").write_text(FIXED)
    patch = repository.diff()
    assert b"+    return a + b" in patch
    assert not marker.exists()
    # The trap is real: git used on the agent's repository itself springs it.
    git(project.source, "add", "-A")
    assert marker.exists()


def test_the_copy_shares_no_inode_with_the_agents_repository(project: Project) -> None:
    repository = snapshot(project)
    source_objects = {
        (p.stat().st_dev, p.stat().st_ino)
        for p in (project.source / ".git" / "objects").rglob("*")
        if p.is_file()
    }
    copy_objects = {
        (p.stat().st_dev, p.stat().st_ino)
        for p in (repository.git_dir / "objects").rglob("*")
        if p.is_file()
    }
    assert copy_objects and not (source_objects & copy_objects)


def test_export_keeps_files_marked_export_ignore(project: Project, tmp_path: Path) -> None:
    (project.source / ".gitattributes").write_text("tests/ export-ignore\n")
    git(project.source, "add", ".gitattributes")
    git(project.source, "commit", "-q", "-m", "attributes")
    repository = snapshot(project)
    tar_file = tmp_path / "base.tar"
    repository.export(tar_file)
    listing = subprocess.run(
        ["tar", "-t", "-f", str(tar_file)], capture_output=True, text=True, check=True
    ).stdout
    assert "tests/test_calc.py" in listing


def test_an_explicit_base_commit_wins_over_head(project: Project) -> None:
    base = git(project.source, "rev-parse", "HEAD").strip()
    (project.source / "calc.py").write_text(FIXED)
    git(project.source, "commit", "-q", "-am", "later")
    repository = BaseRepository.snapshot(
        source_dir=project.source,
        git_dir=project.layout.base_repository,
        base_commit=base,
        path_value=PATH,
    )
    assert repository.base == base
    assert b"+    return a + b" in repository.diff()


def test_a_missing_base_commit_is_an_error(project: Project) -> None:
    with pytest.raises(Exception, match="rev-parse"):
        BaseRepository.snapshot(
            source_dir=project.source,
            git_dir=project.layout.base_repository,
            base_commit="0" * 40,
            path_value=PATH,
        )
