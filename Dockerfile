# tfop's container image: `tfop run` as a non-root user on a slim Python.
#
#   docker build -t REGISTRY/tfop:0.1.0 . && docker push REGISTRY/tfop:0.1.0
#
# The base is pinned by version tag. Pin it by digest too where you build (python:3.11.14-slim-bookworm@sha256:...,
# from `docker buildx imagetools inspect`); it could not be looked up where this file was written.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/tfop
WORKDIR /src
COPY pyproject.toml setup.cfg README.md constraints.txt ./
COPY tfop ./tfop
# A regular (not editable) install, byte-compiled by pip: the final image carries the venv alone, and its
# read-only root filesystem needs no .pyc written at run time. With the ui extra, so the one image also runs
# `tfop ui` (deploy/components/ui, the chart's ui.enabled). constraints.txt pins every dependency to what the
# tests ran with (`make constraints` refreshes it).
RUN /opt/tfop/bin/pip install -c constraints.txt '.[ui]'

FROM ${PYTHON_IMAGE}
COPY --from=build /opt/tfop /opt/tfop
ENV PATH=/opt/tfop/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# A numeric user, so that the pod's runAsNonRoot can be verified; 65532 is the usual "nonroot".
USER 65532:65532
# Metrics (/metrics, HTTPS) and health (/healthz, /readyz, plain HTTP for the kubelet).
EXPOSE 8443 8081
ENTRYPOINT ["tfop", "run"]
