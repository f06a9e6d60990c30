#!/usr/bin/env bash
# Install Debian's PostgreSQL server when its binaries are missing (the Postgres checkpointer tests
# start a private server with initdb + pg_ctl). Idempotent and quiet; needs root and the Debian mirror.
set -euo pipefail

has_server() {
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
}

if has_server; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-postgres: PostgreSQL server binaries are missing and this is not root; run: apt-get install postgresql" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends postgresql >/dev/null

if ! has_server; then
  echo "install-postgres: installed the postgresql package but found no /usr/lib/postgresql/*/bin/initdb" >&2
  exit 1
fi
echo "install-postgres: $(ls -d /usr/lib/postgresql/*/bin | tail -n 1) ready"
