#!/bin/sh
# Container entry point: read the settings the application takes only from the environment out of
# secret files (`<NAME>_FILE`, e.g. Compose secrets under /run/secrets), so neither the image, the
# compose file nor `docker inspect` ever holds them; then run the command.
# Provider credentials need no help here: the application itself reads TRACKER_<NAME>_FILE and
# TRACKER_SECRETS_DIR/<name>.
set -eu

for name in TRACKER_DATABASE_URL TRACKER_API_TOKEN; do
  eval "file=\${${name}_FILE:-}"
  [ -n "$file" ] || continue
  eval "given=\${${name}:-}"
  if [ -n "$given" ]; then
    echo "gpu-tracker: both $name and ${name}_FILE are set; set only one" >&2
    exit 64
  fi
  if [ ! -r "$file" ]; then
    echo "gpu-tracker: ${name}_FILE=$file is not a readable file" >&2
    exit 66
  fi
  value=$(cat "$file")
  export "$name=$value"
  unset "${name}_FILE"
done

exec "$@"
