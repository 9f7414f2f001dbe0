"""The review app: a local web page for listening to windows and re-annotating conversations.

``_data`` answers the app's requests from the working directory and records decisions through
:mod:`pmc.review`; ``_audio`` makes the stereo clips; ``_server`` is the HTTP server and its
rules about what may be served (docs/review.md).
"""

from pmc.review_app._data import (
    AFTER_CONTEXT_S,
    BEFORE_BOUNDARY_S,
    BadRequest,
    Clip,
    Conflict,
    NotFound,
    ReviewData,
)
from pmc.review_app._server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    Refused,
    ReviewServer,
    served_file,
)

__all__ = [
    "AFTER_CONTEXT_S",
    "BEFORE_BOUNDARY_S",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "BadRequest",
    "Clip",
    "Conflict",
    "NotFound",
    "Refused",
    "ReviewData",
    "ReviewServer",
    "served_file",
]
