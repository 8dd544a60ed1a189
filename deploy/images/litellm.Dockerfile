# The LiteLLM proxy of the Helm chart: the local stack's proxy image (built from
# deploy/compose/litellm, as `ssebench proxy up` builds it; `ssebench images
# build-services` passes its name as BASE_IMAGE) with the configuration that `ssebench
# proxy config` generates from models/, at /etc/litellm/config.yaml, where the base
# image's command reads it.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY config.yaml /etc/litellm/config.yaml
# The chart's probes replace the stack's Docker health check.
HEALTHCHECK NONE
