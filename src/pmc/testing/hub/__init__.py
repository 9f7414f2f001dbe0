"""A fake of the Hugging Face Hub's file API on loopback, serving one repository from memory.

It answers what ``huggingface_hub`` asks of a hub when it lists and downloads files
(docs/fetching.md): the revision (``/api/{type}s/{id}/revision/{rev}``), the tree of a folder
(``/api/{type}s/{id}/tree/{rev}/{path}``, paged with a ``Link`` header like the real hub), and
``HEAD``/``GET`` on ``/{type}s/{id}/resolve/{rev}/{path}``. Large (LFS) files are answered, as
the real hub does, with a 302 to a second origin (the CDN: another port), carrying
``X-Repo-Commit``, ``X-Linked-Etag`` (the sha256) and ``X-Linked-Size``; small files are served
from the hub itself. Both honour ``Range: bytes=N-`` with 206 and ``Content-Range``. Errors carry
the hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``).

Tests can arm one-shot faults on a file (:class:`Fault`: cut the body, stall it, or serve it
corrupted) and read every request back (:class:`HubRequest`), including its ``Range`` and whether
it carried a token. Standard library only; both servers run in threads on 127.0.0.1.
"""

from pmc.testing.hub._hub import (
    DEFAULT_REPO_ID,
    FakeHub,
    Fault,
    HubRequest,
    Origin,
    fake_hub,
    files_under,
    git_blob_id,
)

__all__ = [
    "DEFAULT_REPO_ID",
    "FakeHub",
    "Fault",
    "HubRequest",
    "Origin",
    "fake_hub",
    "files_under",
    "git_blob_id",
]
