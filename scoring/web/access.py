"""Who may see what: login on every page, an opt-in to open the read-only results pages, and the
rule for controlling a run (its owner or staff)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as _DjangoLoginRequired

PUBLIC_ATTRIBUTE = "evasite_public_results"


def public_results(view: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a read-only results view that ``EVASITE_PUBLIC_RESULTS=1`` opens to anonymous users."""
    setattr(view, PUBLIC_ATTRIBUTE, True)
    return view


def results_are_public() -> bool:
    return bool(getattr(settings, "EVASITE_PUBLIC_RESULTS", False))


class LoginRequiredMiddleware(_DjangoLoginRequired):
    """Django's login-required middleware, except for marked views when results are public."""

    def process_view(self, request: Any, view_func: Callable[..., Any], view_args: Any, view_kwargs: Any) -> Any:
        if results_are_public() and getattr(view_func, PUBLIC_ATTRIBUTE, False):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def may_control(user: Any, owner_id: int | None) -> bool:
    """Cancel and resume: staff, or the user who started the run."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff or (owner_id is not None and owner_id == user.pk))


def may_watch_live(user: Any, run_id: int) -> bool | None:
    """Whether ``user`` may follow run ``run_id`` live (``ws/runs/<id>/``); None: no such run.

    A human call's live events are the tester's own words as they speak or type them: its owner
    and staff only, whatever ``EVASITE_PUBLIC_RESULTS`` says. Other runs: any logged-in user
    (everyone when results are public), like the results pages."""
    from scoring.models import Run

    row = Run.objects.filter(pk=run_id).values("owner_id", "source").first()
    if row is None:
        return None
    if row["source"] == Run.Source.HUMAN:
        return may_control(user, row["owner_id"])
    return bool(getattr(user, "is_authenticated", False) or results_are_public())
