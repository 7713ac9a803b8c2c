"""The HTTP statuses the receiver can answer with, and how each is framed. Kept apart from the
HTTP layer so what checks a status (``--respond``, the control channel) does not load the
receiver's parser."""

from __future__ import annotations

FINAL_STATUSES = range(200, 600)  # what a request can be answered with (1xx are interim only)
NO_CONTENT = frozenset({204, 304})  # answered with neither content nor a Content-Length
EMPTY_CONTENT = frozenset({205})  # answered with no content and a Content-Length of 0
