"""tools/layers.py, the import rules ``make lint`` enforces: each rule catches a planted break."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pmc_layers", ROOT / "tools" / "layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


layers = _load_checker()

CLEAN = {
    "__init__.py": '__version__ = "0"\n',
    "audio.py": "from pmc.errors import PmcError\n",
    "errors.py": "class PmcError(Exception): ...\n",
    "corpus/__init__.py": 'from pmc.corpus._types import Word\n__all__ = ["Word"]\n',
    "corpus/_types.py": "from pmc import __version__\nfrom pmc.audio import PmcError\n",
    "labels/__init__.py": "from pmc.labels._engine import run\n",
    "labels/_engine.py": "from pmc.corpus import Word\nfrom . import _types\ndef run(): ...\n",
    "labels/_types.py": "",
    "harness/__init__.py": "",
    "harness/_run.py": "from pmc.labels import run\n",
    "scoring/__init__.py": "from pmc.harness import x\n",
    "calibration/__init__.py": "from pmc.harness import x\n",
    "testing/__init__.py": "from pmc.harness import x\nfrom pmc.labels import run\n",
    "cli/__init__.py": "from pmc.testing import fake\nfrom pmc.scoring import s\n",
}


def _tree(tmp_path: Path, planted: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for name, text in {**CLEAN, **planted}.items():
        path = src / "pmc" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _found(src: Path) -> list[tuple[str, int, str, str]]:
    return [
        (v.path.relative_to(src).as_posix(), v.line, v.rule, v.message) for v in layers.check(src)
    ]


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    assert _found(_tree(tmp_path, {})) == []


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        (
            {"labels/_engine.py": "import os\nfrom pmc.harness import x\n"},
            ("pmc/labels/_engine.py", 2, "layers", "pmc.labels imports pmc.harness, a later layer"),
        ),
        (
            {"corpus/_types.py": "def f():\n    from pmc.labels import run\n"},
            ("pmc/corpus/_types.py", 2, "layers", "pmc.corpus imports pmc.labels, a later layer"),
        ),
        (
            {"scoring/__init__.py": "from pmc.calibration import c\n"},
            (
                "pmc/scoring/__init__.py",
                1,
                "layers",
                "pmc.scoring imports its sibling pmc.calibration",
            ),
        ),
        (
            {"harness/_run.py": "from pmc.testing import fake\n"},
            ("pmc/harness/_run.py", 1, "testing", "pmc.harness imports pmc.testing"),
        ),
        (
            {"audio.py": "import pmc.testing.fakes\n"},
            ("pmc/audio.py", 1, "testing", "pmc.audio imports pmc.testing"),
        ),
        (
            {"harness/_run.py": "from pmc.labels._engine import run\n"},
            (
                "pmc/harness/_run.py",
                1,
                "private",
                "imports pmc.labels._engine, private to pmc.labels",
            ),
        ),
        (
            {"cli/__init__.py": "from pmc.labels import _engine\n"},
            (
                "pmc/cli/__init__.py",
                1,
                "private",
                "imports pmc.labels._engine, private to pmc.labels",
            ),
        ),
        (
            {"labels/__init__.py": 'from pmc.corpus import Word\n__all__ = ["Word"]\n'},
            ("pmc/labels/__init__.py", 1, "one home", "exports Word, which belongs to pmc.corpus"),
        ),
    ],
    ids=[
        "stage-imports-later-stage",
        "import-inside-a-function",
        "siblings",
        "stage-imports-testing",
        "shared-imports-testing",
        "private-module",
        "private-name",
        "re-export",
    ],
)
def test_each_rule_catches_a_planted_violation(
    tmp_path: Path, planted: dict[str, str], expected: tuple[str, int, str, str]
) -> None:
    assert _found(_tree(tmp_path, planted)) == [expected]


def test_a_package_without_a_layer_is_reported(tmp_path: Path) -> None:
    src = _tree(tmp_path, {"newstage/__init__.py": ""})
    assert _found(src) == [
        ("pmc/newstage/__init__.py", 1, "layers", "pmc.newstage has no layer in tools/layers.py")
    ]


def test_the_command_exits_1_and_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _tree(tmp_path, {"harness/_run.py": "from pmc.testing import fake\n"})
    assert layers.main(["layers.py", str(src)]) == 1
    out = capsys.readouterr()
    assert (
        out.out == f"{src / 'pmc/harness/_run.py'}:1: [testing] pmc.harness imports pmc.testing\n"
    )
    assert layers.main(["layers.py", str(_tree(tmp_path / "clean", {}))]) == 0


def test_pmc_itself_keeps_every_rule() -> None:
    assert [str(v) for v in layers.check(ROOT / "src")] == []
