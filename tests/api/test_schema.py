"""The OpenAPI schema is valid and warning-free; the documentation page loads only local assets."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_it_generates_a_valid_schema_without_warnings() -> None:
    out = io.StringIO()
    # --fail-on-warn turns every warning of drf-spectacular (an unresolvable field, a name clash) into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    schema = json.loads(out.getvalue())
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/studies/{study_id}/agreement/" in schema["paths"]
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])


def test_it_serves_the_schema_at_api_schema() -> None:
    answer = Client().get(reverse("api_schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert answer.status_code == 200
    assert "/api/v1/datasets/" in answer.json()["paths"]


def test_it_serves_the_documentation_page_from_local_static_files() -> None:
    page = Client().get(reverse("api_docs"))
    assert page.status_code == 200
    html = page.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css|png))"', html)
    assert any("swagger-ui" in asset for asset in assets), html
    for asset in assets:
        assert asset.startswith("/static/"), asset
    assert not re.search(r"https?://", " ".join(assets))
    for asset in assets:
        # The files themselves: found by the static finders, so collectstatic ships them.
        assert finders.find(asset.removeprefix("/static/")), asset
