"""Ships the top-level ``envs_data/`` folder inside the package as ``harness_gym/envs_data``."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        src = Path(__file__).parent / "envs_data"
        dst = Path(self.build_lib) / "harness_gym" / "envs_data"
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst)


setup(cmdclass={"build_py": BuildWithData})
