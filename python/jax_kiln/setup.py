# SPDX-License-Identifier: Apache-2.0
"""Builds libkiln_pjrt.so with the repository's CMake build and puts it in the package.

`pip install ./python/jax_kiln` runs this from the repository; KILN_PJRT_LIBRARY names an
already built library to take instead.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.path.join(HERE, "jax_plugins", "kiln", "libkiln_pjrt.so")


def library():
    given = os.environ.get("KILN_PJRT_LIBRARY")
    if given:
        return given
    build = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
    subprocess.check_call(["cmake", "--build", build, "--target", "kiln_pjrt", "-j",
                           str(os.cpu_count() or 1)])
    return os.path.join(build, "libkiln_pjrt.so")


class BuildWithLibrary(build_py):
    def run(self):
        shutil.copyfile(library(), TARGET)
        super().run()


setup(cmdclass={"build_py": BuildWithLibrary})
