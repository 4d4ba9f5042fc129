# syntax=docker/dockerfile:1
#
# stream-guard worker image: Python 3.11 slim, the package with its `nlp` (spaCy + model) and `stream`
# (Faust, aiokafka, rocksdict) extras in a virtualenv, running as a non-root user.
#
#   docker build -t stream-guard:0.2.0 .
#   docker run --rm -e STREAM_GUARD_BROKER=kafka:9092 -p 127.0.0.1:6066:6066 -v sg-data:/var/lib/stream-guard stream-guard:0.2.0
#
# The worker needs a broker: without STREAM_GUARD_BROKER (or --broker) the container exits 2 with the reason,
# rather than run healthy on a private in-memory broker consuming nothing. Logs are JSON lines
# (STREAM_GUARD_LOG_FORMAT=json below; set it to text for people).
#
# Written on a machine without a Docker engine: never built there (see deploy/OPERATIONS.md).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: resolve and install everything into /opt/venv ------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build

# Set by BuildKit (amd64, arm64, ...). On x86_64 every dependency is a binary wheel and no compiler is needed.
# faust-streaming 0.15.3 publishes x86_64 wheels only: elsewhere pip builds it from source, and a C compiler
# gives it its Cython speedups (without one its setup.py falls back to pure Python, which also works).
ARG TARGETARCH
RUN if [ "${TARGETARCH:-amd64}" != "amd64" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends gcc libc6-dev \
        && rm -rf /var/lib/apt/lists/*; \
    fi

ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
# Only what the wheel needs: pyproject.toml names README.md as the long description.
COPY pyproject.toml README.md ./
COPY stream_guard ./stream_guard
COPY agents ./agents
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --upgrade pip \
    && pip install '.[nlp,stream]' \
    && stream-guard --help > /dev/null \
    && python -c "import stream_guard.agents.app, faust, rocksdict; from stream_guard.text.ner import make_recognizer; print(make_recognizer('spacy').name)"

# --- runtime -----------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

LABEL org.opencontainers.image.title="stream-guard" \
      org.opencontainers.image.description="CPU-only hallucination guard for RAG answers on Kafka (Faust worker)" \
      org.opencontainers.image.licenses="MIT"

ARG UID=10001
ARG GID=10001
RUN groupadd --system --gid "${GID}" streamguard \
    && useradd --system --uid "${UID}" --gid streamguard --home-dir /home/streamguard --create-home \
       --shell /usr/sbin/nologin streamguard \
    && mkdir -p /var/lib/stream-guard \
    && chown "${UID}:${GID}" /var/lib/stream-guard

COPY --from=build /opt/venv /opt/venv

# STREAM_GUARD_WEB_HOST: the settings default is 127.0.0.1, which nothing outside the container can reach;
# /metrics, /healthz and /readyz must answer on the container's address for probes and Prometheus. Those three
# are all the port serves (Faust's table and router views are off: they would hand any tenant's drift history
# to whoever asks). Publish it to the host's loopback (`-p 127.0.0.1:6066:6066`), not to every interface, and
# in Kubernetes let only Prometheus in (deploy/k8s/networkpolicy.yaml).
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    STREAM_GUARD_DATA_DIR=/var/lib/stream-guard \
    STREAM_GUARD_WEB_HOST=0.0.0.0 \
    STREAM_GUARD_WEB_PORT=6066 \
    STREAM_GUARD_LOG_FORMAT=json

WORKDIR /home/streamguard
# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001

# RocksDB tables (drift history, alerts sent). Losing it is safe: the tables are restored from their
# changelog topics at startup, which takes longer.
VOLUME ["/var/lib/stream-guard"]
# /metrics (Prometheus), /healthz (liveness), /readyz (tables recovered, not rebalancing).
EXPOSE 6066

ENTRYPOINT ["stream-guard"]
CMD ["worker"]
