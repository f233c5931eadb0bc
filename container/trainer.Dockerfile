# A trainer image on the tfjob base: copy this file next to your trainer package and
# build from that directory:
#   docker build -f trainer.Dockerfile -t REGION-docker.pkg.dev/PROJECT/REPO/trainer:1 .
# (--build-arg BASE_IMAGE=tfjob:0.1.0-gpu for the GPU base.) Run a task with
#   docker run IMAGE --module trainer.task -- --your --args
ARG BASE_IMAGE=tfjob:0.1.0
FROM ${BASE_IMAGE}

LABEL org.opencontainers.image.title="tfjob-trainer" \
      org.opencontainers.image.description="A TensorFlow trainer started by tfjob-bootstrap"

# The bootstrap runs `python -m MODULE` from /trainer (the base's WORKDIR), so the
# trainer package is importable as copied; its own dependencies, if it lists any,
# go to the non-root user's site-packages.
COPY --chown=tfjob:tfjob . /trainer
RUN if [ -f requirements.txt ]; then \
        python -m pip install --no-cache-dir --user -r requirements.txt; \
    fi

CMD ["--module", "trainer.task"]
