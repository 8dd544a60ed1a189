"""A hostile agent's archive on Docker (issue 14, item 4): real runs of the agent in
tests/fixtures/agents/hostile, which fills /tmp/sse-archive with links to /dev/zero,
/etc/passwd and /proc/self/environ, FIFOs named as the files the host reads, a hard
link, setuid, setgid, sticky and world-writable modes, 250,000 files, 300 nested
directories and a 3 GB sparse file.

The agent is not one of the package's agents (they are the ones `ssebench run` offers),
so these tests drive the Runner and the Docker backend directly, as `ssebench run` does.

Each run is recorded; its archive breaks one cap, so it is recorded as an error naming
that cap; the host's run directory holds no link, FIFO, device, setuid, setgid, sticky
or group/other-writable entry, and no more files or bytes than the caps; the archive
volume and its copying helper are gone; and the copy takes bounded time.
"""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from ssebench.backends.docker import DockerBackend
from ssebench.errors import BackendError
from ssebench.extensions import Images
from ssebench.results.safe_tar import MAX_BYTES, MAX_DEPTH, MAX_ENTRIES
from ssebench.runner import READOUT_FAILED, Runner, RunSettings
from ssebench.tasks import load_dataset
from tests.conftest import PILOT_DATASET
from tests.docker.conftest import archive_objects, new_run_id
from tests.hostile_agent import SETUID_TEXT, hostile_agent, tree_of

pytestmark = pytest.mark.docker
TASK = "py-semver-prerelease"
# The agent makes 250,000 files; reading them out is the slow part.
COPY_SECONDS = 240


def settings(results: Path, name: str, files: int = 250_000) -> RunSettings:
    return RunSettings(
        task=load_dataset(PILOT_DATASET).task(TASK),
        agent=hostile_agent(),
        model=None,
        run_id=new_run_id(name),
        results_root=results,
        backend="docker",
        timeout=900,
        # The run's environment: how many files the agent makes in many/.
        model_env={"SSE_HOSTILE_FILES": str(files)},
    )


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    run_settings = settings(tmp_path_factory.mktemp("images"), "images")
    return Runner(DockerBackend(quiet_builds=True), out=io.StringIO()).prepare(run_settings)


@pytest.mark.parametrize(
    ("files", "caps", "broken"),
    [
        # The defaults: many/ breaks the file cap.
        (250_000, {}, f"more than {MAX_ENTRIES} entries"),
        # Fewer files (the caps hold them): zz-deep/ breaks the depth cap.
        (1000, {}, f"deeper than {MAX_DEPTH} directories"),
        # Room for the depth: zz-sparse breaks the byte cap, from its header.
        (1000, {"SSEBENCH_ARCHIVE_MAX_DEPTH": "400"}, f"more than {MAX_BYTES} bytes"),
    ],
    ids=["files", "depth", "bytes"],
)
def test_a_hostile_archive_reaches_the_host_safe_and_within_the_caps(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    images: Images,
    files: int,
    caps: dict[str, str],
    broken: str,
) -> None:
    for variable, value in caps.items():
        monkeypatch.setenv(variable, value)
    run_settings = settings(tmp_path, "hostile", files)
    output = io.StringIO()
    runner = Runner(DockerBackend(quiet_builds=True), out=output)
    with pytest.raises(BackendError, match="was not copied") as raised:
        runner.run(run_settings, images)
    assert broken in str(raised.value)

    run_dir = next(tmp_path.glob(f"{TASK}/none/hostile/{run_settings.run_id}"))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error", summary
    assert summary["error_msg"].startswith(READOUT_FAILED) and broken in summary["error_msg"]
    assert summary["exit_code"] == 0  # the agent exited 0 and the run was graded...
    assert summary["evaluator_grade"]["status"] == "failed"  # ...but that is not the record
    assert summary["durations"]["collect_results"] < COPY_SECONDS, summary["durations"]

    bad, entries, size = tree_of(run_dir)
    assert bad == []
    assert 0 < entries <= MAX_ENTRIES
    assert size <= MAX_BYTES
    archive = run_dir / "archive"
    # What was copied before the cap broke: the files the agent may keep, made safe.
    assert (archive / "a-setuid").read_text() == SETUID_TEXT
    assert stat.S_IMODE((archive / "a-setuid").stat().st_mode) == 0o755
    assert stat.S_IMODE((archive / "a-world-writable").stat().st_mode) == 0o755
    assert not (archive / "dialog.jsonl").exists()  # the agent's FIFO: skipped
    assert not (archive / "a-link-environ").exists()
    if files < MAX_ENTRIES:
        assert len(list((archive / "many").glob("*/*"))) == files
    if broken.startswith("more than") and "bytes" in broken:
        # 300 nested directories, as the agent made them, within the raised depth cap.
        assert (archive / "zz-deep" / "/".join(["d"] * 300) / "bottom").read_text() == "deep\n"
    assert archive_objects(run_settings.run_id) == []
