"""Check pmc's import rules: layers in data-flow order, public seams only (docs/architecture.md §1).

Three rules, each a line per violation with the file and line:

- **layers**: a package imports only packages of a lower layer (and itself). Packages that
  share a layer are independent of each other, except the shared modules of the lowest layer,
  which may use one another.
- **testing**: nothing below :mod:`pmc.testing` imports it (that follows from the layers, but
  it is said on its own because it is the rule people trip on: fakes stay out of the stages).
- **private**: no module imports another package's private module or name
  (``pmc.labels._stage``, ``from pmc.tts import _piper``); a package's ``__init__`` is its API.
- **one home**: a package's ``__all__`` lists only its own names, never one it imported from
  another package, so each name is imported from one place.

Run as ``python tools/layers.py [SRC]`` (``make lint`` does); exits 1 when anything is wrong.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LAYERS: tuple[frozenset[str], ...] = (
    # Shared modules under every stage.
    frozenset(
        {"", "errors", "progress", "io", "clock", "cpu", "audio", "gate", "table", "registry"}
        | {"cluster"}
        | {"asr", "tts", "llm", "models", "provenance", "conditions"}
    ),
    frozenset({"duplex_server"}),  # the full-duplex server; its wire format is shared with clients
    frozenset({"systems"}),  # cards and adapters, beside the stages, used by the harness
    frozenset({"corpus"}),
    frozenset({"hub", "demo"}),  # fetching Seamless from the Hub; synthesising the demo corpus
    frozenset({"labels"}),
    frozenset({"review"}),  # human review of the labels; the points stage reads its decisions
    frozenset({"points"}),
    frozenset({"harness", "review_app"}),
    frozenset({"scoring", "calibration", "curves"}),
    frozenset({"report"}),
    frozenset({"check", "leaderboard", "export"}),  # CI checks; many runs; peers' layouts
    frozenset({"pipeline"}),  # every stage in one call (pmc demo)
    frozenset({"testing"}),
    frozenset({"bench"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)
"""Lowest first. ``""`` is the top-level ``pmc`` package itself: ``__version__``, and the
pipeline's entry points, which it names and imports only when first asked for (a string per
package, never an import statement), so that it stays below every stage."""
SHARED = 0
"""The layer whose packages may import each other."""
TESTING = "testing"


@dataclass(frozen=True)
class Violation:
    """One broken rule at one import."""

    path: Path
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


def layer_of(package: str) -> int:
    """The layer index of a top-level package of ``pmc`` (KeyError when it has none)."""
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise KeyError(package)


def _module_parts(src: Path, path: Path) -> list[str]:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(tree: ast.AST, package: list[str]) -> Iterator[tuple[int, list[str]]]:
    """Every import, as the dotted parts of what it reaches, with its line.

    ``from pmc.x import y`` reaches ``pmc.x.y``: a module or a name, both count.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = base + (node.module.split(".") if node.module else [])
            else:
                module = (node.module or "").split(".")
            names = [alias.name for alias in node.names if alias.name != "*"]
            private = [name for name in names if name.startswith("_") and not name.startswith("__")]
            yield node.lineno, [*module, *private[:1]]


def _is_private(parts: list[str]) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in parts)


def check_file(src: Path, path: Path) -> list[Violation]:
    """The violations in one module under ``src`` (the folder that holds ``pmc/``)."""
    parts = _module_parts(src, path)
    own = parts[1] if len(parts) > 1 else ""
    package = parts if path.name == "__init__.py" else parts[:-1]
    try:
        own_layer = layer_of(own)
    except KeyError:
        return [Violation(path, 1, "layers", f"pmc.{own} has no layer in tools/layers.py")]
    found: list[Violation] = []
    seen: set[tuple[int, str]] = set()
    for line, target in _imports(ast.parse(path.read_text(), str(path)), package):
        if target[:1] != ["pmc"] or len(target) < 2:
            continue
        other = target[1]
        dotted = ".".join(target)
        if other == own or (line, other) in seen:
            continue
        seen.add((line, other))
        if other.startswith("__") or not _known(src, other):
            continue  # pmc.__version__, or a name imported from the top-level package
        if _is_private(target[2:]):
            message = f"imports {dotted}, private to pmc.{other}"
            found.append(Violation(path, line, "private", message))
        other_layer = layer_of(other)
        if other == TESTING:
            if own_layer < other_layer:
                found.append(Violation(path, line, "testing", f"pmc.{own} imports pmc.testing"))
        elif other_layer > own_layer or (other_layer == own_layer != SHARED):
            found.append(
                Violation(path, line, "layers", f"pmc.{own} imports pmc.{other}, a later layer")
                if other_layer > own_layer
                else Violation(path, line, "layers", f"pmc.{own} imports its sibling pmc.{other}")
            )
    if path.name == "__init__.py":
        found += _reexports(path, own)
    return found


def _reexports(path: Path, own: str) -> list[Violation]:
    """Names an ``__init__`` imports from another pmc package and lists in ``__all__``."""
    tree = ast.parse(path.read_text(), str(path))
    exported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported |= {
                e.value
                for e in ast.walk(node.value)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = node.module.split(".")
            if module[0] != "pmc" or (module[1:2] or [""])[0] == own:
                continue
            for alias in node.names:
                name = alias.asname or alias.name
                if name in exported:
                    found.append(
                        Violation(
                            path,
                            node.lineno,
                            "one home",
                            f"exports {name}, which belongs to {node.module}",
                        )
                    )
    return found


def _known(src: Path, package: str) -> bool:
    root = src / "pmc"
    return (root / package).is_dir() or (root / f"{package}.py").is_file()


def check(src: Path) -> list[Violation]:
    """Every violation under ``src``, in file order."""
    found = []
    for path in sorted((src / "pmc").rglob("*.py")):
        found += check_file(src, path)
    return found


def main(argv: list[str]) -> int:
    """Print the violations; 1 if there are any."""
    src = Path(argv[1]) if len(argv) > 1 else Path("src")
    found = check(src)
    for violation in found:
        print(violation)
    if found:
        print(f"{len(found)} import rule(s) broken; see tools/layers.py", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
