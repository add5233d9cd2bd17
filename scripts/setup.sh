#!/usr/bin/env bash
# Fresh-machine set-up: Debian speech tools (plus redis-server and PostgreSQL, which only the
# tests start), a virtualenv with the pinned requirements, the database schema and the scenario
# mirror. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need_apt+=(sox)
# Only the tests use these: they start their own redis-server and PostgreSQL cluster to check
# the Redis channel layer and DATABASE_URL storage for real.
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
# Browser tests (pages, WebRTC calls) drive Debian's Chromium through Playwright, at the path
# tests/browser.py names (CHROMIUM); another chromium on PATH would not do.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi

PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python manage.py load_scenarios
# The site's first login: prints the generated admin password once, keeps it in .admin_password.
.venv/bin/python manage.py create_local_admin
.venv/bin/python manage.py check
