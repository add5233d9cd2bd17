#!/usr/bin/env bash
# The whole test suite, as CI runs it: every test on the pytest-xdist workers except the few
# marked `quiet`, then those one at a time. They judge what real-time speech was heard (Whisper
# through a relay, WebRTC in Chromium), and four busy workers on two cores garble it now and then;
# alone on the CPUs their verdicts are the product's, not the machine's. Extra arguments go to
# both phases (a phase that selects no test counts as passed).
set -uo pipefail
cd "$(dirname "$0")/.."

.venv/bin/python -m pytest -m "not quiet" "$@"
parallel=$?
.venv/bin/python -m pytest -m quiet -n 0 "$@"
alone=$?
[ "$parallel" -eq 5 ] && parallel=0  # 5: no tests collected
[ "$alone" -eq 5 ] && alone=0
[ "$parallel" -ne 0 ] && exit "$parallel"
exit "$alone"
