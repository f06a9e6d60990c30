"""Who is calling: bearer keys to a ``Caller`` (name, admin, groups), acting for a user, thread ids.

One dependency authenticates every route (``bearer_auth``): the configured single token
(``AGENTIC_RAG_SERVE_TOKEN``) is an admin key, as before; keys made with ``python main.py users add`` are
looked up in the users store (memory/users.py). With neither a token nor any user the server is open,
and every caller is the unrestricted local admin (one person on their own machine). An admin key may
act for a named user (header ``X-Agentic-User`` or the OpenAI ``user`` field): the request then runs
with that user's groups and threads, so a trusted chat front-end can serve many people.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass, field

from fastapi import Request

from memory.users import UserStore
from server.errors import ApiError

ACT_AS_HEADER = "x-agentic-user"
MAX_THREAD_ID_CHARS = 200
_THREAD_ID_RE = re.compile(r"^[^\x00-\x1f\x7f/\\]+$")


@dataclass(frozen=True)
class Caller:
    name: str
    admin: bool = False
    groups: tuple[str, ...] = field(default_factory=tuple)

    @property
    def access(self) -> list[str] | None:
        """The groups retrieval is limited to; None for an admin (reads everything)."""
        return None if self.admin else list(self.groups)


LOCAL_ADMIN = Caller("(admin)", admin=True)  # not a valid user name: no user can be mistaken for it


UNAUTHORIZED = "missing or wrong bearer token (Authorization: Bearer ...)"


def _unauthorized() -> ApiError:
    return ApiError(401, "invalid_api_key", UNAUTHORIZED)


def caller_for_key(key: str, token: str | None, users: UserStore | None) -> Caller | None:
    if token and hmac.compare_digest(key.encode(), token.encode()):
        return LOCAL_ADMIN
    user = users.authenticate(key) if users is not None else None
    return Caller(user.name, user.admin, tuple(user.groups)) if user else None


def act_for(caller: Caller, name: str | None, users: UserStore | None) -> Caller:
    """The caller, or (admins only) the named user they act for; a user naming themselves is themselves."""
    name = (name or "").strip()
    if not name or name == caller.name:
        return caller
    if not caller.admin:
        raise ApiError(403, "not_admin", "only an admin key may act for another user")
    user = users.get(name) if users is not None else None
    if user is None:
        raise ApiError(403, "unknown_user", "no such user to act for (python main.py users list)")
    return Caller(user.name, user.admin, tuple(user.groups))


def caller_of(authorization: str, act_as: str | None, token: str | None, users: UserStore | None) -> Caller:
    """The caller an ``Authorization`` header (and an admin's act-for name) makes; ApiError 401/403 if none.

    The one rule for every door (``/v1``, ``/mcp``): with no token and no users anyone is the local admin."""
    scheme, _, given = authorization.partition(" ")
    given = given.strip() if scheme.lower() == "bearer" else ""
    if not token and (users is None or not users.count()):
        caller = LOCAL_ADMIN  # no token, no users: an open server on one's own machine (any key works)
    elif not given:
        raise _unauthorized()
    else:
        found = caller_for_key(given, token, users)
        if found is None:
            raise _unauthorized()
        caller = found
    return act_for(caller, act_as, users)


def bearer_auth(token: str | None, users: UserStore | None = None):  # type: ignore[no-untyped-def]
    """The dependency every route uses: checks ``Authorization: Bearer <key>`` and returns the ``Caller``.

    ``users`` defaults to the app's store (``app.state.users``), so routes mounted elsewhere that call
    ``bearer_auth(settings.serve_token)`` accept users' keys too.
    """

    async def check(request: Request) -> Caller:
        store = users if users is not None else getattr(request.app.state, "users", None)
        caller = caller_of(
            request.headers.get("authorization", ""), request.headers.get(ACT_AS_HEADER), token, store
        )
        request.state.caller = caller
        return caller

    return check


def checked_thread_id(thread_id: str) -> str:
    """A thread id a URL and a table row can carry: printable, no ``/`` or ``\\``, at most 200 characters."""
    if not thread_id or len(thread_id) > MAX_THREAD_ID_CHARS or not _THREAD_ID_RE.match(thread_id):
        raise ApiError(
            400,
            "invalid_thread_id",
            f"thread ids are 1-{MAX_THREAD_ID_CHARS} printable characters without '/', '\\\\', NUL or newlines",
        )
    return thread_id
