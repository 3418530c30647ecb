#!/usr/bin/env bash
# The Python package as a user installs it: `pip install ./app/python` into the torch
# environment scripts/setup.sh made (${QKLAB_VENV:-~/.local/share/qklab/venv}), then its tests
# (app/python/tests: attention finders of tiny GPT-2, Llama, Qwen3, Gemma 2 and nanoGPT-like
# models, stored probes against fp64, SIGKILL, show/compare/export through the build's CLI).
# Extra arguments go to pip (scripts/test.sh passes -Werror like the rest of its build).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${QKLAB_VENV:-$HOME/.local/share/qklab/venv}
cli=${QKLAB_CLI:-$PWD/${QKLAB_BUILD_DIR:-build}/app/cli/qklab-cli}
start=$(date +%s)
cached=$(scripts/ccache-stats.sh count)
"$venv/bin/python" -m pip install --progress-bar off -q --force-reinstall --no-deps "$@" ./app/python
echo "python-check: installed the package in $(($(date +%s) - start)) s"
# The package builds in build-python-*/ beside build/ (app/python/pyproject.toml): the core's
# objects are the main build's, from ccache.
scripts/ccache-stats.sh since "$cached" "python-check: the package's build"
# From outside the checkout, so that `import qklab` is the installed package.
cd "$(mktemp -d)"
HF_HUB_OFFLINE=1 QKLAB_CLI="$cli" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$OLDPWD/app/python/tests"
echo "python-check: done in $(($(date +%s) - start)) s"
