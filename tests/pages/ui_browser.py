"""Shared pieces of the site's browser tests: seeding rows into a live site, the check that a page
never scrolls sideways on a phone, and screenshots at a desktop and a phone width when
$EVASITE_SCREENSHOTS names a folder to keep them in (a full-page PNG is seconds of Chromium's CPU,
and a suite run on a machine nobody looks at needs none)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.browser import LiveSite

WIDE, NARROW = 1400, 390
SHOTS = Path(os.environ["EVASITE_SCREENSHOTS"]) if os.environ.get("EVASITE_SCREENSHOTS") else None


def seed(site: LiveSite, call: str) -> Any:
    """Run ``call`` (an expression over tests.pages.seed_site) inside the site; its JSON value."""
    out = site.python(f"import json\nfrom tests.pages.seed_site import *\nprint(json.dumps({call}))")
    return json.loads(out.strip().splitlines()[-1])


def sideways_overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0 when nothing scrolls sideways)."""
    return page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")


def shots(page: Any, name: str, *, height: int = 900) -> dict[str, Path]:
    """At 390 px wide the page must not scroll sideways; with $EVASITE_SCREENSHOTS, full-page
    screenshots at 1400 and 390 px. The viewport is left at 1400 px."""
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
    paths = {}
    for width in (WIDE, NARROW):
        page.set_viewport_size({"width": width, "height": height})
        if width == NARROW:
            overflow = sideways_overflow(page)
            assert overflow <= 0, f"{name}: {overflow}px of sideways scroll at {NARROW}px"
        if SHOTS is not None:
            path = SHOTS / f"{name}-{width}.png"
            page.screenshot(path=str(path), full_page=True)
            assert path.stat().st_size > 5_000
            paths[width] = path
    page.set_viewport_size({"width": WIDE, "height": height})
    return paths
