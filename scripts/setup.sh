#!/usr/bin/env bash
# Installs what qklab needs to build, test and run on Debian 12 / Ubuntu. Idempotent: a second
# run checks and does nothing (a second or two). Uses sudo when not run as root.
#
#  1. Debian packages (compiler, Qt 6, QCustomPlot, SQLite, JSON, CLI11, GoogleTest, Xvfb).
#  2. LibTorch: PyTorch's torch wheel (scripts/torch-requirements.txt: 2.15, CPU + CUDA 13)
#     in a virtual environment outside the checkout, shared by every clone and by CI:
#     ${QKLAB_VENV:-~/.local/share/qklab/venv}. About 3.0 GB to download, 5.4 GB on disk.
#  3. What the Python package's tests need in that environment (scripts/python-test-
#     requirements.txt: transformers, pytest; about 15 MB): scripts/test.sh installs the
#     package (pip install ./app/python) into it and runs app/python/tests.
#
# Environment:
#   QKLAB_TORCH=debian         skip the wheel; use Debian's libtorch-dev 1.13 instead (CPU only,
#                              the offline fallback: build with QKLAB_TORCH=debian scripts/build.sh)
#   QKLAB_WITH_DEBIAN_TORCH=1  install libtorch-dev as well (scripts/test.sh compiles core + CLI
#                              against it too, so its version guards stay honest)
#   QKLAB_WITH_SLURM=1         install Slurm 22.05 and munge (scripts/slurm-check.sh stands up a
#                              single-node cluster with them; scripts/test.sh runs it as root)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${QKLAB_VENV:-$HOME/.local/share/qklab/venv}
requirements=scripts/torch-requirements.txt
torch_source=${QKLAB_TORCH:-pip}

packages=(
  cmake g++ make git ccache pkg-config clang-format
  qt6-base-dev libqcustomplot-dev            # the desktop app
  libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev libgtest-dev
  xvfb xauth imagemagick                     # GUI tests and screenshots
)
# python3-dev: Python's headers, for the Python package's extension (app/python).
if [ "$torch_source" = pip ]; then packages+=(python3 python3-venv python3-dev); fi
if [ "$torch_source" = debian ] || [ "${QKLAB_WITH_DEBIAN_TORCH:-0}" = 1 ]; then
  # Debian's LibTorch falls back to the reference BLAS without the OpenMP OpenBLAS (~20x slower).
  packages+=(libtorch-dev libopenblas0-openmp)
fi

if [ "${QKLAB_WITH_SLURM:-0}" = 1 ]; then packages+=(slurm-wlm slurmctld slurmd munge); fi

install_debian_packages() {
  local missing=() p sudo=""
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: Debian packages present"
    return
  fi
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The requirements file's hash, kept in the venv: equal means the wheel set is installed.
requirements_stamp() { sha256sum "$requirements" | cut -d' ' -f1; }

torch_present() {
  [ -x "$venv/bin/python" ] && [ -f "$venv/.qklab-requirements" ] &&
    [ "$(cat "$venv/.qklab-requirements")" = "$(requirements_stamp)" ] &&
    "$venv/bin/python" -c 'import importlib.metadata as m; m.version("torch")' 2>/dev/null
}

# One quick question to the package index pip is configured with (no retries).
registry_reachable() {
  "$venv/bin/python" -m pip index versions torch --retries 0 --timeout 20 >/dev/null 2>&1
}

install_torch() {
  if torch_present; then
    echo "setup: torch $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))') present in $venv"
    return
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  if ! registry_reachable; then
    echo "setup: cannot reach the Python package index (PyPI) to install torch into $venv;" \
         "offline fallback: QKLAB_TORCH=debian scripts/test.sh (Debian's libtorch-dev 1.13, CPU only)" >&2
    exit 1
  fi
  echo "setup: installing $(grep -v '^#' "$requirements" | tr '\n' ' ')into $venv"
  echo "setup: about 3.0 GB to download (torch with its CUDA 13 runtime wheels), 5.4 GB on disk"
  local log
  log=$(mktemp)
  # pip names every file it downloads with its size; the sum goes last.
  "$venv/bin/python" -m pip install --progress-bar off -r "$requirements" 2>&1 | tee "$log" |
    grep --line-buffered -E '^ *Downloading|^Successfully installed|ERROR' || true
  if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
    echo "setup: installing torch failed; pip's output is in $log" >&2
    exit 1
  fi
  awk '/^ *Downloading .*\((.*) (kB|MB|GB)\)$/ {
         n = $(NF - 1); sub(/\(/, "", n); unit = $NF
         total += n * (unit == "GB)" ? 1000 : unit == "MB)" ? 1 : 0.001); files++ }
       END { if (files) printf "setup: downloaded %d files, %.0f MB\n", files, total }' "$log"
  requirements_stamp >"$venv/.qklab-requirements"
  rm -f "$log"
  echo "setup: $(du -sh "$venv" | cut -f1) in $venv"
}

# The Python package's test dependencies, kept apart from the torch stamp so that adding one
# never reinstalls torch.
python_test_requirements=scripts/python-test-requirements.txt
install_python_test_deps() {
  local stamp="$venv/.qklab-python-test-requirements"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(sha256sum "$python_test_requirements" | cut -d' ' -f1)" ]; then
    echo "setup: Python package test requirements present"
    return
  fi
  echo "setup: installing $(grep -v '^#' "$python_test_requirements" | tr '\n' ' ')into $venv"
  "$venv/bin/python" -m pip install --progress-bar off -q -r "$python_test_requirements"
  sha256sum "$python_test_requirements" | cut -d' ' -f1 >"$stamp"
}

install_debian_packages
if [ "$torch_source" = pip ]; then
  install_torch
  install_python_test_deps
fi
