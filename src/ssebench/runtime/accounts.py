"""The users a run's processes become: the agent's and the task commands' runner."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

AGENT_USER = "model"
RUNNER_USER = "sse-runner"


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: Path

    @classmethod
    def lookup(cls, name: str) -> Account:
        entry = pwd.getpwnam(name)
        return cls(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid, home=Path(entry.pw_dir))

    @classmethod
    def current(cls) -> Account:
        uid = os.geteuid()
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            return cls(
                name=str(uid), uid=uid, gid=os.getegid(), home=Path(os.environ.get("HOME", "/"))
            )
        return cls(name=entry.pw_name, uid=uid, gid=os.getegid(), home=Path(entry.pw_dir))

    @property
    def is_current(self) -> bool:
        """True when becoming this account needs no switch (and allows no clean-up by uid).

        Tests run everything as the invoking user; the runtime must then neither switch
        users nor sweep that user's processes, which would include the test runner.
        """
        return self.uid == os.geteuid()


@dataclass(frozen=True)
class Accounts:
    agent: Account
    runner: Account

    @classmethod
    def system(cls, agent_user: str | None = None) -> Accounts:
        """The image's accounts; agent_user: the task's own user for the agent instead
        of the agent account, never root (KeyError when the image lacks it)."""
        agent = Account.lookup(agent_user or AGENT_USER)
        if agent.uid == 0:
            raise PermissionError(f"the task's agent user {agent_user} is root")
        return cls(agent=agent, runner=Account.lookup(RUNNER_USER))

    @classmethod
    def current_user(cls) -> Accounts:
        me = Account.current()
        return cls(agent=me, runner=me)


def chown_tree(root: Path, account: Account) -> None:
    """Give a whole tree to ``account`` without following any symlink in it."""
    target = (account.uid, account.gid)

    def give(path: str) -> None:
        status = os.lstat(path)
        if (status.st_uid, status.st_gid) != target:
            os.lchown(path, *target)

    give(str(root))
    for directory, subdirectories, files in os.walk(root, followlinks=False):
        for name in subdirectories + files:
            give(os.path.join(directory, name))


def make_directory(path: Path, owner: Account | None, mode: int) -> None:
    """Create ``path`` if needed and set its mode, then its owner (None: the current user).

    The mode is set first: once the directory belongs to someone else, changing it
    would need CAP_FOWNER, which a Kubernetes run may not have.
    """
    path.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise OSError(f"{path} is a symlink")
    os.chmod(path, mode)
    uid, gid = (os.geteuid(), os.getegid()) if owner is None else (owner.uid, owner.gid)
    status = os.lstat(path)
    if (status.st_uid, status.st_gid) != (uid, gid):
        os.lchown(path, uid, gid)
