"""Builds the tpu_dist torch extension against the installed torch and libtpu_dist.

libtpu_dist is found with pkg-config (tpu_dist.pc after `make install`, or the build tree's
tpu_dist-uninstalled.pc with PKG_CONFIG_PATH=<top of the build tree>); an rpath to its directory
is added so no LD_LIBRARY_PATH is needed. PKG_CONFIG names the pkg-config command (e.g.
"pkg-config --define-prefix" for an install tree copied to another place). TD_WERROR=1 turns warnings into errors (the tests build
that way on every torch they cover).
"""
import os
import shlex
import subprocess

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths


def pkg_config(flag):
    cmd = shlex.split(os.environ.get("PKG_CONFIG", "pkg-config"))
    out = subprocess.check_output(cmd + [flag, "tpu_dist"], text=True)
    return shlex.split(out)


cflags = pkg_config("--cflags")
libs = pkg_config("--libs")
lib_dirs = [f[2:] for f in libs if f.startswith("-L")]
link_args = [f for f in libs if not f.startswith("-L")]
link_args += ["-Wl,-rpath," + d for d in lib_dirs]

setup(
    name="tpu_dist",
    version="0.1.0",
    packages=["tpu_dist"],
    ext_modules=[
        CppExtension(
            "tpu_dist._C",
            ["csrc/process_group.cpp", "csrc/group.cpp", "csrc/group_defer.cpp",
             "csrc/group_reconf.cpp", "csrc/module.cpp"],
            include_dirs=[f[2:] for f in cflags if f.startswith("-I")],
            library_dirs=lib_dirs,
            # torch's headers as system headers: a newer gcc's warnings inside them (gcc 14's
            # -Wdangling-reference on torch 2.6) are torch's, not the plugin's
            extra_compile_args=["-O2", "-Wall", "-Woverloaded-virtual"] +
            [f for d in include_paths() for f in ("-isystem", d)] +
            (["-Werror"] if os.environ.get("TD_WERROR") == "1" else []),
            extra_link_args=link_args,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
