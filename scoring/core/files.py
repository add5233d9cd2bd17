"""Small file helpers for artifacts: atomic JSON writes so a killed run never leaves a half
written ``metrics.json`` that resume would misread."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_json(path: Path, payload: Any, *, indent: int | None = 2) -> None:
    """Atomic JSON write (non-ASCII kept readable)."""
    write_text_atomic(path, json.dumps(payload, indent=indent, ensure_ascii=False))


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))
