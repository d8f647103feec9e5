"""The C++ half of `pip install .` (pyproject.toml has the rest): the extension _kiln is built by
kiln's own CMake build, not by setuptools' compiler driver, and copied where setuptools installs it.

KILN_BUILD_DIR picks the CMake build folder (default: build/pip); an existing one (build/release) is
reused, so only what changed is rebuilt. CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default 2)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent

class CMakeExtension(Extension):
  def __init__(self, name: str): super().__init__(name, sources=[])

class CMakeBuild(build_ext):
  def build_extension(self, ext: Extension):
    build = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build" / "pip")).resolve()
    if not (build / "CMakeCache.txt").exists():
      generator = ["-G", "Ninja"] if shutil.which("ninja") else []
      # the library and the extension only: no tests, examples or benchmarks (nor their dependencies)
      subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                      f"-DPython3_EXECUTABLE={sys.executable}", "-DKILN_BUILD_PYTHON=ON", "-DKILN_BUILD_TESTS=OFF",
                      "-DKILN_BUILD_EXAMPLES=OFF", "-DKILN_BUILD_BENCH=OFF"], check=True)
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")}
    subprocess.run(["cmake", "--build", str(build), "--target", ext.name], check=True, env=env)
    built = sorted((build / "python").glob(f"{ext.name}.*.so")) + sorted((build / "python").glob(f"{ext.name}.so"))
    if not built: raise RuntimeError(f"the CMake build in {build} made no {ext.name} module (is pybind11-dev installed?)")
    target = Path(self.get_ext_fullpath(ext.name))
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built[0], target)

# setuptools' metadata folder (kiln.egg-info) goes to build/, not into the source tree
(ROOT / "build").mkdir(exist_ok=True)
setup(ext_modules=[CMakeExtension("_kiln")], cmdclass={"build_ext": CMakeBuild}, options={"egg_info": {"egg_base": "build"}})
