"""(f) prepare_images when every layer is cached (the Docker backend checks that each
layer's image exists and was built from the same inputs) vs one `docker image inspect`
of the run's image, which is the least any check can do."""

from __future__ import annotations

from common import PILOT, Figure, NotMeasured, Result, alternate, docker_problem, main, run

from ssebench.agents import load_agent
from ssebench.backends.docker import DockerBackend
from ssebench.runner import image_request
from ssebench.tasks import load_dataset

TASK = "py-semver-prerelease"
ROUNDS = 7


def measure() -> list[Result]:
    problem = docker_problem()
    if problem:
        return [NotMeasured("cached prepare_images", problem)]
    task = load_dataset(PILOT).task(TASK)
    agent = load_agent("reference")
    request = image_request(task, agent)
    backend = DockerBackend(quiet_builds=True)
    image = backend.prepare_images(request).run  # builds what is missing, once

    subject, baseline = alternate(
        lambda: backend.prepare_images(request),
        lambda: run(["docker", "image", "inspect", "--format", "{{.Id}}", image]),
        ROUNDS,
    )
    return [
        Figure(
            "(f) cached prepare_images",
            "DockerBackend.prepare_images (3 layers)",
            subject,
            "docker image inspect of the run's image",
            baseline,
            note=f"{TASK}, median of {ROUNDS}",
        )
    ]


if __name__ == "__main__":
    main(measure)
