"""Map the top-level folders into the single import namespace `gpusem` (DESIGN.md).

`calculus/bundl/` installs as `gpusem.calculus.bundl`, and so on: no generic top-level
name (`calculus`, `compiler`, ...) reaches site-packages. pyproject.toml holds the
metadata; only the folder-to-package mapping, which needs a directory walk, lives here.
"""

from pathlib import Path

from setuptools import setup

FOLDERS = ("cli", "calculus", "typing_rules", "interpreter", "compiler", "fuzz")
ROOT = Path(__file__).parent


def namespace_packages() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = ["gpusem"], {"gpusem": "gpusem_root"}
    for folder in FOLDERS:
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            packages.append("gpusem." + ".".join(rel.parts))
        package_dir["gpusem." + folder] = folder
    return packages, package_dir


packages, package_dir = namespace_packages()
setup(packages=packages, package_dir=package_dir)
