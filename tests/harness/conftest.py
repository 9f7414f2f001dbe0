"""The harness tests' Ray cluster: two local nodes, shared by every Ray test of this package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.ray_nodes import TwoNodes, two_nodes


@pytest.fixture(scope="package")
def ray_nodes() -> Iterator[TwoNodes]:
    """Two nodes of one CPU each, this process connected; every process stopped at the end."""
    with two_nodes() as nodes:
        yield nodes
