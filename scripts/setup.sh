#!/usr/bin/env bash
# Installs what qklab needs to build, test and run on Debian 12 / Ubuntu (idempotent: does
# nothing when everything is present). Uses sudo when not run as root.
set -euo pipefail
packages=(
  cmake g++ make git ccache pkg-config
  libtorch-dev libopenblas0-openmp          # LibTorch; OpenMP OpenBLAS (the reference BLAS trains ~20x slower)
  qt6-base-dev libqcustomplot-dev            # the desktop app
  libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev libgtest-dev
  xvfb xauth imagemagick                     # GUI tests and screenshots
)
if [ "${QKLAB_WITH_PYTHON_PEER:-0}" = 1 ]; then packages+=(python3-torch); fi  # benchmarks only
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
