from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_it_has_a_migration_for_every_model_change() -> None:
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
