#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Makes a virtual environment from a pinned requirements file, once, and again whenever the
# file changes (a stamp in the venv holds the file's sha256). One installer at a time per
# venv (a lock beside it).
# usage: venv.sh VENV REQUIREMENTS PYTHON LABEL
set -eu
venv=$1 req=$2 base=$3 label=$4
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp="$venv/.requirements.sha256"
up_to_date() { [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; }
if up_to_date; then
    echo "$label: $venv is up to date"
    exit 0
fi
exec 9>"$venv.lock"
flock 9
up_to_date && exit 0
echo "$label: installing $req into $venv (with $base; a few minutes the first time)"
rm -rf "$venv"
"$base" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" >"$stamp"
