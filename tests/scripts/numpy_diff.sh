#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential test of kiln's op builders against numpy.
#
#   numpy_diff.sh OP_TOOL PYTHON WORKDIR
#
# OP_TOOL is kiln_op_tool (tests/support/op_tool.c), PYTHON a Python 3 with numpy (Debian's
# /usr/bin/python3 and python3-numpy), WORKDIR a scratch folder (created; the case files
# left there after a failure are what the printed `rerun:` lines use).
# The cases, the references and the tolerances are in numpy_diff.py next to this script;
# its environment variables (KILN_DIFF_FILTER=REGEX, KILN_DIFF_SEED=N, KILN_DIFF_VERBOSE=1,
# KILN_DIFF_ALLOW_UNIMPLEMENTED=1) narrow or widen a run by hand.
# Exits non-zero, after a reproducer per failing case, when any case fails.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 OP_TOOL PYTHON WORKDIR" >&2
    exit 2
fi
tool=$1
python=$2
workdir=$3

if [[ ! -x $tool ]]; then
    echo "numpy_diff: $tool is not an executable" >&2
    exit 1
fi
if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "numpy_diff: $python cannot import numpy (on Debian: apt-get install python3-numpy)" >&2
    exit 1
fi
mkdir -p "$workdir"
exec "$python" "$(dirname "$0")/numpy_diff.py" "$tool" "$workdir"
