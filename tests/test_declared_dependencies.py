"""Every third-party module pmc imports comes from a distribution pyproject.toml declares.

The source is read with ``ast`` (no module is imported), each import's top-level name mapped to
its distributions through ``importlib.metadata.packages_distributions()``, and compared with
the base requirements and the extras (``dev`` is for tests, not for pmc). An optional plug-in's
import inside a function counts against its extra like any other.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "pmc"
INSTALLED_APART = {
    "torch": "the duplex server's environment installs PyTorch apart (pyproject.toml)",
    "moshi": "the duplex server's environment installs moshi apart, with --no-deps",
}
"""Imported, and on purpose in no requirement: ``make duplex-env`` installs them itself."""


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_names(root: Path) -> dict[str, set[str]]:
    """Top-level names of the modules imported anywhere under ``root``, with where."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("pmc", "__future__"):
                    found.setdefault(top, set()).add(str(path.relative_to(root.parent)))
    return found


def declared() -> set[str]:
    """The distributions of the base requirements and every extra but ``dev``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    requirements = [*project["dependencies"]]
    requirements += [r for name, reqs in extras.items() if name != "dev" for r in reqs]
    names = set()
    for requirement in requirements:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert match, f"pyproject.toml: cannot read the requirement {requirement!r}"
        names.add(canonical(match.group(0)))
    return names


def test_every_third_party_import_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    wanted = declared()
    undeclared = []
    for name, where in sorted(imported_names(SOURCE).items()):
        if name in INSTALLED_APART:
            continue
        # Not installed here (the duplex server's own packages): the import name is the
        # distribution's.
        candidates = {canonical(d) for d in distributions.get(name, [name])}
        if not candidates & wanted:
            undeclared.append(f"{name} ({', '.join(sorted(candidates))}; in {min(where)})")
    assert not undeclared, "imported but not declared in pyproject.toml: " + "; ".join(undeclared)


def test_the_check_finds_an_undeclared_import(tmp_path: Path) -> None:
    package = tmp_path / "pmc"
    package.mkdir()
    (package / "a.py").write_text("import os\nfrom pmc import x\ndef f():\n    import yaml\n")
    assert set(imported_names(package)) == {"yaml"}
    assert "tokenizers" in declared() and "openai" not in declared()
