"""Fetching Seamless Interaction from the Hugging Face Hub, resumably and checked.

One file's download (``_download``: ranged requests, resume, the size and digest checked) and
what to fetch and extract for a Seamless subset (``_fetch``), ready for
``pmc corpus import seamless`` (docs/fetching.md).
"""

from pmc.hub._download import ByteStart, DownloadOutcome
from pmc.hub._fetch import SEAMLESS_SPLITS, FetchSummary, fetch_seamless

__all__ = [
    "SEAMLESS_SPLITS",
    "ByteStart",
    "DownloadOutcome",
    "FetchSummary",
    "fetch_seamless",
]
