import socket

import pytest


def test_connecting_outside_loopback_fails() -> None:
    with socket.socket() as s, pytest.raises(RuntimeError, match="network"):
        s.connect(("192.0.2.1", 80))
