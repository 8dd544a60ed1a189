"""Everything that makes a run's images: the layers, their builds, publishing them,
and the hand check of a task in its case image.

    layers.py          what each image of a run holds (case, tool, agent, ...), its name
                       and content digest (docs/image-layers.md)
    builds.py          building the layers with Docker and making a run's images
                       available (build, reuse when current, pull when prebuilt)
    publish.py         `ssebench images publish`: build a task's and an agent's layers and
                       name, push or load them as prebuilt images
    case_checks.py     `ssebench tasks check`: a task's build and tests in its case image,
                       played there by in_image_check.py

The Helm chart's service images and its release are ssebench.release (they build the
proxy's image, which this package must not know). The public API for a backend that
builds images is ssebench.image_layers (docs/writing-a-backend.md), built on layers.py
and builds.py. This package's modules are imported only by what builds or publishes
images, so `ssebench runs list` starts without them (tests/unit/test_cli_startup.py).
"""
