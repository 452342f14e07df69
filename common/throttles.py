"""Request-rate limits: DRF's throttles for the API and for the password-reset form.

Rates come from settings.THROTTLE_RATES (env THROTTLE_*); counts live in the default cache (CACHE_URL), which
must be shared (Redis) when several worker processes serve the site.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.http import HttpRequest
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, BaseThrottle, SimpleRateThrottle, UserRateThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address as DRF's throttles see it: NUM_PROXIES decides how far X-Forwarded-For is
    trusted. django-axes counts failed sign-ins per this address too (AXES_CLIENT_IP_CALLABLE)."""
    # DRF types get_ident for its Request; it reads only request.META, which Django's HttpRequest has.
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]


class LiveRateMixin:
    """Reads the rate when the throttle is made, not when the class was imported, so that a changed setting
    (a test's, or a reloaded configuration) applies."""

    scope: str

    def get_rate(self) -> str:
        # djangorestframework-stubs types the rates as numbers; they are "N/period" strings (settings.THROTTLE_RATES).
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]  # type: ignore[return-value]


# The stubs allow DRF's `scope` to be None; these throttles all have one (str), as LiveRateMixin says.
class AnonThrottle(LiveRateMixin, AnonRateThrottle):  # type: ignore[misc]
    """API requests without credentials, per address."""


class UserThrottle(LiveRateMixin, UserRateThrottle):  # type: ignore[misc]
    """API requests per account (token or session); per address while signed out."""


class PasswordResetThrottle(LiveRateMixin, SimpleRateThrottle):
    """Password-reset requests per address."""

    scope = "password_reset"

    def get_cache_key(self, request: HttpRequest, view: object) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class PasswordResetEmailThrottle(LiveRateMixin, SimpleRateThrottle):
    """Password-reset requests per e-mail address asked for, whether or not an account has it (the answer
    must not tell), so that nobody's mailbox is flooded with reset links."""

    scope = "password_reset_email"

    def get_cache_key(self, request: HttpRequest, view: object) -> str | None:
        email = request.POST.get("email", "").strip().casefold()
        if not email:
            return None
        digest = hashlib.sha256(email.encode("utf-8", "surrogatepass")).hexdigest()
        return self.cache_format % {"scope": self.scope, "ident": digest}


class CrowdArrivalThrottle(LiveRateMixin, SimpleRateThrottle):
    """Arrivals by a crowd study's public link (each may create an account), per address."""

    scope = "crowd_arrival"

    def get_cache_key(self, request: HttpRequest, view: object) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class CrowdWorkerThrottle(LiveRateMixin, SimpleRateThrottle):
    """A crowd worker's answers on the crowd pages (consent, surveys, training, pastes), per worker."""

    scope = "crowd_worker"

    def get_cache_key(self, request: HttpRequest, view: object) -> str:
        user = getattr(request, "user", None)
        ident = user.pk if user is not None and user.is_authenticated else client_address(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


def throttle_wait(request: HttpRequest, throttles: Sequence[SimpleRateThrottle]) -> float | None:
    """None when every throttle lets the request through (each counts it), else the seconds to wait."""
    # The password-reset form is a Django view: DRF's throttles read only request.META and ignore the view.
    waits = [throttle.wait() or 0.0 for throttle in throttles if not throttle.allow_request(request, None)]  # type: ignore[arg-type]
    return max(waits) if waits else None
