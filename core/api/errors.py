"""The API's one error shape: ``{"error": {"code": ..., "message": ..., "fix": ...}}``.

``code`` is one of :class:`ErrorCode`, a closed list; ``message`` says what is wrong in
herald's words (the same line the CLI prints); ``fix`` says what to do about it. Every
herald error maps to one code here, and nothing else reaches a client: an unexpected
exception is logged and answered ``internal`` without its text.
"""

from __future__ import annotations

import enum
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.domain.errors import (
    ConfigError,
    Conflict,
    Forbidden,
    HeraldError,
    IdempotencyInProgress,
    IdempotencyMismatch,
    NotFound,
    StaleRevision,
    TooManyAttempts,
    Unauthenticated,
    UserError,
)

log = logging.getLogger(__name__)


class ErrorCode(enum.StrEnum):
    #: The request is well-formed but herald refuses it (a slot in the past, a text too long).
    REFUSED = "refused"
    #: The request does not match the API's schema (a missing field, a wrong type).
    INVALID_REQUEST = "invalid_request"
    #: No API key or login, or an unknown, expired or revoked one.
    UNAUTHENTICATED = "unauthenticated"
    #: The key's role does not allow this action.
    FORBIDDEN = "forbidden"
    #: No such post, channel, media, alarm, key or route (or not in the key's account).
    NOT_FOUND = "not_found"
    #: The request contradicts the current state (an edit while a part is sending).
    CONFLICT = "conflict"
    #: An edit made against an older revision of the post than the current one.
    STALE_REVISION = "stale_revision"
    #: An ``Idempotency-Key`` used before with another request body.
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    #: The first request with this ``Idempotency-Key`` is still running.
    IDEMPOTENCY_IN_PROGRESS = "idempotency_in_progress"
    #: A setting or plugin configuration that cannot work.
    MISCONFIGURED = "misconfigured"
    #: Too many attempts (logins); wait and try again.
    RATE_LIMITED = "rate_limited"
    #: The method is not allowed on this route.
    METHOD_NOT_ALLOWED = "method_not_allowed"
    #: herald failed; the log has the details, the answer has none.
    INTERNAL = "internal"


#: The HTTP status of each code.
STATUS: dict[ErrorCode, int] = {
    ErrorCode.REFUSED: 400,
    ErrorCode.INVALID_REQUEST: 422,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.STALE_REVISION: 409,
    ErrorCode.IDEMPOTENCY_MISMATCH: 422,
    ErrorCode.IDEMPOTENCY_IN_PROGRESS: 409,
    ErrorCode.MISCONFIGURED: 400,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.INTERNAL: 500,
}

#: What to do, where the message alone does not say it.
FIX: dict[ErrorCode, str] = {
    ErrorCode.REFUSED: "change the request as the message says",
    ErrorCode.INVALID_REQUEST: "send the fields /openapi.json describes for this route",
    ErrorCode.UNAUTHENTICATED: "send 'Authorization: Bearer hk_…' with a key from `herald keys create`",
    ErrorCode.FORBIDDEN: "use a key whose role allows this (`herald keys create --role ...`)",
    ErrorCode.NOT_FOUND: "check the id; a key sees only its own account",
    ErrorCode.CONFLICT: "do what the message says first, then try again",
    ErrorCode.STALE_REVISION: "read the post again and make the edit against its current revision",
    ErrorCode.IDEMPOTENCY_MISMATCH: "use a new Idempotency-Key for a different request",
    ErrorCode.IDEMPOTENCY_IN_PROGRESS: "wait for the first request to finish, then repeat it to get its answer",
    ErrorCode.MISCONFIGURED: "fix the setting the message names",
    ErrorCode.RATE_LIMITED: "wait a minute and try again",
    ErrorCode.METHOD_NOT_ALLOWED: "use a method /openapi.json lists for this route",
    ErrorCode.INTERNAL: "try again; if it persists, the server's log says what failed",
}


class ErrorDetail(BaseModel):
    code: ErrorCode
    message: str
    fix: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class ApiError(HeraldError):
    """An error the API answers with its own code (stale revision, idempotency)."""

    def __init__(self, code: ErrorCode, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.code, self.fix = code, fix


def code_of(exc: HeraldError) -> ErrorCode:
    if isinstance(exc, ApiError):
        return exc.code
    for kind, code in (
        (Unauthenticated, ErrorCode.UNAUTHENTICATED),
        (Forbidden, ErrorCode.FORBIDDEN),
        (TooManyAttempts, ErrorCode.RATE_LIMITED),
        (NotFound, ErrorCode.NOT_FOUND),
        (StaleRevision, ErrorCode.STALE_REVISION),
        (IdempotencyMismatch, ErrorCode.IDEMPOTENCY_MISMATCH),
        (IdempotencyInProgress, ErrorCode.IDEMPOTENCY_IN_PROGRESS),
        (Conflict, ErrorCode.CONFLICT),
        (ConfigError, ErrorCode.MISCONFIGURED),
        (UserError, ErrorCode.REFUSED),
    ):
        if isinstance(exc, kind):
            return code
    return ErrorCode.INTERNAL


def error_response(code: ErrorCode, message: str, fix: str | None = None) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(code=code, message=message, fix=fix or FIX[code]))
    headers = {"WWW-Authenticate": "Bearer"} if code is ErrorCode.UNAUTHENTICATED else None
    return JSONResponse(body.model_dump(mode="json"), status_code=STATUS[code], headers=headers)


#: The answers every route may give, for the OpenAPI document.
ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorBody} for status in sorted(set(STATUS.values()))
}


def install(app: FastAPI) -> None:
    """Answer every error in the one shape."""

    @app.exception_handler(HeraldError)
    async def herald_error(request: Request, exc: HeraldError) -> JSONResponse:
        code = code_of(exc)
        if code is ErrorCode.INTERNAL:
            log.error("%s %s: %s", request.method, request.url.path, exc, exc_info=exc)
            return error_response(code, "herald could not do this")
        return error_response(code, str(exc), exc.fix if isinstance(exc, ApiError) else None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        said = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg', 'invalid')}"
            for e in exc.errors()
        )
        return error_response(ErrorCode.INVALID_REQUEST, said or "the request does not match the schema")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: ErrorCode.NOT_FOUND, 405: ErrorCode.METHOD_NOT_ALLOWED, 401: ErrorCode.UNAUTHENTICATED}.get(
            exc.status_code, ErrorCode.INVALID_REQUEST if exc.status_code < 500 else ErrorCode.INTERNAL
        )
        message = str(exc.detail) if code is not ErrorCode.INTERNAL else "herald could not do this"
        return error_response(code, message)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(ErrorCode.INTERNAL, "herald could not do this")
