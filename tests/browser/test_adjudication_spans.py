"""Span adjudication driven by the keyboard only, in real Chromium, axe-core clean (issue 16, point 1)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from protocols.tasks import word_spans
from review.services.adjudication import study_final_labels_compute
from studies.models import Assignment, FinalLabel, StudyItem
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SUMMARY = "The world's oldest person died on March 5, 1898 in Piedmont."


def test_it_lets_a_researcher_adjudicate_spans_with_the_keyboard_only(
    live_server: Any,
    page: Any,
    small_dataset: Any,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
) -> None:
    study = study_create(
        spec=StudySpec(
            name="spans",
            dataset=small_dataset,
            tasks=["hallucination_spans"],
            annotators=[alice, bob, carol],
            annotators_per_item=3,
            created_by=rita,
        )
    ).study
    item = StudyItem.objects.get(study_task__study=study, summary__text=SUMMARY)
    date = (SUMMARY.index("March"), SUMMARY.index(" in Piedmont"))
    piedmont = (SUMMARY.index("Piedmont"), len(SUMMARY) - 1)
    marked = {
        alice: [(date, "intrinsic"), (piedmont, "extrinsic")],
        bob: [(date, "intrinsic")],
        carol: [(piedmont, "intrinsic")],
    }
    for user, spans in marked.items():
        assignment_submit(
            assignment=Assignment.objects.get(item=item, annotator=user),
            user=user,
            spans=[{"start": s, "end": e, "label": label} for (s, e), label in spans],
        )
    study_final_labels_compute(study=study)
    # Date: 2 of 3; Piedmont: 2 of 3, typed by a tie (one intrinsic, one extrinsic) as the first type.
    automatic = FinalLabel.objects.get(item=item)
    assert automatic.status == "majority" and len(automatic.data["spans"]) == 2

    open_as(page, live_server.url, rita, reverse("adjudication_queue", args=[study.pk]))
    page.click(f"tr[data-item='{item.pk}'] a")
    page.wait_for_function("document.querySelector('tr.marking[aria-current=true]') !== null")
    assert serious_violations(page) == []
    # The draft starts as the current final decision: the majority's two spans.
    draft = (
        "Array.from(document.querySelectorAll('#final-span-list li[data-start]'))"
        ".map(li => li.dataset.start + '-' + li.dataset.end + ':' + li.dataset.label).join(' ')"
    )
    assert page.evaluate(draft) == f"{date[0]}-{date[1]}:intrinsic {piedmont[0]}-{piedmont[1]}:intrinsic"

    # j j chooses carol's row; c copies her spans (Piedmont only) into the draft.
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.get_attribute("tr.marking[aria-current=true]", "data-source") == "carol"
    page.keyboard.press("c")
    page.wait_for_function(f"({draft}) === '{piedmont[0]}-{piedmont[1]}:intrinsic'")
    # Adjust by hand: the word cursor to "oldest", extend over "person", mark it extrinsic.
    oldest = (SUMMARY.index("oldest"), SUMMARY.index(" died"))
    for _ in range([start for start, _ in word_spans(SUMMARY)].index(oldest[0])):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")
    page.wait_for_function(f"({draft}).startsWith('{oldest[0]}-{oldest[1]}:extrinsic')")
    # The note takes every shortcut key as text.
    page.keyboard.press("m")
    page.keyboard.type("checked: jkc tau 12")
    page.keyboard.press("Escape")
    assert page.evaluate(draft) == f"{oldest[0]}-{oldest[1]}:extrinsic {piedmont[0]}-{piedmont[1]}:intrinsic"
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('adjudication-status').textContent.startsWith('Saved')")
    row = FinalLabel.objects.get(item=item)
    assert (row.status, row.adjudicated_by, row.note, row.label) == (
        "adjudicated",
        rita,
        "checked: jkc tau 12",
        "hallucinated",
    )
    assert [(s["text"], s["label"]) for s in row.data["spans"]] == [
        ("oldest person", "extrinsic"),
        ("Piedmont", "intrinsic"),
    ]
    assert "adjudicated by rita" in (page.text_content("#final-decision") or "")

    # a accepts the majority; then a stale page's post is refused (409) and changes nothing.
    page.keyboard.press("a")
    page.wait_for_function("document.getElementById('final-decision').textContent.includes('majority')")
    row.refresh_from_db()
    assert (row.method, len(row.data["spans"])) == ("majority", 2)
    FinalLabel.objects.filter(pk=row.pk).update(version=row.version + 5)
    page.keyboard.press("u")
    page.wait_for_function("document.getElementById('adjudication-status').textContent.includes('Reload')")
    row.refresh_from_db()
    assert row.status == "adjudicated" and row.method == "majority"
    assert serious_violations(page) == []
