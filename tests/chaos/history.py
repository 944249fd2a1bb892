"""The run's history: every attempt and every injected fault, one JSON object a line.

The first line names the seed and the scenario; with ``--seed`` a run draws the same
posts, the same fault schedule and the same sandbox fault sequence again.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class History:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # One file per scenario and run: an earlier run's lines would read as this one's.
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"t": round(time.time(), 4), "kind": kind, **fields}, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
