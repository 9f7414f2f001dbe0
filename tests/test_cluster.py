"""Where a local Ray cluster keeps its sockets and logs (pmc.cluster)."""

from __future__ import annotations

import tempfile

import pytest

from pmc import cluster


def test_a_local_cluster_folder_is_in_the_system_temp_folder_unless_too_deep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp/job")
    assert cluster.short_folder("pmc-ray-0") == "/var/tmp/job/pmc-ray-0"
    # 107 characters in all: the folder (43) and Ray's deepest socket below it (64).
    fits = "/t" + "d" * (cluster.SOCKET_PATH_MAX - cluster.SOCKET_TAIL_CHARS - 12)
    monkeypatch.setattr(tempfile, "tempdir", fits)
    assert cluster.short_folder("pmc-ray-0") == f"{fits}/pmc-ray-0"
    monkeypatch.setattr(tempfile, "tempdir", fits + "d")
    assert cluster.short_folder("pmc-ray-0") == "/tmp/pmc-ray-0"


def test_pmc_ray_tmp_names_the_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMC_RAY_TMP", "/scratch/ray")
    assert cluster.temp_dir() == "/scratch/ray"
    monkeypatch.delenv("PMC_RAY_TMP")
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp/job")
    assert cluster.temp_dir().startswith("/var/tmp/job/pmc-ray-")
