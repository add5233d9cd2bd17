#!/usr/bin/env bash
# Serve the site from several processes on one port: uvicorn's own workers, each a whole copy of
# evasite.asgi:application (pages, WebSockets, signalling), the kernel handing each new connection
# to one of them and uvicorn restarting one that dies. One process runs Python on one core at a
# time, so under load its pages queue behind each other; this uses every core
# (bench/pages_load.py measures both).
#
#   scripts/serve.sh [uvicorn flags]      e.g. scripts/serve.sh --host 0.0.0.0 --port 8000
#
# Workers: EVASITE_WEB_WORKERS, default the number of cores; flags given here win over the
# defaults below (--workers 1 is one process, like daphne). The processes share nothing in
# memory: what crosses them (live progress, Listen, Cancel) needs REDIS_URL; a human call is held by
# the process that accepted its WebSocket, and its signalling rides on that socket.
set -euo pipefail
cd "$(dirname "$0")/.."

workers="${EVASITE_WEB_WORKERS:-$(nproc)}"
args=("$@")
for i in "${!args[@]}"; do  # a --workers flag given here is the count the warning below is about
  case "${args[$i]}" in
    --workers=*) workers="${args[$i]#--workers=}" ;;
    --workers) workers="${args[$((i + 1))]:-$workers}" ;;
  esac
done
if [ "$workers" -gt 1 ] && [ -z "${REDIS_URL:-}" ]; then
  echo "serve.sh: $workers processes without REDIS_URL: each has its own in-memory channel layer, so a" \
       "run page follows a run live, Listen hears it and Cancel stops it only when they reach the process that runs it." >&2
fi

# --loop asyncio: the standard event loop daphne runs on too (aiortc's calls and Listen are tested
# on it), even where uvloop happens to be installed.
# --lifespan off: Django has no lifespan handler (uvicorn would log that it is unsupported).
# --no-proxy-headers: as with daphne, only Django decides what a proxy's headers mean
# (EVASITE_BEHIND_PROXY); uvicorn would otherwise trust X-Forwarded-* from loopback by itself.
exec .venv/bin/uvicorn evasite.asgi:application --host 127.0.0.1 --port 8000 --workers "$workers" \
  --loop asyncio --lifespan off --no-proxy-headers --no-access-log "$@"
