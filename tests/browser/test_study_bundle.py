"""A researcher downloads a study's bundle from the study page in Chromium and it imports again."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from bundles.services.bundle_import import study_bundle_import
from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.browser.conftest import open_as
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_downloads_the_bundle_from_the_study_page(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser, rita: AbstractUser, tmp_path: Path
) -> None:
    assignment = Assignment.objects.filter(annotator=alice, item__study_task__study=bertscore_study).first()
    labels = {unit.index: "correct" for unit in units_of(assignment)}
    assignment_submit(assignment=assignment, user=alice, labels=labels, seconds=9)
    open_as(page, live_server.url, rita, reverse("study_detail", args=[bertscore_study.pk]))
    with page.expect_download() as download:
        page.get_by_role("link", name="Download bundle").click()
    assert download.value.suggested_filename == f"study-{bertscore_study.pk}.bundle.zip"
    path = tmp_path / "bundle.zip"
    download.value.save_as(path)
    with zipfile.ZipFile(path) as archive:
        assert "manifest.json" in archive.namelist() and "judgements.jsonl" in archive.namelist()
    with path.open("rb") as handle:
        result = study_bundle_import(source=handle, user=rita)
    assert result.counts["judgements.jsonl"] == len(labels)
