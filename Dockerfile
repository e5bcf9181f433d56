# kraftpy image: one image for the controller, the brokers and the admin CLI.
#   docker build -t kraftpy:local .
#   docker run --rm kraftpy:local kraftpy --help
# docker-compose.yml runs a cluster from it (3 controllers, 3 brokers with 3 log dirs each).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# Install exactly what uv.lock pins, into a venv that the runtime stage copies as a whole.
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/kraftpy
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
# Dependencies first: this layer is reused until pyproject.toml or uv.lock change.
# PySpark (the offline metadata analysis) needs Java and is not part of a node's runtime.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project --no-install-package pyspark
COPY protocol ./protocol
COPY kraftpy ./kraftpy
COPY tools ./tools
COPY controller ./controller
COPY broker ./broker
RUN uv sync --frozen --no-dev --no-editable --no-install-package pyspark

FROM ${PYTHON_IMAGE}
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
