from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from common import roles


def user_roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_researcher": roles.user_is_researcher(user), "is_annotator": roles.user_is_annotator(user)}
