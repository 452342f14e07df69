"""Pages must not run a query per row: each page runs an exact number of queries, the same with few and with
many items and annotators. A changed number is a decision: update it here with the reason in the commit."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.analysis import study_agreement
from corpus.models import Dataset, Summary
from studies.models import Assignment, FinalLabel, Study, StudyItem
from studies.services.studies import StudySpec, assignment_skip, assignment_submit, study_create
from tests.analysis.test_conditions import HIDDEN, conditions_study
from tests.conftest import client_for, make_user, study_with_spare_summaries, units_of

pytestmark = pytest.mark.django_db


def queries(fetch: Callable[[], object]) -> int:
    with CaptureQueriesContext(connection) as context:
        response = fetch()
    assert response.status_code == 200
    return len(context.captured_queries)


# The annotation view's saves, through the API under the session: the session and the user, then the save.
# Submission: ownership, the locked row with membership, units, the upsert, deletions, the row; 9 since the
# page no longer asks the server for the next item (it goes to annotate_next); then the task's agreement tally
# (studies.services.tallies): its row locked (created if missing), and once the study page stored a tally in
# it, the item's labels and the row written.
DRAFT_QUERIES = 3
SUBMIT_QUERIES = 10
SUBMIT_TALLIED_QUERIES = SUBMIT_QUERIES + 2
# A skip: 16 since assignments_distribute reads the study's conditions (none here).
SKIP_QUERIES = 16
EXAMPLE_SUBMIT_QUERIES = 7
EXAMPLE_PAGE_QUERIES = 5


def add_study(dataset: Dataset, annotators: list[AbstractUser], researcher: AbstractUser) -> Study:
    return study_create(
        spec=StudySpec(
            name="more",
            dataset=dataset,
            tasks=["bertscore"],
            annotators=annotators,
            annotators_per_item=len(annotators),
            created_by=researcher,
        )
    ).study


def test_it_keeps_the_dashboard_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(alice)
    # 5: the queue's counts per study, task and status (progress), then the rows shown (at most 300).
    assert queries(lambda: client.get(reverse("dashboard"))) == 5
    add_study(bertscore_study.dataset, [alice, bob], rita)
    assert Assignment.objects.filter(annotator=alice).count() == 12
    assert queries(lambda: client.get(reverse("dashboard"))) == 5
    filtered = f"{reverse('dashboard')}?study={bertscore_study.pk}&task=bertscore&q=doc"
    assert queries(lambda: client.get(filtered)) == 5


def test_it_keeps_the_annotation_view_query_count_flat(bertscore_study: Study, alice: AbstractUser) -> None:
    client = client_for(alice)
    assignments = Assignment.objects.filter(annotator=alice).order_by("position")
    sizes = {a.pk: len(units_of(a)) for a in assignments}
    small, large = min(sizes, key=sizes.get), max(sizes, key=sizes.get)
    assert sizes[small] < sizes[large]
    counts = {pk: queries(lambda pk=pk: client.get(reverse("annotate", args=[pk]))) for pk in (small, large)}
    assert counts[small] == counts[large] == 9


# The studies list: the session, the user, the role check, the studies, then per list (not per study) the
# studies' number of conditions and the items done, then the annotators active in the last hour with the
# median time per item.
STUDIES_LIST_QUERIES = 7
# The study page: its label tasks' stored agreement tallies (for Fleiss' kappa and the agreement with the
# others; one query for all tasks), progress per task (the number of conditions, then the items done) and per
# annotator (with each annotator's median time per
# item), and the "cannot judge" summary (its counts and its list in one query), the LLM judges' runs (their
# failures only when there are runs), how many annotators are excluded (the accepted-work notice), its public
# link (crowd settings) if any, its adjudicators and the accounts that could be named one, and the study's
# conditions (none here; with conditions, two more: their work and their participants, whatever their number).
STUDY_PAGE_QUERIES = 19
# The first view of a figure (no tally stored, or one that no longer stands for the submitted work): each label
# task's labels read once and its tally stored.
STUDY_PAGE_REBUILD_QUERIES = STUDY_PAGE_QUERIES + 2
# The same page while the study's submitted work is unchanged: the agreement figures come from the cache
# (keyed by each task's submitted count, newest id and latest change, and the excluded annotators), so the
# labels are not read.
STUDY_PAGE_CACHED_QUERIES = STUDY_PAGE_QUERIES - 1


def test_it_keeps_the_study_pages_query_count_flat(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    detail = reverse("study_detail", args=[bertscore_study.pk])
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_REBUILD_QUERIES
    assert queries(lambda: client.get(reverse("studies"))) == STUDIES_LIST_QUERIES
    add_study(bertscore_study.dataset, [alice, bob, carol], rita)
    bertscore_study.annotators.add(carol)
    for user in (alice, bob):
        first = Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=user).first()
        assignment_skip(assignment_id=first.pk, user=user, reason="other", note="garbled")
    for assignment in Assignment.objects.filter(
        item__study_task__study=bertscore_study, status=Assignment.Status.ASSIGNED
    ):
        assignment_submit(
            assignment=assignment,
            user=assignment.annotator,
            labels={u.index: "correct" for u in units_of(assignment)},
            seconds=12.5,
        )
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_QUERIES
    assert queries(lambda: client.get(reverse("studies"))) == STUDIES_LIST_QUERIES


def test_it_reads_the_labels_only_for_a_figure_without_a_tally(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    detail = reverse("study_detail", args=[bertscore_study.pk])
    study_task = bertscore_study.tasks.get()
    items = list(study_task.items.order_by("pk"))

    def submit(item: object, label: str) -> None:
        for assignment in Assignment.objects.filter(item=item):
            labels = {u.index: label for u in units_of(assignment)}
            assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)

    def shown(url: str = detail) -> object:
        return client.get(url).context["tasks"][0]["agreement"]

    def full(dont_know_as_incorrect: bool = False) -> object:
        return study_agreement(study_tasks=[study_task], dont_know_as_incorrect=dont_know_as_incorrect).tasks[
            study_task.pk
        ]

    submit(items[0], "correct")
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_REBUILD_QUERIES
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_CACHED_QUERIES
    dont_know = f"{detail}?dont_know=incorrect"
    assert queries(lambda: client.get(dont_know)) == STUDY_PAGE_REBUILD_QUERIES  # a figure of its own
    assert queries(lambda: client.get(dont_know)) == STUDY_PAGE_CACHED_QUERIES
    before = shown()
    # A new complete item (more units, a second label): each submission updates the stored tallies, so the next
    # page computes afresh from them without reading a label, and shows what the full computation gives.
    submit(items[1], "incorrect")
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_QUERIES
    after = shown()
    assert after.n_items > before.n_items and after == full()
    assert queries(lambda: client.get(dont_know)) == STUDY_PAGE_QUERIES
    assert shown(dont_know) == full(dont_know_as_incorrect=True)
    # Submitting the same item again with other labels changes no count and no id: the tally takes the old
    # labels away and adds the new ones.
    mine = Assignment.objects.get(item=items[1], annotator=alice)
    assignment_submit(assignment=mine, user=alice, labels={u.index: "correct" for u in units_of(mine)})
    assert queries(lambda: client.get(detail)) == STUDY_PAGE_QUERIES
    assert shown().observed_agreement < after.observed_agreement
    assert shown() == full()


def test_it_lists_one_study_and_five_with_the_same_number_of_queries(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    def create(number: int) -> Study:
        return study_create(
            spec=StudySpec(
                name=f"study {number}",
                dataset=small_dataset,
                tasks=["factuality"],
                annotators=[alice, bob],
                annotators_per_item=2,
                created_by=rita,
            )
        ).study

    client = client_for(rita)
    first = create(0)
    assert queries(lambda: client.get(reverse("studies"))) == STUDIES_LIST_QUERIES
    for number in range(1, 5):
        study = create(number)
        for assignment in Assignment.objects.filter(item__study_task__study=study)[:3]:
            assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": "yes"}, seconds=9)
    page = client.get(reverse("studies"))
    assert len(page.context["rows"]) == 5 and first in [row["study"] for row in page.context["rows"]]
    assert queries(lambda: client.get(reverse("studies"))) == STUDIES_LIST_QUERIES


def test_it_keeps_every_task_views_query_count_flat(task_study: Study, alice: AbstractUser, rita: AbstractUser) -> None:
    """Per task: the same number of queries for the item with the fewest and the most units (or text), and
    after more items join the annotator's queue."""
    from protocols.tasks import STUDY_TASKS

    client = client_for(alice)
    measured = {}
    for task in STUDY_TASKS:
        assignments = Assignment.objects.filter(annotator=alice, item__study_task__task=task).select_related(
            "item__summary"
        )
        sizes = {a.pk: (len(units_of(a)), len(a.item.summary.text)) for a in assignments}
        small, large = min(sizes, key=sizes.get), max(sizes, key=sizes.get)
        assert sizes[small] < sizes[large], task
        counts = {pk: queries(lambda pk=pk: client.get(reverse("annotate", args=[pk]))) for pk in (small, large)}
        assert counts[small] == counts[large] == 9, (task, counts)
        measured[task] = (large, counts[large])
    study_create(
        spec=StudySpec(
            name="more work",
            dataset=task_study.dataset,
            tasks=["factuality", "feqa"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=rita,
        )
    )
    for task, (pk, count) in measured.items():
        assert queries(lambda pk=pk: client.get(reverse("annotate", args=[pk]))) == count, task


def test_it_keeps_the_save_endpoints_and_the_examples_query_count_flat(
    task_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    import json

    from studies.services.examples import study_example_annotate, study_example_create

    client = client_for(alice)
    assignments = Assignment.objects.filter(annotator=alice, item__study_task__task="bertscore")
    sizes = {a.pk: len(units_of(a)) for a in assignments}
    small, large = (
        Assignment.objects.get(pk=min(sizes, key=sizes.get)),
        Assignment.objects.get(pk=max(sizes, key=sizes.get)),
    )

    def save(kind: str, assignment: Assignment) -> Callable[[], object]:
        body = {"labels": {str(u.index): "correct" for u in units_of(assignment)}}
        data = json.dumps(body if kind == "api_assignment_submit" else {"draft": {"task": body}})
        return lambda: client.post(reverse(kind, args=[assignment.pk]), data=data, content_type="application/json")

    for kind, count in (("api_assignment_draft", DRAFT_QUERIES), ("api_assignment_submit", SUBMIT_QUERIES)):
        assert queries(save(kind, small)) == queries(save(kind, large)) == count, kind
    # Once the study page stored the task's agreement tally, each submission updates it; submitting again also
    # reads the labels it replaces.
    client_for(rita).get(reverse("study_detail", args=[task_study.pk]))
    resubmit = SUBMIT_TALLIED_QUERIES + 1
    assert queries(save("api_assignment_submit", small)) == queries(save("api_assignment_submit", large)) == resubmit

    study, study_task, spare = study_with_spare_summaries(task_study.dataset, alice, rita)
    item = Assignment.objects.filter(item__study_task=study_task, annotator=alice).first()

    def add_example(summary: Summary) -> None:
        example = study_example_create(study_task=study_task, summary=summary, user=rita, explanation_text="why")
        study_example_annotate(example=example, labels={"0": "yes"})

    add_example(spare[0])
    assert queries(lambda: client.get(reverse("annotate", args=[item.pk]))) == 9
    for summary in spare[1:3]:
        add_example(summary)
    assert queries(lambda: client.get(reverse("annotate", args=[item.pk]))) == 9

    # The researcher's example page and its submission (the API's endpoint, under the session).
    example = study_task.examples.order_by("pk").first()
    researcher = client_for(rita)
    page = reverse("study_example_annotate", args=[study.pk, example.pk])
    assert queries(lambda: researcher.get(page)) == EXAMPLE_PAGE_QUERIES
    url = reverse("api_study_example_submit", args=[study.pk, example.pk])
    body = json.dumps({"labels": {"0": "no"}, "comment": "Why."})
    # session, user and role; the example with its study and task; the save inside its transaction.
    assert queries(lambda: researcher.post(url, data=body, content_type="application/json")) == EXAMPLE_SUBMIT_QUERIES


def test_it_runs_an_exact_number_of_queries_for_an_edit_draft_and_a_skip(
    task_study: Study, alice: AbstractUser
) -> None:
    import json

    from tests.studies.test_submissions import item_of

    client = client_for(alice)
    bump = item_of(task_study, alice, "bump")
    edit = {"text": bump.item.summary.text + " Not.", "label": bump.item.params["error_type"]}
    draft = json.dumps({"draft": {"task": {"edit": edit}}})
    url = reverse("api_assignment_draft", args=[bump.pk])
    # The draft's UPDATE, then the task and the reference the minimal-edit check needs.
    assert queries(lambda: client.post(url, data=draft, content_type="application/json")) == DRAFT_QUERIES + 1

    skipped = item_of(task_study, alice, "factuality")
    url = reverse("api_assignment_skip", args=[skipped.pk])
    body = json.dumps({"reason": "not_english", "note": "Welsh"})
    # session, user; the locked row with its study, the save; the study locked and the item topped up to k
    # (skipped_items_reassigned, assignments_distribute); the annotator for the answer.
    assert queries(lambda: client.post(url, data=body, content_type="application/json")) == SKIP_QUERIES


def test_it_keeps_the_conditions_section_query_count_flat(
    small_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, rita: AbstractUser
) -> None:
    others = [make_user(name, "annotator") for name in HIDDEN]
    small = conditions_study(small_dataset, [alice, others[0]], rita)
    large = conditions_study(small_dataset, [alice, bob, carol, *others], rita)
    client = client_for(rita)

    def page(study: Study) -> Callable[[], object]:
        return lambda: client.get(reverse("study_analysis", args=[study.pk]))

    cache.clear()
    computed = queries(page(small))
    assert queries(page(large)) == computed  # 3 times the judgements, the same queries
    # Cached: the task's judgements, times and final labels (3 queries) are not read again...
    assert queries(page(large)) == computed - 3
    # ...until the final labels change.
    item = StudyItem.objects.filter(study_task__study=large).first()
    FinalLabel.objects.create(item=item, unit_index=0, label="yes", status=FinalLabel.Status.ADJUDICATED)
    assert queries(page(large)) == computed
