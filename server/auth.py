"""Who may do what over HTTP and MCP: the one place a user/key store (issue R) replaces.

For now there is one credential, the server's bearer token (``AGENTIC_RAG_SERVE_TOKEN``): with it set,
every call needs it and whoever holds it is an admin; without it the API is open and nobody is an
admin over HTTP. Over stdio the admin is the local user who started the process (it already has their
file rights).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping


def bearer_ok(authorization: str, token: str | None) -> bool:
    """Does an ``Authorization`` header carry the token (constant time)? Always yes when none is set."""
    if not token:
        return True
    scheme, _, given = authorization.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def is_admin(headers: Mapping[str, str] | None, token: str | None) -> bool:
    """May this caller ingest? ``headers`` is None over stdio (the local user: yes); over HTTP only a
    caller presenting the configured token."""
    if headers is None:
        return True
    return bool(token) and bearer_ok(headers.get("authorization", ""), token)
