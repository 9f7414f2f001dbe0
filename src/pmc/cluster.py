"""Connecting to a Ray cluster, or starting one on this machine (docs/scaling.md).

Ray is optional (the ``ray`` extra): it is imported only here, when a command is given ``--ray``.
The settings are the ones that hold offline and on a small CI machine (docs/dependencies.md
section 8): no dashboard, no usage reports, no token written to the home folder, a short
temporary folder (Ray's socket paths must stay under 108 bytes) and a bounded object store.
"""

from __future__ import annotations

import os
import tempfile
from types import ModuleType
from typing import Any

from pmc.cpu import default_slices
from pmc.errors import PmcError

INSTALL_HINT = "--ray needs Ray: pip install 'pmc[ray]'"
AUTO = "auto"
"""Connect to the cluster this machine belongs to, or start a local one when there is none."""
SOCKET_PATH_MAX = 107
"""Linux's longest socket path (``sun_path`` is 108 bytes with its terminating NUL)."""
SOCKET_TAIL_CHARS = 64
"""What Ray adds below its temporary folder for its deepest socket:
``/session_<date>_<time>_<microseconds>_<pid>/sockets/plasma_store``, a pid of up to 7 digits."""
LOCAL_OBJECT_STORE_BYTES = 512 * 2**20
"""A local cluster's object store (Ray's default takes 30% of memory per node, in /dev/shm)."""
QUIET_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",  # offline: nothing to report to
    "RAY_AUTH_MODE": "disabled",  # else a token is written to ~/.ray/auth_token
    # Ray starts its workers at nice 15, below everything else on the node: a streaming worker
    # then loses its core to any other process and sends frames late (docs/scaling.md).
    "RAY_worker_niceness": "0",
}


def ray_module() -> ModuleType:
    """The ``ray`` package, or a :class:`PmcError` saying how to install it."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise PmcError(INSTALL_HINT) from None
    module: ModuleType = ray  # untyped for mypy (pyproject.toml)
    return module


def connect(address: str | None = AUTO, num_cpus: int | None = None) -> ModuleType:
    """Connect this process to Ray; returns the ``ray`` module, initialised.

    ``address``: ``auto`` (the cluster this machine is part of, else a new local one), an
    address (``HOST:PORT`` or ``ray://HOST:PORT``) that must answer, or None for a new local
    cluster. ``num_cpus`` sizes a local cluster (default: every core). Calling it again while
    connected keeps the connection.
    """
    ray = ray_module()
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,  # workers' logs stay in the session folder
        "configure_logging": False,
    }
    if address == AUTO:
        try:
            ray.init(address=AUTO, **options)
            return ray
        except ConnectionError:
            address = None  # no cluster here: start one
    if address is None:
        # Ray's processes (its workers stream rollouts) run on the scheduler's default slice,
        # whatever this process asked for (pmc.cpu).
        with default_slices():
            ray.init(
                num_cpus=num_cpus or os.cpu_count() or 1,
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                _temp_dir=temp_dir(),
                **options,
            )
        return ray
    try:
        ray.init(address=address, **options)
    except (ConnectionError, ValueError) as exc:
        raise PmcError(f"--ray {address}: cannot connect to a Ray cluster there ({exc})") from None
    return ray


def temp_dir() -> str:
    """A short folder for a local cluster's sockets and logs (``PMC_RAY_TMP`` overrides it)."""
    return os.environ.get("PMC_RAY_TMP") or short_folder(f"pmc-ray-{os.getuid()}")


def short_folder(name: str) -> str:
    """``name`` in the system temporary folder, or in ``/tmp`` where that is too deep.

    Too deep: Ray's sockets below it would pass Linux's limit. Ray makes the folder when it
    starts, so nothing an earlier run left is needed.
    """
    path = os.path.join(tempfile.gettempdir(), name)
    if len(path) + SOCKET_TAIL_CHARS <= SOCKET_PATH_MAX:
        return path
    return os.path.join("/tmp", name)


def disconnect() -> None:
    """Leave the cluster (and stop it, if this process started it)."""
    ray = ray_module()
    if ray.is_initialized():
        ray.shutdown()


def cluster_cpus() -> int:
    """CPUs the connected cluster has, over all its nodes."""
    ray = ray_module()
    return int(ray.cluster_resources().get("CPU", 1))
