# kraftpy image: one image for the controller, the brokers and the admin CLI.
#   docker build -t kraftpy:local .
#   docker run --rm kraftpy:local kraftpy --help
# docker-compose.yml runs a cluster from it (3 controllers, 3 brokers with 3 log dirs each).
# The `analysis` target adds Java and PySpark for `kraftpy analyze` (README: In containers).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS uv
# Install exactly what uv.lock pins, into a venv that the runtime stage copies as a whole.
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/kraftpy
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./

FROM uv AS build
# Dependencies first: this layer is reused until pyproject.toml or uv.lock change.
# PySpark (the offline metadata analysis) needs Java and is not part of a node's runtime.
RUN uv sync --frozen --no-dev --no-install-project --no-install-package pyspark
COPY protocol ./protocol
COPY kraftpy ./kraftpy
COPY tools ./tools
COPY controller ./controller
COPY broker ./broker
RUN uv sync --frozen --no-dev --no-editable --no-install-package pyspark

# `docker build --target analysis -t kraftpy:analysis .`: the same environment plus PySpark and a
# Java runtime, for `kraftpy analyze` on a controller's metadata volume.
FROM uv AS analysis-build
# Every dependency, PySpark too: reused until the lock changes, whatever happens to the sources.
RUN uv sync --frozen --no-dev --no-install-project
COPY --from=build /src /src
RUN uv sync --frozen --no-dev --no-editable

FROM ${PYTHON_IMAGE} AS analysis
# openjdk's postinst links man pages into /usr/share/man/man1, which slim images may lack.
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 kraftpy \
    && useradd --system --uid 10001 --gid kraftpy --home-dir /var/lib/kraftpy --no-create-home \
        --shell /usr/sbin/nologin kraftpy \
    && mkdir -p /var/lib/kraftpy /analysis \
    && chown kraftpy:kraftpy /var/lib/kraftpy /analysis
COPY --from=analysis-build /opt/kraftpy /opt/kraftpy
ENV PATH=/opt/kraftpy/bin:$PATH \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /var/lib/kraftpy
CMD ["kraftpy", "analyze", "--help"]

# The node image (the default target): a controller, a broker or the admin CLI.
FROM ${PYTHON_IMAGE} AS node
RUN groupadd --system --gid 10001 kraftpy \
    && useradd --system --uid 10001 --gid kraftpy --home-dir /var/lib/kraftpy --no-create-home \
        --shell /usr/sbin/nologin kraftpy \
    && mkdir -p /var/lib/kraftpy /etc/kraftpy \
    && chown kraftpy:kraftpy /var/lib/kraftpy
COPY --from=build /opt/kraftpy /opt/kraftpy
COPY docker/healthcheck.py /usr/local/bin/kraftpy-healthcheck
ENV PATH=/opt/kraftpy/bin:$PATH \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /var/lib/kraftpy
# 9091: a broker's HTTP RPC (and /healthz, /metrics), 9092: its Kafka-protocol listener;
# 9093: a controller's listener (HTTP RPC, /healthz, /metrics).
EXPOSE 9091 9092 9093
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=5 \
    CMD ["python", "/usr/local/bin/kraftpy-healthcheck"]
CMD ["kraftpy", "--help"]
