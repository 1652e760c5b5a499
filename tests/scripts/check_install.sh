#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the built kiln into a scratch prefix, then builds the example consumer against
# the installed package twice, through find_package(kiln) and through pkg-config, and
# runs both.
set -eu
build_dir="$1"
consumer_src="$2"
work="$3"
cc="$4"
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"
test -f "$prefix/include/kiln/kiln.h"

echo "== CMake: find_package(kiln)"
cmake -S "$consumer_src" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" >"$work/configure.log"
cmake --build "$work/cmake-build" >"$work/build.log"
"$work/cmake-build/consumer"
"$work/cmake-build/consumer_static"

echo "== pkg-config --cflags --libs kiln"
pcdir=$(dirname "$(find "$prefix" -name kiln.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs kiln)
echo "flags: $flags"
"$cc" -std=c17 "$consumer_src/main.c" -o "$work/consumer-pc" $flags
libdir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir kiln)
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc"
# Without LD_LIBRARY_PATH, as the README says: an rpath to the prefix's libdir.
"$cc" -std=c17 "$consumer_src/main.c" -o "$work/consumer-pc-rpath" $flags -Wl,-rpath,"$libdir"
"$work/consumer-pc-rpath"
"$cc" -std=c17 "$consumer_src/main.c" -o "$work/consumer-pc-static" \
      $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags kiln) "$libdir/libkiln.a" \
      $(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs kiln | sed 's/ -lkiln\b//')
"$work/consumer-pc-static"
echo "install: ok"
