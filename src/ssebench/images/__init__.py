"""Everything that makes images: the run's layers, their builds, publishing them, and
the Helm chart's images and release.

    layers.py         what each image of a run holds (case, tool, agent, ...), its name
                      and content digest (docs/image-layers.md)
    builds.py         building the layers with Docker and making a run's images
                      available (build, reuse when current, pull when prebuilt)
    publish.py        `ssebench images publish`: build a task's and an agent's layers and
                      name, push or load them as prebuilt images
    services.py       `ssebench images build-services`: the Helm chart's service images
    chart_release.py  `ssebench images publish-chart`: the chart and its service images,
                      pushed to a registry as a release does

The public API for a backend that builds images is ssebench.image_layers
(docs/writing-a-backend.md), built on layers.py and builds.py. This package's modules
are imported only by what builds or publishes images, so `ssebench runs list` starts
without them (tests/unit/test_cli_startup.py).
"""
