"""`create_study --crowd`: a public study without an annotator list, its settings from a JSON file, its link
printed (issue 14, point 1)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset
from crowd.models import CrowdCheck, CrowdStudy

pytestmark = pytest.mark.django_db

SETTINGS = {
    "consent_text": "You agree that we keep your answers.",
    "training": [
        {"document": "bridge", "summary": "A bridge in Swansea will be closed.", "expected": "unfaithful"},
    ],
    "completion_code": "C0MPLETE",
    "max_items_per_worker": 3,
}


def test_it_creates_a_public_study_and_prints_its_link(small_dataset: Dataset, tmp_path: Path, settings) -> None:
    settings.SITE_URL = "https://faithanno.example.org/"
    path = tmp_path / "crowd.json"
    path.write_text(json.dumps(SETTINGS), encoding="utf-8")
    checks = tmp_path / "checks.jsonl"
    checks.write_text(json.dumps({"document": "oldest", "summary": "Emma Morano died.", "expected": "faithful"}))
    out = StringIO()
    call_command(
        "create_study",
        "--dataset=small",
        "--name=Public",
        "--task=factuality",
        "--k=2",
        "--crowd",
        f"--crowd-settings={path}",
        f"--checks={checks}",
        stdout=out,
    )
    crowd = CrowdStudy.objects.get()
    assert f"Public link: https://faithanno.example.org/crowd/{crowd.key}/" in out.getvalue().splitlines()
    assert (crowd.completion_code, crowd.max_items_per_worker, crowd.platform) == ("C0MPLETE", 3, "prolific")
    assert crowd.training_items.get().expected == "unfaithful"
    assert CrowdCheck.objects.filter(kind="researcher").count() == 1
    assert not crowd.study.annotators.exists()


def test_it_names_the_field_of_bad_crowd_settings(small_dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / "crowd.json"
    path.write_text(json.dumps({**SETTINGS, "check_rate": "often", "colour": "red"}), encoding="utf-8")
    args = ["--dataset=small", "--name=Bad", "--task=factuality", "--crowd", f"--crowd-settings={path}"]
    with pytest.raises(CommandError, match="colour"):
        call_command("create_study", *args)
    path.write_text(json.dumps({**SETTINGS, "check_rate": 2}), encoding="utf-8")
    with pytest.raises(CommandError, match="check_rate"):
        call_command("create_study", *args)
    assert not CrowdStudy.objects.exists()


def test_it_wants_annotators_without_crowd_and_none_with_it(small_dataset: Dataset) -> None:
    with pytest.raises(CommandError, match="annotators"):
        call_command("create_study", "--dataset=small", "--name=S", "--task=factuality")
    with pytest.raises(CommandError, match="give no --annotators"):
        call_command("create_study", "--dataset=small", "--name=S", "--task=factuality", "--crowd", "--annotators=a")
