"""Controlled conditions: created with the study (form, API, command, all checked by the service), annotators
balanced over them (between) or through all of them in a counterbalanced order (within), k per condition in
both assignment paths, and what the annotator's page and the API send under each condition."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from common import roles
from corpus.models import Dataset
from crowd.models import CrowdStudy
from crowd.services.assignment import crowd_item_next
from studies.models import Assignment, Participation, Study, StudyCondition, StudyItem
from studies.services.conditions import ConditionSpec
from studies.services.studies import (
    StudySpec,
    assignment_submit,
    study_annotator_remove,
    study_annotators_add,
    study_create,
)
from tests.api.conftest import api_client_for
from tests.conftest import client_for, make_user
from tests.crowd.factories import crowd_study_make
from tests.crowd.test_crowd_services import arrive, submit, to_annotation

pytestmark = pytest.mark.django_db

# The factuality task shows no metric evidence: its conditions differ by their guidelines.
TWO = [ConditionSpec("as usual"), ConditionSpec("strict", guidelines={"factuality": "Any doubt means no."})]


@pytest.fixture
def crew(db: None) -> list[AbstractUser]:
    return [make_user(f"annotator{n}", roles.ANNOTATOR) for n in range(6)]


def create(dataset: Dataset, users: list[AbstractUser], rita: AbstractUser, **changes: Any) -> Study:
    fields: dict[str, Any] = {
        "name": "Anchoring",
        "dataset": dataset,
        "tasks": ["factuality"],
        "annotators": users,
        "annotators_per_item": 1,
        "created_by": rita,
        "conditions": TWO,
        **changes,
    }
    return study_create(spec=StudySpec(**fields)).study


def live(study: Study) -> Any:
    return Assignment.objects.filter(item__study_task__study=study).exclude(status=Assignment.Status.RECLAIMED)


def per_item_and_condition(study: Study) -> Counter[tuple[int, int | None]]:
    return Counter(live(study).values_list("item_id", "condition_id"))


def assert_k_in_every_condition(study: Study, k: int) -> None:
    conditions = list(study.conditions.values_list("pk", flat=True))
    counts = per_item_and_condition(study)
    for item in StudyItem.objects.filter(study_task__study=study).values_list("pk", flat=True):
        assert [counts[(item, condition)] for condition in conditions] == [k] * len(conditions)
    pairs = list(live(study).values_list("item_id", "annotator_id"))
    assert len(pairs) == len(set(pairs))  # nobody gets an item twice, in whatever condition


def test_it_puts_each_annotator_in_one_condition_balanced_in_join_order(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:5], rita)
    first, second = study.conditions.order_by("position")
    joined = [Participation.objects.get(study=study, annotator=user).condition_id for user in crew[:5]]
    # The condition with the fewest participants gets the next annotator, ties by position.
    assert joined == [first.pk, second.pk, first.pk, second.pk, first.pk]
    for user, condition in zip(crew[:5], joined, strict=True):
        assert set(live(study).filter(annotator=user).values_list("condition_id", flat=True)) == {condition}
    assert_k_in_every_condition(study, 1)
    # Within a condition, the load is balanced: loads differ by one item at most.
    for condition in (first, second):
        loads = Counter(live(study).filter(condition=condition).values_list("annotator_id", flat=True))
        assert max(loads.values()) - min(loads.values()) <= 1


def test_it_applies_k_per_condition(small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser) -> None:
    study = create(small_dataset, crew[:4], rita, annotators_per_item=2)
    assert_k_in_every_condition(study, 2)
    items = StudyItem.objects.filter(study_task__study=study).count()
    assert live(study).count() == items * 2 * 2


def test_it_gives_every_annotator_every_condition_in_a_counterbalanced_order(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:4], rita, condition_design="within")
    first, second = study.conditions.order_by("position")
    assert_k_in_every_condition(study, 1)
    starts = []
    for user in crew[:4]:
        queue = list(live(study).filter(annotator=user).order_by("position").values_list("condition_id", flat=True))
        assert set(queue) == {first.pk, second.pk}  # every annotator works in every condition
        # One block per condition: the queue changes condition once.
        assert sum(1 for a, b in pairwise(queue) if a != b) == 1
        starts.append(queue[0])
        assert Participation.objects.get(study=study, annotator=user).condition_id == queue[0]
    # A Latin square over join order: consecutive annotators start at consecutive conditions.
    assert starts == [first.pk, second.pk, first.pk, second.pk]


def test_it_keeps_a_study_without_conditions_as_it_was(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:3], rita, conditions=(), annotators_per_item=2)
    assert not study.conditions.exists() and not Participation.objects.filter(study=study).exists()
    counts = Counter(live(study).values_list("item_id", flat=True))
    assert set(counts.values()) == {2} and set(live(study).values_list("condition", flat=True)) == {None}


def test_it_hands_a_removed_annotators_work_to_someone_of_the_same_condition(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:4], rita)
    leaving = crew[0]
    condition = Participation.objects.get(study=study, annotator=leaving).condition
    partner = Participation.objects.filter(study=study, condition=condition).exclude(annotator=leaving).get().annotator
    before = live(study).filter(annotator=partner).count()
    moved = study_annotator_remove(study=study, annotator=leaving)
    assert moved > 0 and live(study).filter(annotator=partner).count() == before + moved
    assert set(live(study).filter(annotator=partner).values_list("condition", flat=True)) == {condition.pk}
    assert_k_in_every_condition(study, 1)


def test_it_gives_a_new_annotator_a_condition_and_extends_in_it(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:2], rita, condition_design="within")
    added = study_annotators_add(study=study, annotators=[crew[2]], extend=True)
    assert added.assigned == 0 and added.extended > 0 and added.still_short == 0
    queue = list(live(study).filter(annotator=crew[2]).order_by("position").values_list("condition_id", flat=True))
    # The third to join starts at the first condition again, and works in both, in blocks.
    first, second = study.conditions.order_by("position").values_list("pk", flat=True)
    assert queue[0] == first and set(queue) == {first, second}
    assert sum(1 for a, b in pairwise(queue) if a != b) == 1


BAD = {
    "one condition": ([ConditionSpec("alone")], "A controlled study compares at least two conditions"),
    "seven conditions": ([ConditionSpec(f"c{n}") for n in range(7)], "At most 6 conditions; got 7."),
    "a name twice": ([ConditionSpec("A"), ConditionSpec(" a ")], "Two conditions are named 'a'"),
    "no name": ([ConditionSpec("A"), ConditionSpec("  ")], "Condition 2 needs a name."),
    "a NUL in a name": ([ConditionSpec("A"), ConditionSpec("B\x00")], "The name of condition 2"),
    "unknown evidence": ([ConditionSpec("A"), ConditionSpec("B", evidence="blurred")], "evidence 'blurred'"),
    "hidden without metric evidence": (
        [ConditionSpec("A"), ConditionSpec("B", evidence="hidden")],
        "none of the tasks shows metric evidence: only bertscore, qgqa, entailment do",
    ),
    "guidelines of another task": (
        [ConditionSpec("A"), ConditionSpec("B", guidelines={"qgqa": "Read twice."})],
        "guidelines for 'qgqa', which is not among the tasks",
    ),
    "a lone surrogate in guidelines": (
        [ConditionSpec("A"), ConditionSpec("B", guidelines={"factuality": "x\ud800"})],
        "factuality guidelines of condition 'B'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_it_refuses_bad_conditions_naming_the_field_and_creates_nothing(
    case: str, small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    conditions, message = BAD[case]
    with pytest.raises(ValidationError) as raised:
        create(small_dataset, crew, rita, conditions=conditions)
    assert any(message in text for text in raised.value.message_dict["conditions"]), raised.value.message_dict
    assert not Study.objects.filter(name="Anchoring").exists() and not StudyCondition.objects.exists()
    assert not Participation.objects.exists()


def test_it_refuses_too_few_annotators_for_k_in_every_condition(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    with pytest.raises(ValidationError) as raised:
        create(small_dataset, crew[:3], rita, annotators_per_item=2)
    assert raised.value.message_dict["annotators"] == [
        "2 annotators per item in each of 2 conditions need at least 4 annotators; 3 chosen."
    ]
    with pytest.raises(ValidationError) as raised:
        create(small_dataset, crew, rita, condition_design="crossed")
    assert "Design 'crossed': choose between or within." in raised.value.message_dict["condition_design"]
    assert not Study.objects.filter(name="Anchoring").exists()


API_STUDY = {"name": "Anchoring", "tasks": ["factuality"], "annotators_per_item": 1, "selection_mode": "all"}


def test_the_api_creates_conditions_and_refuses_bad_ones_by_field(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    client = api_client_for(rita)
    names = [user.username for user in crew[:4]]
    body = {**API_STUDY, "dataset": small_dataset.pk, "annotators": names}
    for conditions, message in [
        ("two", "Give the conditions as a list of objects"),
        ([{"name": "A"}, {"name": "B", "colour": "red"}], "Condition 2: unknown keys colour"),
        ([{"name": "A"}, {"name": "A"}], "Two conditions are named 'A'"),
    ]:
        response = client.post(reverse("api_studies"), {**body, "conditions": conditions}, format="json")
        assert response.status_code == 400 and message in response.json()["conditions"][0]
    assert not Study.objects.filter(name="Anchoring").exists()
    conditions = [{"name": "shown"}, {"name": "other guidelines", "guidelines": {"factuality": "Be strict."}}]
    response = client.post(
        reverse("api_studies"), {**body, "conditions": conditions, "condition_design": "within"}, format="json"
    )
    assert response.status_code == 201, response.json()
    study = Study.objects.get(name="Anchoring")
    assert study.condition_design == "within"
    assert list(study.conditions.values_list("name", "guidelines")) == [
        ("shown", {}),
        ("other guidelines", {"factuality": "Be strict."}),
    ]
    detail = client.get(reverse("api_study", args=[study.pk])).json()
    assert detail["condition_design"] == "within"
    assert [(row["name"], row["evidence"], row["guidelines"]) for row in detail["conditions"]] == [
        ("shown", "shown", {}),
        ("other guidelines", "shown", {"factuality": "Be strict."}),
    ]
    live_work = Assignment.objects.filter(item__study_task__study=study).exclude(status="reclaimed")
    assert sum(row["assignments"] for row in detail["conditions"]) == live_work.count() > 0
    assert all(row["done"] == 0 and row["annotators"] == 4 for row in detail["conditions"])


def test_the_command_creates_conditions_from_a_file_and_refuses_a_bad_one(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser, tmp_path: Path
) -> None:
    path = tmp_path / "conditions.json"
    path.write_text(json.dumps([{"name": "A"}, {"name": "B", "evidence": "shuffled"}]), encoding="utf-8")
    names = ",".join(user.username for user in crew[:2])
    options = ["--dataset", "small", "--name", "Anchoring", "--task", "factuality", "--annotators", names, "--k", "1"]
    with pytest.raises(CommandError, match="conditions: Condition 'B' has shuffled evidence"):
        call_command("create_study", *options, "--conditions", str(path))
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(CommandError, match="--conditions: cannot read"):
        call_command("create_study", *options, "--conditions", str(path))
    assert not Study.objects.filter(name="Anchoring").exists()
    path.write_text(json.dumps([{"name": "A"}, {"name": "B"}]), encoding="utf-8")
    call_command("create_study", *options, "--conditions", str(path), "--condition-design", "between")
    assert list(Study.objects.get(name="Anchoring").conditions.values_list("name", flat=True)) == ["A", "B"]


def test_the_web_form_creates_conditions(small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser) -> None:
    client = client_for(rita)
    form = {
        "dataset": small_dataset.pk,
        "name": "Anchoring",
        "tasks": ["factuality"],
        "selection_mode": "all",
        "seed": 0,
        "annotators": [user.pk for user in crew[:2]],
        "annotators_per_item": 1,
        "condition_design": "between",
        "condition_1_name": "Shown",
        "condition_1_evidence": "shown",
        "condition_2_name": "Shown",
        "condition_2_evidence": "shown",
    }
    url = f"{reverse('study_new')}?dataset={small_dataset.pk}"
    page = client.post(url, form)
    assert page.status_code == 200 and "Two conditions are named" in page.content.decode()
    assert not Study.objects.filter(name="Anchoring").exists()
    form.update(condition_2_name="Own guidelines", condition_2_guidelines="Judge only the first sentence.")
    response = client.post(url, form)
    study = Study.objects.get(name="Anchoring")
    assert response.status_code == 302
    assert list(study.conditions.values_list("name", "guidelines")) == [
        ("Shown", {}),
        ("Own guidelines", {"factuality": "Judge only the first sentence."}),
    ]


def test_another_researcher_cannot_reach_a_studys_conditions(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser, ronald: AbstractUser
) -> None:
    study = create(small_dataset, crew[:2], rita)
    before = list(study.conditions.values_list("pk", "name", "evidence"))
    client = client_for(ronald)
    assert client.get(reverse("study_detail", args=[study.pk])).status_code == 404
    response = client.post(reverse("study_annotators", args=[study.pk]), {"annotators": [crew[2].pk]})
    assert response.status_code == 404
    assert api_client_for(ronald).get(reverse("api_study", args=[study.pk])).status_code == 404
    assert list(study.conditions.values_list("pk", "name", "evidence")) == before
    assert not Participation.objects.filter(study=study, annotator=crew[2]).exists()


def test_the_study_page_lists_the_conditions_with_their_annotators_and_work(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    study = create(small_dataset, crew[:3], rita)
    client = client_for(rita)
    url = reverse("study_detail", args=[study.pk])
    with CaptureQueriesContext(connection) as before:
        page = client.get(url)
    rows = {row.condition.name: row for row in page.context["conditions"]}
    assert [rows[name].annotators for name in ("as usual", "strict")] == [2, 1]
    items = StudyItem.objects.filter(study_task__study=study).count()
    assert rows["strict"].assignments == items and rows["strict"].done == 0
    assert 'id="condition-list"' in page.content.decode()
    for assignment in live(study).filter(condition__name="strict"):
        submit(assignment, "yes")
    with CaptureQueriesContext(connection) as after:
        page = client.get(url)
    rows = {row.condition.name: row for row in page.context["conditions"]}
    assert rows["strict"].done == items
    assert len(after) <= len(before)  # the conditions' rows cost no query per row
    # k per condition: no item is complete while one condition lacks its judgements.
    assert page.context["tasks"][0]["progress"].complete_items == 0
    for assignment in live(study).filter(condition__name="as usual"):
        submit(assignment, "no")
    assert client.get(url).context["tasks"][0]["progress"].complete_items == items


def test_a_crowd_study_balances_workers_over_conditions_and_fills_k_per_condition(
    small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd: CrowdStudy = crowd_study_make(small_dataset, rita, conditions=[*TWO[:1], ConditionSpec("B")]).crowd
    first, second = crowd.study.conditions.order_by("position")
    workers = [to_annotation(arrive(crowd, f"w{n}")) for n in range(4)]
    taken: dict[int, set[int | None]] = defaultdict(set)
    for _ in range(4):
        for worker in workers:
            assignment = crowd_item_next(worker=worker)
            if assignment is None:
                continue
            taken[worker.user_id].add(assignment.condition_id)
            submit(assignment, "yes")
    joined = [Participation.objects.get(study=crowd.study, annotator_id=w.user_id).condition_id for w in workers]
    assert joined == [first.pk, second.pk, first.pk, second.pk]
    for worker, condition in zip(workers, joined, strict=True):
        assert taken[worker.user_id] == {condition}  # every item of a worker, checks too, in their condition
    real = Assignment.objects.filter(item__study_task__study=crowd.study, item__crowd_check__isnull=True)
    counts = Counter(real.values_list("item_id", "condition_id"))
    assert counts and max(counts.values()) <= crowd.study.annotators_per_item  # never beyond k in a condition
    pairs = list(real.values_list("item__summary_id", "annotator_id"))
    assert len(pairs) == len(set(pairs))


def test_a_crowd_study_within_gives_each_worker_every_condition_in_their_order(
    small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd = crowd_study_make(
        small_dataset,
        rita,
        conditions=[ConditionSpec("A"), ConditionSpec("B")],
        condition_design="within",
        check_rate=0,
    ).crowd
    first, second = crowd.study.conditions.order_by("position")
    workers = [to_annotation(arrive(crowd, f"w{n}")) for n in range(2)]
    for _ in range(crowd.max_items_per_worker):
        for worker in workers:
            assignment = crowd_item_next(worker=worker)
            if assignment is not None:
                submit(assignment, "yes")
    for worker, start in zip(workers, (first.pk, second.pk), strict=True):
        queue = list(
            Assignment.objects.filter(annotator_id=worker.user_id)
            .order_by("position")
            .values_list("condition_id", flat=True)
        )
        assert queue[0] == start and set(queue) == {first.pk, second.pk}
        assert sum(1 for a, b in pairwise(queue) if a != b) == 1


def test_it_shows_a_conditions_own_guidelines_and_records_the_tasks_version(
    small_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    conditions = [ConditionSpec("A"), ConditionSpec("B", guidelines={"factuality": "Only the first sentence counts."})]
    study = create(small_dataset, crew[:2], rita, conditions=conditions, guidelines={"factuality": "Read it all."})
    for user in crew[:2]:
        assignment = live(study).filter(annotator=user).first()
        expected = "Only the first sentence counts." if assignment.condition.name == "B" else "Read it all."
        page = client_for(user).get(reverse("annotate", args=[assignment.pk])).content.decode()
        assert expected in page
        detail = api_client_for(user).get(reverse("api_assignment", args=[assignment.pk])).json()
        assert detail["guidelines"] == expected
        assignment_submit(assignment=assignment, user=user, labels={"0": "yes"})
        assignment.refresh_from_db()
        assert assignment.guidelines_version == 1  # the task's version; the condition says which text


EVIDENCE_CONDITIONS = [
    ConditionSpec("with metric highlights"),
    ConditionSpec("without highlights", evidence="hidden"),
    ConditionSpec("shuffled highlights", evidence="shuffled"),
]


def evidence_in(task: str, unit: dict[str, Any]) -> Any:
    """The metric's evidence in one unit of the payload (what lights up, and where)."""
    if task == "bertscore":
        return [unit["aligned"], unit["aligned_text"], unit["alignment"]["sources"]]
    if task == "qgqa":
        return [unit["summary_answer"], unit["source_answer"]]
    return unit["top"]


