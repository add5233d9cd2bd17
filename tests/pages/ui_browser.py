"""Shared pieces of the site's browser tests: seeding rows into a live site, screenshots at a
desktop and a phone width (saved under the git-ignored ``screenshots/`` or $EVASITE_SCREENSHOTS),
and the check that a page never scrolls sideways on a phone."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.browser import REPO, LiveSite

WIDE, NARROW = 1400, 390
SHOTS = Path(os.environ.get("EVASITE_SCREENSHOTS") or REPO / "screenshots")


def seed(site: LiveSite, call: str) -> Any:
    """Run ``call`` (an expression over tests.pages.seed_site) inside the site; its JSON value."""
    out = site.python(f"import json\nfrom tests.pages.seed_site import *\nprint(json.dumps({call}))")
    return json.loads(out.strip().splitlines()[-1])


def sideways_overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0 when nothing scrolls sideways)."""
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def shots(page: Any, name: str, *, height: int = 900) -> dict[str, Path]:
    """Full-page screenshots at 1400 and 390 px wide; at 390 px the page must not scroll sideways.
    The viewport is left at 1400 px."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    paths = {}
    for width in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": height})
        if width == NARROW:
            overflow = sideways_overflow(page)
            assert overflow <= 0, f"{name}: {overflow}px of sideways scroll at {NARROW}px"
        path = SHOTS / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 5_000
        paths[width] = path
    page.set_viewport_size({"width": WIDE, "height": height})
    return paths
