"""'Cannot judge' (issue 13, point 6): an annotator marks an item broken text, not English or other (with a
note); the reason is kept, the researcher sees it, and with the study's setting the item goes to someone
who has not seen it without the skip counting towards k."""

from __future__ import annotations

import json
import threading

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.urls import reverse

from analysis.selectors.exports import study_judgement_rows
from studies.models import Assignment, Study
from studies.selectors.studies import study_progress, study_skips
from studies.services.studies import (
    MAX_SKIP_NOTE_CHARS,
    assignment_skip,
    assignment_submit,
    study_settings_update,
)
from tests.conftest import client_for, units_of

pytestmark = pytest.mark.django_db


def first_of(user: AbstractUser, study: Study) -> Assignment:
    return Assignment.objects.filter(annotator=user, item__study_task__study=study).order_by("position").first()


def live_on(item_id: int) -> dict[str, str]:
    return {a.annotator.username: a.status for a in Assignment.objects.filter(item_id=item_id)}


@pytest.mark.parametrize(
    ("reason", "note", "field"),
    [
        ("spam", "", "reason"),
        (None, "", "reason"),
        (["not_english"], "", "reason"),
        ("other", "", "note"),
        ("other", "   ", "note"),
        ("not_english", "a\x00b", "note"),
        ("not_english", "\ud800", "note"),
        ("not_english", "x" * (MAX_SKIP_NOTE_CHARS + 1), "note"),
        ("not_english", 7, "note"),
    ],
)
def test_it_refuses_a_bad_reason_or_note_and_changes_nothing(
    bertscore_study: Study, alice: AbstractUser, reason: object, note: object, field: str
) -> None:
    assignment = first_of(alice, bertscore_study)
    before = Assignment.objects.count()
    with pytest.raises(ValidationError) as error:
        assignment_skip(assignment_id=assignment.pk, user=alice, reason=reason, note=note)
    assert field in error.value.message_dict
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and assignment.skip_reason == ""
    assert Assignment.objects.count() == before


