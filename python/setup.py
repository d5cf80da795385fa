"""Packages the xpusim Python module for pip, offline: builds the CMake target xpusim_python in
an existing build tree ($XPUSIM_BUILD_DIR, default the checkout's build/, configured by
scripts/build.sh), then puts xpusim/__init__.py, the compiled xpusim/_core*.so and a copy of
configs/ (found by __init__.py inside the package) into the wheel, with the CLI binary and its
engine plugins under xpusim/bin/ for the `xpusim` console script (xpusim/_cli.py). No download: run
  python3 -m pip install --no-index --no-build-isolation ./python
(in a venv made with --system-site-packages, Debian's pip refuses the system site-packages)."""
import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("XPUSIM_SOURCE_DIR", HERE.parent)).resolve()  # the checkout (configs/, CMakeLists.txt)
BUILD = Path(os.environ.get("XPUSIM_BUILD_DIR", SOURCE / "build")).resolve()


def project_version():
    m = re.search(r"project\(xpusim VERSION ([0-9.]+)", (SOURCE / "CMakeLists.txt").read_text())
    return m.group(1)


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        if not (BUILD / "CMakeCache.txt").is_file():
            raise SystemExit(f"no CMake build tree at {BUILD}: run scripts/build.sh first or set XPUSIM_BUILD_DIR")
        # The module, the CLI the console script runs, and the TPU engine plugin the CLI loads.
        subprocess.run(["cmake", "--build", str(BUILD), "--target", "xpusim_python", "xpusim", "xpusim_tpu_plugin"],
                       check=True)
        built = glob.glob(str(BUILD / "python" / "xpusim" / "_core*.so"))
        if len(built) != 1:
            raise SystemExit(f"expected one _core*.so under {BUILD}/python/xpusim, found {built}")
        package = Path(self.build_lib) / "xpusim"
        shutil.copy2(built[0], package)
        shutil.copytree(SOURCE / "configs", package / "configs", dirs_exist_ok=True)
        # The CLI finds plugins beside itself (predict/engine_module.cpp): bin/ holds both.
        (package / "bin").mkdir(exist_ok=True)
        shutil.copy2(BUILD / "cli" / "xpusim", package / "bin" / "xpusim")
        for plugin in glob.glob(str(BUILD / "plugins" / "*.so")):
            shutil.copy2(plugin, package / "bin")


class BinaryDistribution(Distribution):
    """A wheel tagged for this Python and platform: it holds a compiled module."""
    def has_ext_modules(self):
        return True


setup(
    name="xpusim",
    version=project_version(),
    description="Accelerator simulator and cost model for ML training",
    packages=["xpusim"],
    package_data={"xpusim": ["__init__.pyi", "py.typed"]},  # the type stub (PEP 561)
    python_requires=">=3.9",
    cmdclass={"build_py": BuildWithCMake},
    entry_points={"console_scripts": ["xpusim = xpusim._cli:main"]},  # the CLI on PATH (xpusim/_cli.py)
    distclass=BinaryDistribution,
)
