"""Conversation threads owned by a user and a collection: list, read, continue and delete only your own.

Someone else's thread answers 404 exactly like a thread that does not exist, so ids do not leak. A new
thread id is claimed atomically by the first caller to use it. Threads nobody claimed (made by the CLI,
or by a server before users existed) are visible to admins only. Admins see and delete every thread.
A thread is read with the reader's groups of now: an answer citing a document they can no longer read
is withheld (memory/threads.py ``show_thread``), and a continued thread's follow-up is not read against
it (nodes/contextualize.py ``readable_history``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from memory.users import UserStore
from server.access_log import noted
from server.collections import DEFAULT, Collections
from server.errors import ApiError
from server.identity import Caller, checked_thread_id


def _not_found(thread_id: str) -> ApiError:
    return ApiError(404, "thread_not_found", f"no conversation thread {thread_id!r}")


def thread_exists(saver: Any, thread_id: str) -> bool:
    from memory.threads import underlying

    return (
        underlying(saver).get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        is not None
    )


def require_visible(users: UserStore, caller: Caller, collection: str, thread_id: str) -> str:
    """The checked id of a thread the caller may read or delete (their own; any for an admin), else 404."""
    checked_thread_id(thread_id)
    if not caller.admin and users.owner(thread_id) != (caller.name, collection):
        raise _not_found(thread_id)
    return thread_id


def claim_thread(users: UserStore, saver: Any, caller: Caller, collection: str, thread_id: str) -> str:
    """Check the id and make sure the caller may continue the thread (claiming it when new); 404 if not."""
    checked_thread_id(thread_id)
    owner = users.owner(thread_id)
    if owner is None:
        if thread_exists(saver, thread_id) and not caller.admin:
            raise _not_found(thread_id)
        if users.claim(thread_id, caller.name, collection):
            return thread_id
        owner = users.owner(thread_id)  # lost a race for a new id
    if owner == (caller.name, collection) or (caller.admin and owner is not None and owner[1] == collection):
        return thread_id
    raise _not_found(thread_id)


def threads_router(engine: Any, collections: Collections, users: UserStore, auth: Any) -> APIRouter:
    router = APIRouter()

    @router.get("/threads")
    async def threads(collection: str = DEFAULT, caller: Caller = Depends(auth)) -> list[dict[str, Any]]:
        from memory.threads import list_threads

        collections.row(collection, caller)
        infos = await engine.call(list_threads, engine.saver)
        if not caller.admin:
            mine = users.owned(caller.name, collection)
            infos = [info for info in infos if info.thread_id in mine]
        return [info.model_dump(mode="json") for info in infos]

    @router.get("/threads/{thread_id}")
    async def thread(
        thread_id: str, request: Request, collection: str = DEFAULT, caller: Caller = Depends(auth)
    ) -> dict[str, Any]:
        from memory.threads import ThreadNotFoundError, show_thread
        from retrievers.readable import unreadable_chunks

        noted(request, thread_id)
        require_visible(users, caller, collection, thread_id)
        try:
            async with collections.lease(collection, caller) as leased:
                index = leased.context.retrievers.index
                detail = await engine.call(
                    show_thread,
                    engine.saver,
                    thread_id,
                    lambda ids: unreadable_chunks(index, ids, caller.access),
                )
        except ThreadNotFoundError:
            raise _not_found(thread_id) from None
        return detail.model_dump(mode="json")

    @router.delete("/threads/{thread_id}")
    async def delete(
        thread_id: str, request: Request, collection: str = DEFAULT, caller: Caller = Depends(auth)
    ) -> dict[str, Any]:
        from memory.threads import delete_thread

        noted(request, thread_id)
        require_visible(users, caller, collection, thread_id)
        existed = await engine.call(delete_thread, engine.saver, thread_id)
        users.release(thread_id)
        if not existed:
            raise _not_found(thread_id)
        return {"deleted": thread_id}

    return router
