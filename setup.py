"""Package discovery for setuptools (the rest of the metadata is in pyproject.toml).

Nothing is listed by hand: a hand-kept list drifts (a wheel once shipped without
``tickwork.engine`` and could not be imported). The core is found under ``src/``, the built-in
plugins under ``plugins/`` and the migrations under ``alembic/``, installed as
``tickwork._migrations``. This file exists because ``[tool.setuptools.packages.find]`` cannot add
a package whose directory is mapped to another name. ``tests/system/test_wheel.py`` builds the wheel and
the sdist and runs them outside the checkout.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, find_packages, setup

CORE = find_packages("src")
PLUGINS = find_packages("plugins")
MIGRATIONS = [
    "tickwork._migrations",
    *(f"tickwork._migrations.{p}" for p in find_namespace_packages("alembic", exclude=["*__pycache__*"])),
]

setup(
    packages=[*CORE, *PLUGINS, *MIGRATIONS],
    package_dir={
        "": "src",
        **{name: f"plugins/{name}" for name in PLUGINS if "." not in name},
        "tickwork._migrations": "alembic",
    },
)
