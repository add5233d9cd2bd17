"""The run's artifacts as one zip of its session directory (the download on the run page)."""
from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import IO


def session_zip(session_dir: Path) -> IO[bytes]:
    """A temporary file (rewound) holding ``eval_<TS>/...``; regular files only, no symlinks, so
    nothing outside the session directory can be pulled in."""
    root = Path(session_dir).resolve()
    spool: IO[bytes] = tempfile.TemporaryFile()
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            archive.write(path, Path(root.name) / path.relative_to(root))
    spool.seek(0)
    return spool
