"""``/api/v1/media``: upload a file (multipart), show one, remove one – `herald media add`,
its view and `herald media remove`. A kept file is the key's account's: another account's
is not found (``core.services.scope``), to show, to attach to a post or to remove. The
same bytes are kept once per account, so uploading a file again answers with its first id."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile

from core.api.auth import Reader, Scheduler
from core.api.models import PathId, refuse_nul
from core.services import scope
from core.services.media import Added, MediaView, add_media, remove_media, show_media
from core.services.views import Json, jsonable

router = APIRouter(prefix="/media", tags=["media"])


@router.post("", response_model=Added, status_code=201)
def upload(
    who: Scheduler,
    file: Annotated[UploadFile, File(description="An image or a video.")],
    alt: Annotated[str | None, Form(description="Alt text: what the picture shows.")] = None,
) -> Json:
    """Keep an image or a video for the account's posts; its type, size and dimensions are read now."""
    refuse_nul([alt, file.filename], "the form")
    name = Path(file.filename or "").name or "upload"
    with tempfile.TemporaryDirectory(prefix="herald-upload-") as folder:
        path = Path(folder) / name
        with path.open("wb") as out:
            shutil.copyfileobj(file.file, out)
        return jsonable(add_media(path, alt, account_id=who.account_id))


@router.get("/{media_id}", response_model=MediaView)
def show(media_id: PathId, who: Reader) -> Json:
    scope.own_media(who.account_id, media_id)
    return jsonable(show_media(media_id))


@router.delete("/{media_id}", response_model=MediaView)
def remove(media_id: PathId, who: Scheduler) -> Json:
    """Forget a kept file; refused (409) while a post that is not published or cancelled carries it."""
    scope.own_media(who.account_id, media_id)
    return jsonable(remove_media(media_id))
