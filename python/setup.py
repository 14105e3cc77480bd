"""setup.py - builds libsavedmodel.so with CMake from the repository around this directory and puts
it inside the package (savedmodel/libsavedmodel.so), so `pip install ./python` gives a package
that works on its own. The metadata is in pyproject.toml; the version is the CMake project's.

Environment:
  SAVEDMODEL_CMAKE_BUILD_DIR  the CMake build directory to configure (when not yet) and build the
                              `savedmodel_shared` target in; default python/build/cmake. Pointing
                              it at an existing build (e.g. the repository's build/) reuses it.
  CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: the number of CPUs).
  SAVEDMODEL_CMAKE_ARGS       extra configure arguments (e.g. -DCMAKE_C_COMPILER_LAUNCHER=ccache).
A new build directory is configured RelWithDebInfo (what `make` builds) with SM_WERROR=OFF.
"""
import os
import re
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*savedmodel\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError(f"no `project(savedmodel VERSION ...)` in {ROOT}/CMakeLists.txt")
    return m.group(1)


def build_library():
    """Configures (when needed) and builds libsavedmodel.so; returns its path."""
    if not os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")):
        raise RuntimeError(f"savedmodel: {ROOT} is not the libsavedmodel repository (no CMakeLists.txt): "
                           "install from the repository checkout with `pip install ./python`")
    if shutil.which("cmake") is None:
        raise RuntimeError("savedmodel: cmake not found; run tools/install-deps.sh (Debian) first")
    build = os.path.abspath(os.environ.get("SAVEDMODEL_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "cmake"))
    configured = os.path.isfile(os.path.join(build, "CMakeCache.txt")) and (
        os.path.isfile(os.path.join(build, "Makefile")) or os.path.isfile(os.path.join(build, "build.ninja")))
    if not configured:
        args = shlex.split(os.environ.get("SAVEDMODEL_CMAKE_ARGS", ""))
        # the configuration `make` builds and tests; warnings do not fail a user's install (a newer
        # compiler may warn where the tested one does not)
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                               "-DSM_WERROR=OFF"] + args)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
    subprocess.check_call(["cmake", "--build", build, "--target", "savedmodel_shared", "-j", jobs])
    lib = os.path.join(build, "libsavedmodel.so")
    if not os.path.isfile(lib):
        raise RuntimeError(f"savedmodel: the build did not produce {lib}")
    return os.path.realpath(lib)


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "savedmodel", "libsavedmodel.so")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        lib = build_library()
        shutil.copyfile(lib, dest)
        # the regex ops' RE2 module (built when libre2-dev is there), found beside the library
        re2 = os.path.join(os.path.dirname(lib), "libsavedmodel_re2.so")
        if os.path.isfile(re2):
            shutil.copyfile(re2, os.path.join(os.path.dirname(dest), "libsavedmodel_re2.so"))


class BinaryDistribution(Distribution):
    """The wheel carries a native library: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


setup(version=project_version(), cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
