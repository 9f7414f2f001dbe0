"""The pipeline's entry points, from the top-level package: each its stage's own, loaded lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import pmc


def test_each_entry_point_is_its_packages_public_name() -> None:
    assert set(pmc.__all__) == {"ENTRY_POINTS", "__version__", *pmc.ENTRY_POINTS}
    for name, package in pmc.ENTRY_POINTS.items():
        module = importlib.import_module(package)
        assert name in module.__all__, (name, package)
        assert getattr(pmc, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="run_everything"):
        pmc.run_everything  # noqa: B018


def test_importing_pmc_imports_no_stage() -> None:
    """``import pmc`` (which every ``pmc.*`` import runs first) loads no stage's package."""
    code = "import sys, pmc; print(sorted(m for m in sys.modules if m.startswith('pmc.')))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
