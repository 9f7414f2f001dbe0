"""The review app: a local web page for listening to windows and re-annotating conversations.

``_data`` answers the app's requests from the working directory and records decisions through
:mod:`pmc.review`; ``_audio`` makes the stereo clips; ``_server`` is the HTTP server and its
rules about what may be served (docs/review.md).
"""

from pmc.review_app._data import (
    BEFORE_BOUNDARY_S,
    Clip,
    Conflict,
)
from pmc.review_app._server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    Refused,
    ReviewServer,
    served_file,
)

__all__ = [
    "BEFORE_BOUNDARY_S",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "Clip",
    "Conflict",
    "Refused",
    "ReviewServer",
    "served_file",
]
