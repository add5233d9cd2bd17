"""Static files under daphne with DEBUG off: WhiteNoise, serving straight from the finders (the
app's ``static/`` folders), so no ``collectstatic`` step is needed and an absent STATIC_ROOT is
normal rather than worth a warning on every start."""
from __future__ import annotations

import os

from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    def add_files(self, root: str, prefix: str | None = None) -> None:
        if os.path.isdir(root) or self.autorefresh:
            super().add_files(root, prefix)
