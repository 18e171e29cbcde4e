"""The wheel's layout, the one part of the packaging that pyproject.toml cannot state.

The Hydra configs and the CUDA sources stay at the top of the checkout (``conf/``,
``kernels/``) and ship inside the package, as ``matchbench/conf`` and ``matchbench/kernels``
(``matchbench.core.paths.resource_dir`` finds them in either place). Packages and folders
are found, not listed, so a new family or config group needs no entry here. Everything
else is in pyproject.toml; ``tests/test_wheel.py`` checks what a wheel holds.
"""

from setuptools import find_namespace_packages, setup

#: package in the wheel -> (folder of the checkout, the files it ships from each subfolder).
RESOURCES = {
    "matchbench.conf": ("conf", ["*.yaml"]),
    "matchbench.kernels": ("kernels", ["*.cu", "*.cuh"]),
}

packages = find_namespace_packages(
    include=["matchbench", "matchbench.*", "hydra_plugins", "hydra_plugins.*"],
    exclude=["*.__pycache__"],
)
package_data = {
    "matchbench": [
        "py.typed",
        "data/papers/*.csv",
        "data/papers/*.md",
        "families/*/smoke/*.mtx",
        "families/*/smoke/*.md",
    ],
}
for package, (folder, files) in RESOURCES.items():
    # each subfolder is a package of data, so setuptools copies it without a warning
    found = [package] + [
        f"{package}.{sub}" for sub in find_namespace_packages(folder, exclude=["*.__pycache__"])
    ]
    packages += found
    package_data.update(dict.fromkeys(found, files))

setup(
    packages=packages,
    package_dir={package: folder for package, (folder, _) in RESOURCES.items()},
    package_data=package_data,
)
