"""Login, logout and password change (Django's views, styled like the site), and the
password-reset pages only when mail is configured (``EVASITE_EMAIL_HOST``).

Why not ``django.contrib.auth.urls``: its reset pages, routed with no mail server, let any
anonymous visitor make the server try SMTP on localhost and log a traceback per request.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views
from django.urls import URLPattern, path


def account_patterns() -> list[URLPattern]:
    patterns = [
        path("login/", views.LoginView.as_view(), name="login"),
        path("logout/", views.LogoutView.as_view(), name="logout"),
        path("password_change/", views.PasswordChangeView.as_view(), name="password_change"),
        path("password_change/done/", views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    ]
    if settings.EVASITE_PASSWORD_RESET:
        patterns += [
            path("password_reset/", views.PasswordResetView.as_view(), name="password_reset"),
            path("password_reset/done/", views.PasswordResetDoneView.as_view(), name="password_reset_done"),
            path("reset/<uidb64>/<token>/", views.PasswordResetConfirmView.as_view(),
                 name="password_reset_confirm"),
            path("reset/done/", views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
        ]
    return patterns


urlpatterns = account_patterns()
