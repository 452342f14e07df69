"""Every rule of a new study lives in studies.services.studies (study_spec_check): the web form, the API and
`create_study` only parse, so each of them refuses a broken study with the same field and the same message,
and nothing is created."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from common import roles
from corpus.models import Dataset
from protocols.tasks import STUDY_TASKS
from studies.forms import StudyCreateForm
from studies.models import Study
from studies.selectors.selection import ItemSelection
from studies.services.studies import MAX_GUIDELINES_CHARS, StudySpec, study_annotators_add, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for, make_user

# A valid study in the API's vocabulary; each case below breaks one rule of it.
VALID: dict[str, Any] = {
    "name": "Rules",
    "tasks": ["factuality"],
    "annotators": ["alice", "bob"],
    "annotators_per_item": 2,
    "selection_mode": "all",
}

CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    # case: (changes to VALID, field, message)
    "a researcher as annotator": (
        {"annotators": ["alice", "rita"]},
        "annotators",
        "Not active annotator accounts: rita.",
    ),
    "an account without a role as annotator": (
        {"annotators": ["alice", "nobody"]},
        "annotators",
        "Not active annotator accounts: nobody.",
    ),
    "an inactive annotator": (
        {"annotators": ["alice", "dora"]},
        "annotators",
        "Not active annotator accounts: dora.",
    ),
    "k larger than the annotators": (
        {"annotators_per_item": 3},
        "annotators",
        "3 annotators per item need at least that many annotators; 2 chosen.",
    ),
    "k = 0": ({"annotators_per_item": 0}, "annotators_per_item", "Annotators per item (k) is 1 to 50; got 0."),
    "k = 51": ({"annotators_per_item": 51}, "annotators_per_item", "Annotators per item (k) is 1 to 50; got 51."),
    "one task per summary with too few annotators": (
        {"tasks": ["factuality", "feqa"], "one_task_per_summary": True},
        "annotators",
        "2 annotators per item in 2 tasks, with nobody seeing a summary in two tasks, need at least 4 "
        "annotators; 2 chosen.",
    ),
    "an unknown task": (
        {"tasks": ["factuality", "nope"]},
        "tasks",
        f"Unknown tasks: nope. Choose tasks from: {', '.join(STUDY_TASKS)}.",
    ),
    "a task twice": ({"tasks": ["factuality", "factuality"]}, "tasks", "Choose each task once."),
    "a blank name": ({"name": "   "}, "name", "A study needs a name."),
    "a name too long": ({"name": "x" * 201}, "name", "The name has 201 characters; at most 200."),
    "a random sample of 0": (
        {"selection_mode": "random", "sample_size": 0},
        "sample_size",
        "A random selection needs n, a number of items from 1 to 2147483647.",
    ),
    "a controversial selection of an unknown human score": (
        {"selection_mode": "controversial", "sample_size": 2, "human_score": "Nope", "metrics": ["R1"]},
        "human_score",
        "No summary of 'small' has the human score 'Nope'.",
    ),
    "a controversial selection of an unknown metric": (
        {"selection_mode": "controversial", "sample_size": 2, "human_score": "Faithful", "metrics": ["R9"]},
        "metrics",
        "No summary of 'small' has the metric score R9.",
    ),
    "an unknown BUMP error type": (
        {"tasks": ["bump"], "annotators_per_item": 1, "bump_error_types": ["typo"]},
        "bump_error_types",
        "Unknown BUMP error types: typo.",
    ),
    "an unknown BUMP mode": (
        {"tasks": ["bump"], "annotators_per_item": 1, "bump_mode": "loose"},
        "bump_mode",
        "BUMP mode 'loose': choose taxonomy or freestyle.",
    ),
    "guidelines too long": (
        {"guidelines": {"factuality": "x" * (MAX_GUIDELINES_CHARS + 1)}},
        "guidelines",
        f"The text of the factuality guidelines has {MAX_GUIDELINES_CHARS + 1} characters; "
        f"at most {MAX_GUIDELINES_CHARS}.",
    ),
    "a reclaim time of 0 hours": (
        {"reclaim_after_hours": 0},
        "reclaim_after_hours",
        "Reclaim after 1 to 8760 hours (or never); got 0.",
    ),
}


def via_web(fields: dict[str, Any], dataset: Dataset, researcher: AbstractUser, tmp_path: Path) -> dict[str, list]:
    users = {user.get_username(): user.pk for user in type(researcher).objects.all()}
    data = {key: value for key, value in fields.items() if key not in ("annotators", "guidelines")}
    data |= {"dataset": dataset.pk, "annotators": [users[name] for name in fields["annotators"]]}
    data |= {f"guidelines_{task}": text for task, text in fields.get("guidelines", {}).items()}
    response = client_for(researcher).post(reverse("study_new"), data)
    assert response.status_code == 200, "the form is shown again"
    form = response.context["form"]
    return {field: list(messages) for field, messages in form.errors.items()}


def via_api(fields: dict[str, Any], dataset: Dataset, researcher: AbstractUser, tmp_path: Path) -> dict[str, list]:
    response = api_client_for(researcher).post("/api/v1/studies/", {**fields, "dataset": dataset.pk}, format="json")
    assert response.status_code == 400
    return response.json()


def via_command(fields: dict[str, Any], dataset: Dataset, researcher: AbstractUser, tmp_path: Path) -> dict[str, list]:
    args = ["--dataset", dataset.name, "--name", fields["name"], "--researcher", researcher.get_username()]
    args += ["--annotators", ",".join(fields["annotators"]), "--k", str(fields["annotators_per_item"])]
    for task in fields["tasks"]:
        args += ["--task", task]
    mode = fields["selection_mode"]
    if mode != "all":
        args += [f"--{'sample' if mode == 'random' else mode}", str(fields["sample_size"])]
    if mode == "controversial":
        args += ["--human-score", fields["human_score"], *[f"--metric={metric}" for metric in fields["metrics"]]]
    for error_type in fields.get("bump_error_types", []):
        args += ["--bump-error-type", error_type]
    if "bump_mode" in fields:
        args += ["--bump-mode", fields["bump_mode"]]
    if fields.get("one_task_per_summary"):
        args.append("--one-task-per-summary")
    if "reclaim_after_hours" in fields:
        args += ["--reclaim-after-hours", str(fields["reclaim_after_hours"])]
    for task, text in fields.get("guidelines", {}).items():
        path = tmp_path / f"{task}.txt"
        path.write_text(text, encoding="utf-8")
        args += ["--guidelines", f"{task}={path}"]
    with pytest.raises(CommandError) as raised:
        call_command("create_study", *args)
    errors: dict[str, list] = {}
    for line in str(raised.value).splitlines():
        field, message = line.split(": ", 1)
        errors.setdefault(field, []).append(message)
    return errors


PATHS: dict[str, Callable[..., dict[str, list]]] = {"web form": via_web, "API": via_api, "command": via_command}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", CASES)
def test_it_refuses_a_broken_study_the_same_way_on_every_path(
    case: str,
    path: str,
    small_dataset: Dataset,
    alice: AbstractUser,
    bob: AbstractUser,
    rita: AbstractUser,
    tmp_path: Path,
) -> None:
    get_user_model().objects.create_user("nobody")  # an account without a role
    inactive = make_user("dora", roles.ANNOTATOR)
    inactive.is_active = False
    inactive.save(update_fields=["is_active"])
    changes, field, message = CASES[case]
    errors = PATHS[path]({**VALID, **changes}, small_dataset, rita, tmp_path)
    shown = field if path != "web form" or field in StudyCreateForm().fields else "__all__"
    assert errors == {shown: [message]}
    assert not Study.objects.filter(kind=Study.Kind.STUDY).exists()


@pytest.mark.parametrize("path", PATHS)
def test_it_creates_the_valid_study_on_every_path(
    path: str, small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, tmp_path: Path
) -> None:
    """The baseline of the cases above: without the broken rule, each path creates the study."""
    fields = {**VALID, "guidelines": {"factuality": "Read twice."}}
    if path == "web form":
        users = {"alice": alice.pk, "bob": bob.pk}
        data = {**VALID, "dataset": small_dataset.pk, "annotators": [users[n] for n in VALID["annotators"]]}
        response = client_for(rita).post(reverse("study_new"), {**data, "guidelines_factuality": "Read twice."})
        assert response.status_code == 302
    elif path == "API":
        response = api_client_for(rita).post("/api/v1/studies/", {**fields, "dataset": small_dataset.pk}, format="json")
        assert response.status_code == 201
    else:
        guidelines = tmp_path / "factuality.txt"
        guidelines.write_text("Read twice.", encoding="utf-8")
        call_command(
            "create_study",
            *("--dataset", "small", "--name", "Rules", "--task", "factuality", "--annotators", "alice,bob"),
            *("--k", "2", "--researcher", "rita", "--guidelines", f"factuality={guidelines}"),
        )
    study = Study.objects.get(name="Rules", kind=Study.Kind.STUDY)
    assert study.created_by == rita and study.annotators_per_item == 2
    assert set(study.annotators.values_list("username", flat=True)) == {"alice", "bob"}
    assert study.tasks.get().guidelines == "Read twice."


def test_it_refuses_an_owner_who_is_no_researcher(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command(
            "create_study",
            *("--dataset", "small", "--name", "s", "--task", "factuality", "--annotators", "alice,bob"),
            *("--k", "1", "--researcher", "alice"),
        )
    assert str(raised.value) == "created_by: alice is no researcher or admin."
    spec = StudySpec(name="s", dataset=small_dataset, tasks=["factuality"], annotators=[bob], annotators_per_item=1)
    with pytest.raises(ValidationError) as refused:
        study_create(spec=StudySpec(**{**vars(spec), "created_by": alice}))
    assert refused.value.message_dict == {"created_by": ["alice is no researcher or admin."]}
    assert not Study.objects.filter(kind=Study.Kind.STUDY).exists()
    assert study_create(spec=spec).study.created_by is None


def test_it_reports_every_broken_rule_at_once(small_dataset: Dataset, alice: AbstractUser) -> None:
    spec = StudySpec(
        name="\x00",
        dataset=small_dataset,
        tasks=[],
        annotators=[alice],
        annotators_per_item=2,
        selection=ItemSelection(mode="sometimes"),
        guidelines={"bump": "x"},
        task_options={"factuality": {"mode": "x"}},
        reclaim_after_hours=10**9,
        explanation_config_hash="y" * 65,
    )
    with pytest.raises(ValidationError) as refused:
        study_create(spec=spec)
    assert refused.value.message_dict == {
        "name": ["The name contains a NUL character (\\u0000) at position 0."],
        "tasks": [f"Choose tasks from: {', '.join(STUDY_TASKS)}."],
        "annotators": ["2 annotators per item need at least that many annotators; 1 chosen."],
        "reclaim_after_hours": ["Reclaim after 1 to 8760 hours (or never); got 1000000000."],
        "selection_mode": ["Choose the items by one of: all, random, controversial."],
        "guidelines": ["Guidelines for bump, which is not among the tasks."],
        "task_options": ["Options for factuality, which is not among the tasks."],
        "explanation_config_hash": ["The configuration has 65 characters; at most 64."],
    }


def test_it_refuses_a_nul_in_the_name_on_every_path(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, tmp_path: Path
) -> None:
    """Before any form, every web request with a NUL is refused naming the parameter; DRF's text fields
    name it too; the command reaches the service. Each names the field, none creates."""
    fields = {**VALID, "name": "Ru\x00les"}
    users = [alice.pk, bob.pk]
    web = client_for(rita).post(reverse("study_new"), {**fields, "dataset": small_dataset.pk, "annotators": users})
    assert web.status_code == 400 and "name contains a NUL character (\\u0000) at position 2" in web.content.decode()
    assert via_api(fields, small_dataset, rita, tmp_path) == {
        "name": ["name contains a NUL character (\\u0000) at position 2"]
    }
    assert via_command(fields, small_dataset, rita, tmp_path) == {
        "name": ["The name contains a NUL character (\\u0000) at position 2."]
    }
    assert not Study.objects.filter(kind=Study.Kind.STUDY).exists()


def test_it_refuses_to_add_an_account_that_is_no_annotator_to_a_running_study(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    spec = StudySpec(name="s", dataset=small_dataset, tasks=["factuality"], annotators=[alice], annotators_per_item=1)
    study = study_create(spec=spec).study
    with pytest.raises(ValidationError) as refused:
        study_annotators_add(study=study, annotators=[bob, rita])
    assert refused.value.message_dict == {"annotators": ["Not active annotator accounts: rita."]}
    assert list(study.annotators.values_list("username", flat=True)) == ["alice"]
