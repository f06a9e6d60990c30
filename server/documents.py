"""Collections and their documents over HTTP: list and create collections, upload and delete documents.

An upload is saved as ``<data>/collections/<c>/files/<doc_id>/<file name>`` and ingested by the same
incremental pipeline as ``python main.py ingest`` (its summary is the response), with the upload's
access groups (form field ``access``, or the file's front matter). Only that document's folder is the
run's path, so other documents, and their groups, are untouched. Deleting a document empties its folder
and runs the pipeline over it, which removes its chunks. The next request sees the new generation
(server/collections.py).
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, UploadFile
from pydantic import BaseModel, Field

from core.access import AccessGroupError
from core.access import groups as access_groups
from memory.users import CollectionRow, UserError
from server.collections import Collections, can_read, can_write
from server.errors import ApiError
from server.identity import Caller

_DOC_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_FILE_NAME_RE = re.compile(r"[^\w.\- ]+")


class NewCollection(BaseModel):
    name: str
    readers: list[str] = Field(default_factory=list, description="groups that may read it; empty: every user")
    writers: list[str] = Field(
        default_factory=list, description="groups that may add documents; empty: admins"
    )


def safe_file_name(name: str | None) -> str:
    """The uploaded file's base name, without folders or odd characters (its suffix picks the parser)."""
    base = Path(str(name or "")).name
    cleaned = _FILE_NAME_RE.sub("_", base).strip(" .")[:200]
    if not cleaned or "." not in cleaned:
        raise ApiError(
            400, "invalid_file_name", "the upload needs a file name with a suffix such as .md or .pdf"
        )
    return cleaned


def _summary(report: Any, files_dir: Path) -> dict[str, Any]:
    def rel(source: str) -> str:
        try:
            return str(Path(source).relative_to(files_dir))
        except ValueError:
            return Path(source).name

    data = report.model_dump()
    for key in ("added", "updated", "unchanged", "removed", "unsupported"):
        data[key] = [rel(s) for s in data.get(key) or []]
    data["failed"] = [{"source": rel(f["source"]), "reason": f["reason"]} for f in data.get("failed") or []]
    data.pop("index_dir", None)
    return data


def documents_router(engine: Any, collections: Collections, auth: Any) -> APIRouter:
    router = APIRouter()

    def writable(name: str, caller: Caller) -> CollectionRow:
        row = collections.row(name, caller)
        if not can_write(row, caller):
            raise ApiError(
                403, "not_a_writer", f"you may read collection {name!r} but not add or delete documents"
            )
        return row

    def ingest(name: str, folder: Path, access: list[str]) -> Any:
        from ingestion.pipeline import ingest_paths

        index_dir = collections.folder(name)
        settings = engine.settings
        if name != "default":
            settings = settings.model_copy(update={"store": "local"})
        embedder = engine.context.retrievers.embedder
        return ingest_paths([folder], settings, embedder, index_dir=index_dir, progress=False, access=access)

    @router.get("/collections")
    async def list_collections(caller: Caller = Depends(auth)) -> dict[str, Any]:
        rows = [r for r in collections.rows() if can_read(r, caller)]
        data = [{**r.model_dump(), "can_write": can_write(r, caller)} for r in rows]
        return {"object": "list", "data": data}

    @router.post("/collections")
    async def create_collection(body: NewCollection, caller: Caller = Depends(auth)) -> dict[str, Any]:
        if not caller.admin:
            raise ApiError(403, "not_admin", "only an admin key may create collections")
        try:
            row = CollectionRow(name=body.name, readers=body.readers, writers=body.writers)
            await engine.call(collections.create, row)
        except (UserError, AccessGroupError) as exc:
            raise ApiError(
                400, "invalid_collection", str(exc).replace("user name", "collection name")
            ) from None
        return collections.row(row.name, caller).model_dump()

    @router.post("/collections/{name}/documents")
    async def upload(
        name: str,
        file: Annotated[UploadFile, File()],
        access: Annotated[str, Form()] = "",
        caller: Caller = Depends(auth),
    ) -> dict[str, Any]:
        writable(name, caller)
        try:
            groups = access_groups(access)
        except AccessGroupError as exc:
            raise ApiError(400, "invalid_access", str(exc)) from None
        files_dir = collections.files_dir(name)
        doc_id = uuid.uuid4().hex[:16]
        folder = files_dir / doc_id
        folder.mkdir(parents=True)
        (folder / safe_file_name(file.filename)).write_bytes(await file.read())
        report = await engine.call(ingest, name, folder, groups)
        if not report.added:
            shutil.rmtree(folder, ignore_errors=True)
        return {"doc_id": doc_id if report.added else None, "collection": name, **_summary(report, files_dir)}

    @router.delete("/collections/{name}/documents/{doc_id}")
    async def delete(name: str, doc_id: str, caller: Caller = Depends(auth)) -> dict[str, Any]:
        writable(name, caller)
        folder = collections.files_dir(name) / doc_id
        if not _DOC_ID_RE.match(doc_id) or not folder.is_dir():
            raise ApiError(404, "document_not_found", f"no uploaded document {doc_id!r} in {name!r}")
        for path in folder.iterdir():
            path.unlink()
        report = await engine.call(ingest, name, folder, [])
        folder.rmdir()
        return {"deleted": doc_id, "collection": name, **_summary(report, collections.files_dir(name))}

    return router
