#!/usr/bin/env bash
# The whole test suite, as CI runs it, in two phases at once. The few tests marked `quiet` judge
# what real-time speech was heard (Whisper through a relay, WebRTC in Chromium): they run in one
# process at normal priority, so they get the CPU whenever they want it. Everything else runs on
# the pytest-xdist workers under `nice -n 19`, taking only the CPU the quiet tests leave, so the
# machine is never idle while a real-time call waits for its next frame. The workers' output is
# shown as it comes, the quiet tests' after it. Extra arguments go to both phases (a phase that
# selects no test counts as passed).
set -uo pipefail
cd "$(dirname "$0")/.."
# Byte-code caches on: with PYTHONDONTWRITEBYTECODE set (as on these machines) every one of the
# suite's ~200 Python processes compiled the project, and each test process rewrote every test
# module's asserts again (half of a 8 s collection). Written once, they are read by the rest.
unset PYTHONDONTWRITEBYTECODE

quiet_log=$(mktemp)
# The migrated SQLite templates (tests/sqlite_template.py), built once for all the test processes.
EVASITE_TEST_TEMPLATES=$(mktemp -d)
export EVASITE_TEST_TEMPLATES
trap 'rm -rf "$quiet_log" "$EVASITE_TEST_TEMPLATES"' EXIT
# Built beside the test processes' start-up (a test that needs one first waits on its lock; if
# this fails, the first test that needs a template builds it).
.venv/bin/python -c "from tests.sqlite_template import prebuild; prebuild()" &
prebuild_pid=$!
.venv/bin/python -m pytest -m quiet -n 0 "$@" >"$quiet_log" 2>&1 &
quiet_pid=$!
nice -n 19 .venv/bin/python -m pytest -m "not quiet" "$@"
parallel=$?
wait "$quiet_pid"
alone=$?
wait "$prebuild_pid"
echo
echo "=== the quiet tests, run alongside at normal priority ==="
cat "$quiet_log"
[ "$parallel" -eq 5 ] && parallel=0  # 5: no tests collected
[ "$alone" -eq 5 ] && alone=0
[ "$parallel" -ne 0 ] && exit "$parallel"
exit "$alone"
