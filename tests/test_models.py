"""The bundled model files are the ones pmc was tested with, and a changed one is refused."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from pmc import models
from pmc.errors import PmcError
from pmc.models import ALLOW_ENV, FILES, Model, ModelChanged, ModelFile, verify


@pytest.fixture(autouse=True)
def _fresh() -> object:
    """Each test checks the files again, and leaves no record behind for the next."""
    models.forget()
    yield
    models.forget()


def test_every_installed_model_file_is_the_one_pinned() -> None:
    for model in Model:
        records = verify(model)
        assert records, model
        for record in records:
            assert not record.changed, record
            assert record.version == importlib.metadata.version(record.distribution)
    assert {(r.model, r.path) for r in models.verified()} == {(f.model, f.path) for f in FILES}


def _package(root: Path, weights: bytes) -> ModelFile:
    """A one-file model package importable from ``root``, pinned to the digest of ``weights``."""
    package = root / "pmc_test_model_pkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "weights.bin").write_bytes(weights)
    digest = hashlib.sha256(weights).hexdigest()
    return ModelFile(
        Model.SILERO_VAD, "pmc-test-model-pkg", package.name, "data/weights.bin", digest
    )


def test_one_changed_byte_is_refused_naming_the_package_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _package(tmp_path, b"\x01" * 4096)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(models, "FILES", (entry,))
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    assert [r.changed for r in verify(Model.SILERO_VAD)] == [False]

    weights = tmp_path / "pmc_test_model_pkg" / "data" / "weights.bin"
    changed = bytearray(weights.read_bytes())
    changed[2048] ^= 0xFF
    weights.write_bytes(bytes(changed))
    models.forget()
    with pytest.raises(ModelChanged) as caught:
        verify(Model.SILERO_VAD)
    message = str(caught.value)
    assert message.startswith("pmc-test-model-pkg not installed: data/weights.bin is not the ")
    assert f"expected {entry.sha256[:12]}" in message
    assert ALLOW_ENV in message and "\n" not in message

    # Allowed, it is used and the difference is recorded.
    monkeypatch.setenv(ALLOW_ENV, "1")
    (record,) = verify(Model.SILERO_VAD)
    assert record.changed and record.expected == entry.sha256
    assert record.sha256 == hashlib.sha256(bytes(changed)).hexdigest()
    assert record.to_dict()["changed"] is True
    assert models.FileRecord.from_dict(record.to_dict()) == record


def test_a_missing_file_says_how_to_get_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _package(tmp_path, b"weights")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(models, "FILES", (entry,))
    (tmp_path / "pmc_test_model_pkg" / "data" / "weights.bin").unlink()
    with pytest.raises(PmcError, match=re.escape("data/weights.bin is missing; reinstall it")):
        verify(Model.SILERO_VAD)
    assert "pmc_test_model_pkg" not in sys.modules
