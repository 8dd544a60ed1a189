# The case image: the task's project at its base commit, plus the task's private files.
# ssebench.images.case_layer assembles the build context and passes the build args; see
# docs/image-layers.md.
#
# Build context:
#   repo/                  the project's source; it becomes SOURCE_DIR, one git commit
#   task/task.json         Task.container_metadata(), read by the runtime
#   task/hidden/           the hidden fail-to-pass tests
#   task/reference.patch   the reference solution
# Build args:
#   BASE_IMAGE   the task's base_image, as its author wrote it (an apt-based image)
#   PACKAGES     the task's Debian packages, space-separated; may be empty
#   SOURCE_DIR   where the project lives in the container (absolute path)
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

# What every task needs. No task-specific ARG is declared before this step, so every
# case image on the same base shares this layer in the build cache.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/*

ARG PACKAGES=""
# PACKAGES is unquoted on purpose: one word per package.
RUN if [ -n "$PACKAGES" ]; then \
      apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES \
      && rm -rf /var/lib/apt/lists/*; \
    fi

ARG SOURCE_DIR
COPY repo/ ${SOURCE_DIR}/
# One commit with a fixed author and date: the same repo/ gives the same commit ID on
# every machine. -f adds what the project's own .gitignore names, so the base commit is
# exactly repo/ (and what the environment put there: an imported Harbor task's workdir).
# --allow-empty: such a workdir may hold nothing yet; a commit of files is the same.
# The tag names it in the repository.
# safe.directory: the environment may have given SOURCE_DIR to a user of its own.
RUN cd "$SOURCE_DIR" \
 && git() { command git -c safe.directory='*' "$@"; } \
 && git -c init.defaultBranch=main init -q \
 && git add -A -f \
 && GIT_AUTHOR_NAME=ssebench GIT_AUTHOR_EMAIL=ssebench@localhost \
    GIT_COMMITTER_NAME=ssebench GIT_COMMITTER_EMAIL=ssebench@localhost \
    GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \
    git -c commit.gpgsign=false commit -q --no-verify --allow-empty -m "ssebench base" \
 && git tag ssebench-base

# The task's private files: root-only, so neither the agent nor the task's own
# scripts can read the hidden tests or the reference patch. task.json gets the base
# commit's ID (base_commit), which the runtime grades against.
COPY task/ /ssebench/task/
RUN python3 -c 'import json, sys; path = sys.argv[1]; data = json.load(open(path)); \
data["base_commit"] = sys.argv[2]; json.dump(data, open(path, "w"), indent=2, sort_keys=True)' \
      /ssebench/task/task.json "$(git -c safe.directory='*' -C "$SOURCE_DIR" rev-parse HEAD)" \
 && chown -R root:root /ssebench \
 && chmod 0755 /ssebench \
 && chmod 0700 /ssebench/task
