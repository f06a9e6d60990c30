"""API errors in the OpenAI shape ``{"error": {"message", "type", "code"}}`` (shared by every route module)."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str) -> dict[str, Any]:
    kind = "server_error" if code == "internal_error" else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status)
