#!/usr/bin/env bash
# Stop the servers scripts/start_llm.sh started, by the PIDs in its PID file (never by name).
set -uo pipefail
PIDFILE="${HG_LLM_PIDFILE:-/tmp/harness-gym-llm.pid}"
[ -s "$PIDFILE" ] || { echo "stop_llm.sh: no PID file $PIDFILE; nothing to stop"; exit 0; }
for pid in $(cat "$PIDFILE"); do
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  echo "stopped $pid"
done
rm -f "$PIDFILE"
