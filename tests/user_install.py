"""ssebench installed where an unprivileged user can run it, for the tests that run it
as one (tests/docker/test_unprivileged_runner.py, tests/podman/test_podman_rootless.py).

The checkout and its venv may sit below folders only root can enter (CI clones into a
0700 temporary folder), as a user's own install never would: the user gets a copy of
the sources, ssebench's one dependency and the pilot dataset, readable by all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import PILOT_DATASET, ROOT


def install_for_the_user(folder: Path) -> tuple[list[str], dict[str, str], Path]:
    """The command that runs ssebench, the environment it needs, and the pilot's copy."""
    site = folder / "site"
    shutil.copytree(ROOT / "src", folder / "src")
    shutil.copytree(PILOT_DATASET, folder / "pilot")
    packages = Path(yaml.__file__).parent.parent
    shutil.copytree(Path(yaml.__file__).parent, site / "yaml")
    # The dist-info carries the entry points through which the backends are found.
    for dist_info in packages.glob("ssebench-*.dist-info"):
        shutil.copytree(dist_info, site / dist_info.name)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    assert python, "no system python3 for the unprivileged user"
    environment = {"PYTHONPATH": f"{folder / 'src'}:{site}", "PYTHONDONTWRITEBYTECODE": "1"}
    return [python, "-m", "ssebench.cli.main"], environment, folder / "pilot"
