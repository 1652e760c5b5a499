#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The demo without its data file: a non-zero exit and a message naming the package.
set -u
demo="$1"
out=$("$demo" --quick --data /nonexistent/sklearn/digits.csv.gz 2>&1)
rc=$?
echo "$out"
if [ "$rc" -eq 0 ]; then
    echo "check_demo_missing_data: the demo exited 0 without its data" >&2
    exit 1
fi
case "$out" in
*"apt-get install python3-sklearn"*"make deps"*) ;;
*) echo "check_demo_missing_data: the message does not name the package to install" >&2
   exit 1 ;;
esac
echo "check_demo_missing_data: ok (exit $rc)"