def test_it_records_the_reason_and_gives_the_item_to_someone_who_has_not_seen_it(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    bertscore_study.annotators.add(carol)
    assignment = first_of(alice, bertscore_study)
    assert live_on(assignment.item_id) == {"alice": "assigned", "bob": "assigned"}
    skipped = assignment_skip(assignment_id=assignment.pk, user=alice, reason="not_english", note=" Welsh ")
    assert skipped.reassigned == 1
    assert live_on(assignment.item_id) == {"alice": "skipped", "bob": "assigned", "carol": "assigned"}
    assignment.refresh_from_db()
    assert (assignment.skip_reason, assignment.skip_note) == ("not_english", "Welsh")
    assert assignment.skipped_at is not None
    # Carol's new item is at the end of her queue; alice's skip is finished work, not open work.
    progress = {row.username: row for row in study_progress(study=bertscore_study)}
    assert (progress["alice"].skipped, progress["alice"].open) == (1, progress["alice"].assigned - 1)
    assert progress["carol"].assigned == 1


def test_it_does_not_count_the_skip_towards_k_only_when_the_study_says_so(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    bertscore_study.annotators.add(carol)
    study_settings_update(
        study=bertscore_study, annotators_per_item=2, reclaim_after_hours=None, skipped_items_reassigned=False
    )
    assignment = first_of(alice, bertscore_study)
    skipped = assignment_skip(assignment_id=assignment.pk, user=alice, reason="broken_text", note="")
    assert skipped.reassigned == 0
    assert live_on(assignment.item_id) == {"alice": "skipped", "bob": "assigned"}
    # Turning the setting on frees the item now.
    created = study_settings_update(
        study=bertscore_study, annotators_per_item=2, reclaim_after_hours=None, skipped_items_reassigned=True
    )
    assert created == 1
    assert live_on(assignment.item_id) == {"alice": "skipped", "bob": "assigned", "carol": "assigned"}


def test_it_keeps_an_item_nobody_else_may_take_short_without_blocking_the_study(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser
) -> None:
    """k = 2 with two annotators: nobody is free to take alice's skip; the item stays short, and changing
    the settings later does not fail over it."""
    assignment = first_of(alice, bertscore_study)
    assert assignment_skip(assignment_id=assignment.pk, user=alice, reason="other", note="empty source").reassigned == 0
    assert live_on(assignment.item_id) == {"alice": "skipped", "bob": "assigned"}
    assert study_settings_update(study=bertscore_study, annotators_per_item=2, reclaim_after_hours=5) == 0


def test_it_keeps_one_skip_when_the_request_is_replayed(
    bertscore_study: Study, alice: AbstractUser, carol: AbstractUser
) -> None:
    bertscore_study.annotators.add(carol)
    assignment = first_of(alice, bertscore_study)
    assignment_skip(assignment_id=assignment.pk, user=alice, reason="not_english", note="Welsh")
    first = Assignment.objects.get(pk=assignment.pk).skipped_at
    count = Assignment.objects.count()
    again = assignment_skip(assignment_id=assignment.pk, user=alice, reason="other", note="Welsh, and garbled")
    assert again.reassigned == 0 and Assignment.objects.count() == count
    assignment.refresh_from_db()
    assert (assignment.skip_reason, assignment.skip_note, assignment.skipped_at) == (
        "other",
        "Welsh, and garbled",
        first,
    )
    assert study_skips(study=bertscore_study).tasks[0].total == 1


def test_it_refuses_another_users_item_and_a_forged_id(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser
) -> None:
    assignment = first_of(alice, bertscore_study)
    for user, pk in ((bob, assignment.pk), (alice, 10**9)):
        with pytest.raises(Assignment.DoesNotExist):
            assignment_skip(assignment_id=pk, user=user, reason="not_english", note="")
    answer = client_for(bob).post(
        reverse("api_assignment_skip", args=[assignment.pk]), {"reason": "not_english"}, content_type="application/json"
    )
    assert answer.status_code == 404
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ASSIGNED


def test_it_refuses_a_skip_after_a_submission_and_a_submission_after_a_skip(
    bertscore_study: Study, alice: AbstractUser
) -> None:
    done, skipped = Assignment.objects.filter(annotator=alice).order_by("position")[:2]
    assignment_submit(assignment=done, user=alice, labels={u.index: "correct" for u in units_of(done)})
    with pytest.raises(ValidationError, match="submitted"):
        assignment_skip(assignment_id=done.pk, user=alice, reason="not_english", note="")
    assert Assignment.objects.get(pk=done.pk).status == Assignment.Status.SUBMITTED
    assignment_skip(assignment_id=skipped.pk, user=alice, reason="broken_text", note="")
    skipped.refresh_from_db()
    with pytest.raises(PermissionDenied, match="cannot judge"):
        assignment_submit(assignment=skipped, user=alice, labels={u.index: "correct" for u in units_of(skipped)})
    assert not skipped.judgements.exists()


def test_it_takes_the_web_views_skip_through_the_api_and_goes_on_to_the_next_open_item(
    bertscore_study: Study, alice: AbstractUser
) -> None:
    first, second = Assignment.objects.filter(annotator=alice).order_by("position")[:2]
    client = client_for(alice)  # the session, as the page's script sends it
    page = client.get(reverse("annotate", args=[first.pk])).content.decode()
    url = reverse("api_assignment_skip", args=[first.pk])
    assert f'data-skip-url="{url}"' in page and f'data-done-url="{reverse("annotate_next")}"' in page
    bad = client.post(url, {"reason": "other", "note": ""}, content_type="application/json")
    assert bad.status_code == 400 and "note" in json.dumps(bad.json())
    answer = client.post(url, {"reason": "not_english", "note": "Welsh"}, content_type="application/json")
    assert answer.status_code == 200
    assert (answer.json()["status"], answer.json()["skip_note"]) == ("skipped", "Welsh")
    assert client.get(reverse("annotate_next")).url == reverse("annotate", args=[second.pk])
    page = client.get(reverse("annotate", args=[first.pk])).content.decode()
    assert "You marked this item “cannot judge” (Not English: Welsh)" in page and 'id="cannot-judge"' not in page


def test_it_shows_the_researcher_the_counts_the_reasons_and_the_notes(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    assignment_skip(assignment_id=first_of(alice, bertscore_study).pk, user=alice, reason="not_english", note="Welsh")
    bobs = first_of(bob, bertscore_study).pk
    assignment_skip(assignment_id=bobs, user=bob, reason="other", note="=cmd|' /C calc'!A0")
    skips = study_skips(study=bertscore_study)
    assert [(t.task, t.total, t.by_reason) for t in skips.tasks] == [("bertscore", 2, {"Not English": 1, "Other": 1})]
    page = client_for(rita).get(reverse("study_detail", args=[bertscore_study.pk])).content.decode()
    assert 'class="skip-total">2<' in page and "Not English: 1 · Other: 1" in page
    assert '<td class="skip-note">Welsh</td>' in page and "<td>alice</td>" in page


def test_it_puts_each_skip_in_the_judgement_export(
    bertscore_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    done, skipped = Assignment.objects.filter(annotator=alice).order_by("position")[:2]
    assignment_submit(assignment=done, user=alice, labels={u.index: "correct" for u in units_of(done)})
    assignment_skip(assignment_id=skipped.pk, user=alice, reason="other", note='=HYPERLINK("x")')
    rows = list(study_judgement_rows(study=bertscore_study))
    judged = [row for row in rows if not row["cannot_judge"]]
    flags = [row for row in rows if row["cannot_judge"]]
    assert len(judged) == len(units_of(done)) and all(row["label"] == "correct" for row in judged)
    assert len(flags) == 1
    flag = flags[0]
    assert (flag["annotator"], flag["summary_id"], flag["cannot_judge"], flag["label"], flag["unit_index"]) == (
        "alice",
        skipped.item.summary_id,
        "other",
        "",
        None,
    )
    assert flag["cannot_judge_note"] == '=HYPERLINK("x")'
    csv = client_for(rita).get(reverse("study_export", args=[bertscore_study.pk, "csv"]))
    text = b"".join(csv.streaming_content).decode()
    assert "cannot_judge,cannot_judge_note" in text.splitlines()[0]
    assert "'=HYPERLINK" in text  # spreadsheet-safe, through the one CSV writer


@pytest.mark.django_db(transaction=True)
def test_it_gives_an_item_two_annotators_skip_at_once_to_the_free_one_once(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    bertscore_study.annotators.add(carol)
    theirs = {a.annotator_id: a for a in Assignment.objects.filter(item_id=first_of(alice, bertscore_study).item_id)}
    barrier, errors, reassigned = threading.Barrier(2), [], []

    def skip(user: AbstractUser) -> None:
        try:
            barrier.wait(timeout=10)
            result = assignment_skip(assignment_id=theirs[user.pk].pk, user=user, reason="broken_text", note="")
            reassigned.append(result.reassigned)
        except Exception as exc:  # the test reports any failure of either thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=skip, args=(user,)) for user in (alice, bob)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and sorted(reassigned) == [0, 1]
    item_id = theirs[alice.pk].item_id
    assert live_on(item_id) == {"alice": "skipped", "bob": "skipped", "carol": "assigned"}