def amount(task: str, unit: dict[str, Any]) -> int:
    if task == "bertscore":
        return len(unit["alignment"]["sources"])
    if task == "qgqa":
        return sum(1 for key in ("summary_answer", "source_answer") if unit[key] and not unit[key]["unanswerable"])
    return len(unit["top"])


def test_the_payload_carries_the_evidence_of_the_assignments_condition(
    scored_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    from corpus.models import Summary
    from tests.factories import explain_dataset_for_qgqa_and_entailment

    explain_dataset_for_qgqa_and_entailment(list(Summary.objects.filter(document__dataset=scored_dataset)))
    study = create(
        scored_dataset,
        crew[:3],
        rita,
        tasks=["bertscore", "qgqa", "entailment"],
        conditions=EVIDENCE_CONDITIONS,
        condition_design="within",
    )
    states: dict[tuple[int, str], dict[str, Any]] = {}
    for assignment in live(study).select_related("condition", "annotator", "item__study_task"):
        response = api_client_for(assignment.annotator).get(reverse("api_assignment", args=[assignment.pk]))
        states[(assignment.item_id, assignment.condition.evidence)] = response.json()["item_state"]
    differs: Counter[str] = Counter()
    for item in StudyItem.objects.filter(study_task__study=study).select_related("study_task"):
        task = item.study_task.task
        shown, hidden, shuffled = (states[(item.pk, evidence)] for evidence in ("shown", "hidden", "shuffled"))
        assert shown["metricEvidence"] is True and shuffled["metricEvidence"] is True
        assert hidden["metricEvidence"] is False
        # The same units to judge in every condition.
        assert [u["index"] for u in hidden["units"]] == [u["index"] for u in shown["units"]]
        assert [u["index"] for u in shuffled["units"]] == [u["index"] for u in shown["units"]]
        for unit in hidden["units"]:
            assert all(not part for part in evidence_in(task, unit)), unit
        if task == "bertscore":
            assert all(u["similarity"] is None for u in hidden["units"])
        if task == "qgqa":
            assert all(u["f1"] is None for u in hidden["units"])
        # Shuffled: as many highlights as shown, at other places (for some unit of most items).
        assert [amount(task, u) for u in shuffled["units"]] == [amount(task, u) for u in shown["units"]]
        if [evidence_in(task, u) for u in shuffled["units"]] != [evidence_in(task, u) for u in shown["units"]]:
            differs[task] += 1
    assert set(differs) == {"bertscore", "qgqa", "entailment"}
    # The annotator's page sends the same state: the hidden condition's page has no evidence in it.
    hidden_assignment = live(study).filter(condition__evidence="hidden", item__study_task__task="bertscore").first()
    page = client_for(hidden_assignment.annotator).get(reverse("annotate", args=[hidden_assignment.pk]))
    state = page.context["state"]
    assert state["metricEvidence"] is False and all(u["aligned"] == [] for u in state["units"])
    shuffled_assignment = live(study).filter(condition__evidence="shuffled").first()
    first = client_for(shuffled_assignment.annotator).get(reverse("annotate", args=[shuffled_assignment.pk]))
    assert first.context["state"]["units"] == states[(shuffled_assignment.item_id, "shuffled")]["units"]


def test_the_examples_show_the_evidence_as_the_condition_does(
    scored_dataset: Dataset, crew: list[AbstractUser], rita: AbstractUser
) -> None:
    from studies.models import StudyExample
    from studies.selectors.assignments import item_units
    from studies.views.frame import example_cards

    study = create(scored_dataset, crew[:3], rita, tasks=["bertscore"], conditions=EVIDENCE_CONDITIONS)
    item = StudyItem.objects.filter(study_task__study=study).select_related("summary", "explanation").first()
    units = item_units(item, with_document=True)
    # Written directly: the service refuses an item as an example (it would tell the answer), irrelevant here.
    example = StudyExample.objects.create(
        study_task=item.study_task,
        summary=item.summary,
        explanation=item.explanation,
        judgements=[{"unit_index": u.index, "unit_text": u.text, "label": "yes", "note": ""} for u in units],
    )
    by_evidence = {
        condition.evidence: [row["what"] for row in example_cards([example], condition=condition)[0]["rows"]]
        for condition in study.conditions.all()
    }
    assert by_evidence["shown"] == [row["what"] for row in example_cards([example])[0]["rows"]]
    assert any("↔" in what for what in by_evidence["shown"])
    assert not any("↔" in what for what in by_evidence["hidden"])
    # Shuffled: as many alignments, not the real ones (the placebo's examples must not show the real evidence).
    assert sum("↔" in what for what in by_evidence["shuffled"]) == sum("↔" in what for what in by_evidence["shown"])
    assert by_evidence["shuffled"] != by_evidence["shown"]


def test_a_crowd_worker_reads_the_instructions_of_their_condition(small_dataset: Dataset, rita: AbstractUser) -> None:
    from django.test import Client

    crowd = crowd_study_make(
        small_dataset, rita, conditions=TWO, consent_text="", phases=["instructions", "annotation", "end"], training=[]
    ).crowd
    pages, conditions = [], []
    for pid in ("5f1e2d3c4b5a69788796a5b1", "5f1e2d3c4b5a69788796a5b2"):
        client = Client()
        arrived = client.get(f"/crowd/{crowd.key}/?PROLIFIC_PID={pid}&STUDY_ID=abc&SESSION_ID=def")
        assert arrived.status_code == 302
        page = client.get(reverse("crowd_instructions", args=[crowd.key]))
        assert page.status_code == 200
        pages.append(page.content.decode())
        condition = Participation.objects.get(study=crowd.study, external_id=pid).condition
        conditions.append(condition.name if condition else None)
    # Chosen (balanced) before the first item, so the guidelines read are those of the arm worked in.
    assert conditions == ["as usual", "strict"]
    assert "Any doubt means no." not in pages[0] and "Any doubt means no." in pages[1]
