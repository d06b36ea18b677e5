# syntax=docker/dockerfile:1
# One image for every process: the API and dashboard (`gpu-tracker api`, the default command), the
# worker (`gpu-tracker worker`) and migrations (`gpu-tracker db upgrade`). See docker-compose.yml.
# No secret is baked in: the database URL, the API token and provider credentials arrive at run time
# as files (Compose secrets, read by docker/entrypoint.sh or by the app itself) or as environment.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY tracker ./tracker
COPY providers ./providers
COPY api ./api
COPY migrations ./migrations
# Wheels for the app and every dependency, so the final stage installs offline and keeps no sources.
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TRACKER_DATA_DIR=/var/lib/gpu-tracker
RUN groupadd --system --gid 10001 tracker \
 && useradd --system --uid 10001 --gid tracker --home-dir /var/lib/gpu-tracker --create-home --shell /usr/sbin/nologin tracker
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-index --find-links /tmp/wheels gpu-price-tracker && rm -rf /tmp/wheels
COPY docker/entrypoint.sh /usr/local/bin/gpu-tracker-entrypoint
RUN chmod 0755 /usr/local/bin/gpu-tracker-entrypoint

# Numeric, so orchestrators that require a non-root user (runAsNonRoot) can verify it.
USER 10001:10001
WORKDIR /var/lib/gpu-tracker
EXPOSE 8000
# For the API; compose disables it for the worker and the one-shot migration, which serve no HTTP.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["gpu-tracker-entrypoint"]
CMD ["gpu-tracker", "api", "--host", "0.0.0.0", "--port", "8000"]
