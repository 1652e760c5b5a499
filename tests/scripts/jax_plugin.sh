#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# JAX on kiln: installs the plugin's Python package (python/jax_kiln) with pip as a user
# does, into a directory of its own, with the libkiln_pjrt.so this build made, and runs
# tests/scripts/jax_plugin.py: JAX programs on kiln's devices against JAX on XLA's CPU in
# the same process. JAX comes from PyPI into tests/.venv-jax (scripts/jax_env.sh); when it
# cannot be installed the test says so and exits 77, which CTest reports as skipped.
# usage: jax_plugin.sh LIBKILN_PJRT SOURCE_DIR WORK_DIR
set -eu
lib=$1
src=$2
work=$3
py=$(sh "$src/tests/scripts/jax_python.sh" "$src" "$work.env.log") || exit $?
rm -rf "$work"
mkdir -p "$work"
# pip builds in the source folder: a copy keeps the checkout clean
cp -R "$src/python/jax_kiln" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info "$work/src/jax_plugins/kiln/libkiln_pjrt.so"
KILN_PJRT_LIBRARY="$lib" "$py" -m pip install --quiet --no-deps --no-build-isolation \
    --target "$work/site" "$work/src"
test -f "$work/site/jax_plugins/kiln/libkiln_pjrt.so"
cd "$work"
status=0
PYTHONPATH="$work/site" JAX_PLATFORMS=cpu,kiln KILN_CPU_DEVICES=2 "$py" "$src/tests/scripts/jax_plugin.py" || status=1
PYTHONPATH="$work/site" JAX_PLATFORMS=cpu,kiln JAX_ENABLE_X64=1 "$py" "$src/tests/scripts/jax_plugin.py" --x64 || status=1
# executions queued on the plugin's worker thread (outputs pending until they run)
PYTHONPATH="$work/site" JAX_PLATFORMS=cpu,kiln KILN_CPU_DEVICES=2 KILN_PJRT_EXECUTION=worker \
    "$py" "$src/tests/scripts/jax_plugin.py" || status=1
exit $status
