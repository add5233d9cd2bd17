"""Template helpers shared by every page: the navigation link that marks the current section,
times written so the browser can show them in the reader's own zone and words, and numbers."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()

# view name -> navigation section (anything else of the scoring app is a run page)
_SECTIONS = {
    "scoring:run_new": "new",
    "scoring:run_compare": "compare",
    "scenarios:list": "scenarios",
    "scoring:scenario_history": "scenarios",
    "scenario_call": "scenarios",
}


def nav_section(request: Any) -> str:
    match = getattr(request, "resolver_match", None)
    name = getattr(match, "view_name", "") or ""
    if name in _SECTIONS:
        return _SECTIONS[name]
    if name.startswith("admin:"):
        return "admin"
    if name.startswith("scoring:"):
        return "runs"
    return ""


@register.simple_tag(takes_context=True)
def nav_link(context: dict[str, Any], url_name: str, section: str, text: str) -> str:
    """``<a>`` to ``url_name``, with ``aria-current="page"`` when the page is in ``section``."""
    current = nav_section(context.get("request")) == section
    return format_html('<a href="{}"{}>{}</a>', reverse(url_name),
                       format_html(' aria-current="page"') if current else "", text)


@register.simple_tag
def local_time(value: datetime | None, style: str = "datetime") -> str:
    """``<time>`` with an ISO instant; the page script rewrites the text in local, human form.
    Without the script it reads as UTC, which is still unambiguous."""
    if value is None:
        return "—"
    instant = timezone.localtime(value, dt_timezone.utc) if timezone.is_aware(value) else value
    fallback = instant.strftime("%Y-%m-%d %H:%M UTC" if style != "seconds" else "%Y-%m-%d %H:%M:%S UTC")
    return format_html('<time datetime="{}" data-local="{}">{}</time>', instant.isoformat(), style, fallback)


@register.filter
def percent(fraction: float | None, places: int = 1) -> str:
    """0.4567 -> "45.7" (the caller adds "%" or "pts"); "—" for None."""
    if fraction is None:
        return "—"
    return f"{fraction * 100:.{int(places)}f}"


@register.filter
def signed(value: float | None, places: int = 0) -> str:
    """+12 / −3 / 0 with a real minus sign, so a difference reads as one."""
    if value is None:
        return "—"
    text = f"{abs(value):.{int(places)}f}"
    if float(text) == 0:
        return text
    return ("+" if value > 0 else "\u2212") + text


@register.filter
def signed_percent(fraction: float | None, places: int = 1) -> str:
    return "—" if fraction is None else signed(fraction * 100, places)


@register.filter
def p_value(value: float | None) -> str:
    """0.03125 -> "0.0312": four places rounded as Python rounds, the way the gate's own report
    (``run_eval --baseline``) prints them, so a page and the reasons beside it agree; "—" for None."""
    return "—" if value is None else f"{value:.4f}"


@register.filter(is_safe=True)
def fixed(value: Any, places: int = 0) -> str:
    """``value`` rounded half up to ``places`` decimals, as ``floatformat:places`` writes it in this
    site's locale (en-us, no grouping): "" for what is not a number, no "-0.0".

    Why not floatformat: its localisation lookups per call made it the costliest part of a run
    page's render (about 200 numbers a page; bench/pages_load.py)."""
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        try:
            number = Decimal(str(float(value)))
        except (ValueError, InvalidOperation, TypeError):
            return ""
    _sign, digits, exponent = number.as_tuple()
    if not number.is_finite() or len(digits) + abs(exponent) > 200:
        return str(value)  # as floatformat: infinities, NaN and huge literals as they came
    places = int(places)
    precision = max(28, places + len(digits) + abs(exponent) + 1)
    rounded = number.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP, Context(prec=precision))
    return f"{abs(rounded) if not rounded else rounded:f}"
