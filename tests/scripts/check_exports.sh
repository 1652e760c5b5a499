#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The shared library exports exactly the public API: every dynamic symbol it defines is a
# kiln_ function declared with KILN_API in include/kiln, and every such function is there.
set -euo pipefail
lib="$1"
include_dir="$2"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' \
           | grep -v -e '^_init$' -e '^_fini$' | sort -u)
declared=$(grep -h 'KILN_API' "$include_dir"/kiln/*.h | grep -v '#define' \
           | grep -o 'kiln_[a-z0-9_]*(' | tr -d '(' | sort -u)
extra=$(comm -23 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
missing=$(comm -13 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
if [ -n "$extra" ]; then
    echo "exports: symbols exported but not declared KILN_API:" $extra >&2
fi
if [ -n "$missing" ]; then
    echo "exports: KILN_API functions missing from the library:" $missing >&2
fi
[ -z "$extra$missing" ] || exit 1
echo "exports: $(printf '%s\n' "$exported" | wc -l) public symbols, exactly the KILN_API declarations"
