"""A crowd worker in the browser (issue 14, point 11): a worker arrives with Prolific's parameters, consents,
answers the survey, reads the instructions, fails the training once and passes on the second attempt, meets a
positive and a negative attention check in the annotation frame, answers the closing survey and is sent to the
platform with the completion code; another fails the checks and is sent away with the failure code; a third
returns mid-study and resumes. axe-core finds no serious violation on any crowd page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from corpus.models import Dataset
from crowd.models import CrowdItemRecord, CrowdStudy, CrowdWorker
from studies.models import Assignment, Participation
from tests.browser.test_accessibility import serious_violations
from tests.crowd.factories import crowd_study_make

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PID = "60a1b2c3d4e5f60718293a4b"
ITEM = re.compile(r"/annotate/(\d+)/$")


def public_study(dataset: Dataset, researcher: AbstractUser, base_url: str, **crowd: Any) -> CrowdStudy:
    """The platform is played by local addresses: the end page's redirect must land on them."""
    return crowd_study_make(
        dataset,
        researcher,
        completion_url=f"{base_url}/platform/complete/?cc={{code}}",
        failure_url=f"{base_url}/platform/failed/?cc={{code}}",
        screenout_url=f"{base_url}/platform/screened/?cc={{code}}",
        **crowd,
    ).crowd


def open_link(page: Any, base_url: str, crowd: CrowdStudy, pid: str = PID) -> None:
    page.goto(f"{base_url}/crowd/{crowd.key}/?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID=se1")


def current_assignment(page: Any) -> Assignment:
    page.wait_for_url(ITEM)
    page.wait_for_selector("#submit")
    page.wait_for_function("document.getElementById('remaining').textContent.length > 0")
    return Assignment.objects.select_related("item").get(pk=int(ITEM.search(page.url).group(1)))


def judge(page: Any, assignment: Assignment, *, right: bool) -> str:
    """Judge the item in the annotation frame with the keyboard: a check the way it must (or must not) be
    judged, a real item as factual. Returns the check's expectation ('' for a real item)."""
    check = getattr(assignment.item, "crowd_check", None)
    expected = check.expected if check is not None else ""
    factual = expected != "unfaithful"
    page.keyboard.press("1" if factual == right else "2")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: f"/annotate/{assignment.pk}/" not in url)
    return expected


def train(page: Any, answers: list[str]) -> list[bool]:
    """Answer the training items shown, one after the other; returns whether each answer was right."""
    results = []
    for answer in answers:
        page.locator(f"input[name=answer][value={answer}]").check()
        page.locator("#training-answer").click()
        page.wait_for_selector("#training-feedback")
        results.append(page.locator("#training-feedback").get_attribute("data-correct") == "true")
        assert serious_violations(page) == []
        page.locator("#training-continue").click()
    return results


def test_it_takes_a_prolific_worker_from_consent_to_the_completion_code(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd = public_study(small_dataset, rita, live_server.url, max_items_per_worker=3)
    open_link(page, live_server.url, crowd)
    page.wait_for_url(f"**/crowd/{crowd.key}/consent/")
    assert serious_violations(page) == []
    page.locator("#consent-continue").click()  # without the tick: asked again, nothing stored
    assert "Tick the box" in page.locator("#accept-error").inner_text()
    page.locator("#accept").check()
    page.locator("#consent-continue").click()

    page.wait_for_url("**/before/")
    assert serious_violations(page) == []
    page.locator("input[name=english][value=Yes]").check()
    page.locator("input[name=news][value=Online]").check()
    page.locator("input[name=news][value=Paper]").check()
    page.locator("#survey-continue").click()

    page.wait_for_url("**/instructions/")
    assert serious_violations(page) == []
    page.locator("#instructions-continue").click()

    page.wait_for_url("**/training/")
    assert serious_violations(page) == []
    assert train(page, ["faithful", "faithful"]) == [True, False]  # the Swansea bridge is in Cardiff
    assert "attempt 2 of 2" in page.locator("#training").inner_text()
    assert train(page, ["faithful", "unfaithful"]) == [True, True]

    expectations = []
    while True:
        page.wait_for_url(lambda url: ITEM.search(url) or "/after/" in url)
        if "/after/" in page.url:
            break
        expectations.append(judge(page, current_assignment(page), right=True))
    assert expectations == ["", "faithful", "", "unfaithful", ""]  # a positive and a negative check, mixed in
    worker = CrowdWorker.objects.get(participation__external_id=PID)
    assert [r.check_passed for r in CrowdItemRecord.objects.filter(worker=worker).order_by("assignment__position")] == [
        None,
        True,
        None,
        True,
        None,
    ]

    assert serious_violations(page) == []
    page.locator("input[name=clear][value=Agree]").check()
    page.locator("#survey-continue").click()
    page.wait_for_url("**/end/")
    assert page.locator("#code").inner_text() == "DONE1234"
    assert serious_violations(page) == []
    page.wait_for_url("**/platform/complete/?cc=DONE1234")
    worker.refresh_from_db()
    assert worker.status == "completed"
    assert worker.survey_answers == {
        "pre_survey": {"english": "Yes", "news": ["Paper", "Online"]},
        "post_survey": {"clear": "Agree"},
    }
    participation = Participation.objects.get(annotator=worker.user)
    assert (participation.platform, participation.excluded) == ("prolific", False)


def test_it_blocks_a_worker_who_fails_the_checks_with_the_failure_code(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd = public_study(
        small_dataset, rita, live_server.url, consent_text="", phases=["annotation", "end"], training=[]
    )
    open_link(page, live_server.url, crowd)
    judge(page, current_assignment(page), right=True)
    assert judge(page, current_assignment(page), right=False) == "faithful"  # the first failed check: a notice
    notice = page.locator(".messages .warning")
    assert "1 failed attention check" in notice.inner_text()
    assert serious_violations(page) == []
    judge(page, current_assignment(page), right=True)
    assert judge(page, current_assignment(page), right=False) == "unfaithful"
    page.wait_for_url("**/end/")
    assert page.locator("#code").inner_text() == "FAIL0000"
    assert serious_violations(page) == []
    page.wait_for_url("**/platform/failed/?cc=FAIL0000")
    worker = CrowdWorker.objects.get(participation__external_id=PID)
    assert worker.status == "blocked" and worker.participation.excluded
    open_link(page, live_server.url, crowd)  # coming back changes nothing: the end page again
    page.wait_for_url("**/end/")
    assert page.locator("#code").inner_text() == "FAIL0000"


def test_it_resumes_a_worker_who_returns_mid_study(
    live_server: Any, browser: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    phases = ["consent", "instructions", "annotation", "end"]
    crowd = public_study(small_dataset, rita, live_server.url, phases=phases, training=[], check_rate=0)
    open_link(page, live_server.url, crowd)
    page.locator("#accept").check()
    page.locator("#consent-continue").click()
    page.locator("#instructions-continue").click()
    first = current_assignment(page)
    judge(page, first, right=True)
    second = current_assignment(page)
    page.keyboard.press("2")  # started, not submitted: the draft is kept
    page.wait_for_function("document.getElementById('draft-status').textContent === 'Draft saved.'")

    later = browser.new_context(viewport={"width": 1280, "height": 720})  # another day: no cookies
    try:
        again = later.new_page()
        again.goto(f"{live_server.url}/crowd/{crowd.key}/?PROLIFIC_PID={PID}&STUDY_ID=st1&SESSION_ID=se1")
        again.wait_for_url(f"**/annotate/{second.pk}/")  # straight back to the open item, no consent again
        again.wait_for_selector("#submit:not([disabled])")  # the draft's label is back
        second.refresh_from_db()
        assert second.status == "assigned" and second.draft["task"]["labels"] == {"0": "no"}
    finally:
        later.close()
    assert Assignment.objects.filter(annotator=first.annotator).count() == 2


def test_it_finds_no_serious_violation_on_the_researchers_crowd_pages_and_the_refusals(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    from tests.browser.conftest import open_as

    crowd = public_study(small_dataset, rita, live_server.url)
    page.goto(f"{live_server.url}/crowd/{crowd.key}/")  # no worker id: a page that says what to do
    assert "participant id is missing" in page.locator("#refused").inner_text()
    assert serious_violations(page) == []
    open_as(page, live_server.url, rita, f"/studies/new/public/?dataset={small_dataset.pk}")
    assert page.locator("#create-public-study").is_visible()
    assert serious_violations(page) == []
    page.goto(f"{live_server.url}/studies/{crowd.study_id}/crowd/")
    assert page.locator("#public-link").inner_text().endswith(f"/crowd/{crowd.key}/")
    assert serious_violations(page) == []
    page.locator("#toggle-public").click()
    page.wait_for_selector("text=The link is closed")
    crowd.refresh_from_db()
    assert not crowd.public


def test_it_records_a_paste_into_an_explanation_and_warns_about_short_ones(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    crowd = public_study(
        small_dataset,
        rita,
        live_server.url,
        tasks=("sentence_consistency",),
        phases=["annotation", "end"],
        consent_text="",
        training=[],
        check_rate=0,
        min_explanation_chars=12,
    )
    open_link(page, live_server.url, crowd)
    assignment = current_assignment(page)
    for number in range(len(assignment.item.summary.sentences) or 1):
        page.keyboard.press("1")
        page.keyboard.press("e")
        if number == 0:
            page.evaluate("document.activeElement.dispatchEvent(new Event('paste', {bubbles: true}))")
        page.keyboard.type("ok")
        page.keyboard.press("Escape")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: f"/annotate/{assignment.pk}/" not in url)
    current_assignment(page)
    notices = page.locator(".messages").inner_text()
    assert "explanation shorter than the minimum" in notices and "pasted into an explanation" in notices
    assert CrowdItemRecord.objects.get(assignment=assignment).paste_events == 1


def test_it_builds_a_survey_on_the_public_study_form(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser
) -> None:
    from tests.browser.conftest import open_as

    open_as(page, live_server.url, rita, f"/studies/new/public/?dataset={small_dataset.pk}")
    page.locator("#id_name").fill("Built survey")
    page.locator("input[name=tasks][value=factuality]").check()
    page.locator("button.survey-add[data-survey=pre_survey]").click()
    question = page.locator(".field-pre_survey .survey-question").first
    question.get_by_label("Key (a-z, 0-9, _)").fill("age")
    question.get_by_label("Question").fill("How old are you?")
    question.get_by_label(
        "Choices, separated by ; (single and multiple choice; Likert: empty for the 5-point scale)"
    ).fill("18-30; 31 or older")
    page.locator("button.survey-add[data-survey=post_survey]").click()
    likert = page.locator(".field-post_survey .survey-question").first
    likert.get_by_label("Key (a-z, 0-9, _)").fill("clear")
    likert.get_by_label("Kind").select_option("likert")
    likert.get_by_label("Question").fill("The task was clear.")
    assert serious_violations(page) == []
    page.locator("#create-public-study").click()
    page.wait_for_url("**/crowd/")
    crowd = CrowdStudy.objects.get(study__name="Built survey")
    assert crowd.pre_survey == [
        {
            "key": "age",
            "text": "How old are you?",
            "kind": "single",
            "choices": ["18-30", "31 or older"],
            "required": True,
        }
    ]
    assert crowd.post_survey[0]["kind"] == "likert" and len(crowd.post_survey[0]["choices"]) == 5


def test_a_researcher_makes_an_existing_study_public_from_its_page_and_private_again(
    live_server: Any, page: Any, small_dataset: Dataset, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser
) -> None:
    from studies.models import Study
    from studies.services.studies import StudySpec, study_create
    from tests.browser.conftest import open_as

    study = study_create(
        spec=StudySpec(
            name="Internal study",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[alice, bob],
            annotators_per_item=2,
            created_by=rita,
        )
    ).study
    open_as(page, live_server.url, rita, f"/studies/{study.pk}/")
    assert page.locator("#make-public").is_visible() and serious_violations(page) == []
    page.locator("#make-public-platform").select_option("mturk")
    page.locator("#make-public-button").click()
    page.wait_for_selector("#study-public-link")
    crowd = CrowdStudy.objects.get(study=study)
    assert page.locator("#study-public-link").inner_text().endswith(f"/crowd/{crowd.key}/")
    assert "The study is public" in page.locator(".messages, [role=status], body").first.inner_text()
    assert crowd.platform == "mturk" and Study.objects.get(pk=study.pk).pull_based
    assert not Assignment.objects.filter(item__study_task__study=study, status="assigned").exists()
    assert serious_violations(page) == []
    page.locator("#study-toggle-public").click()
    page.wait_for_selector("text=new workers see that the study is closed")
    crowd.refresh_from_db()
    assert not crowd.public
    worker = page.context.browser.new_context().new_page()
    try:
        worker.goto(f"{live_server.url}/crowd/{crowd.key}/?workerId=A1NEWWORKER")
        assert "This study is closed" in worker.locator("#refused").inner_text()
    finally:
        worker.context.close()
    page.locator("#study-toggle-public").click()
    page.wait_for_selector("text=The link takes new workers.")
    crowd.refresh_from_db()
    assert crowd.public and CrowdStudy.objects.filter(study=study).count() == 1


def test_it_closes_the_study_for_a_worker_who_returned_it_once_the_researcher_uploads_the_export(
    live_server: Any, browser: Any, page: Any, small_dataset: Dataset, rita: AbstractUser, tmp_path: Any
) -> None:
    from tests.browser.conftest import open_as
    from tests.protocols.test_platform_status import prolific

    crowd = public_study(small_dataset, rita, live_server.url, phases=["annotation", "end"], check_rate=0)
    worker_context = browser.new_context()
    worker = worker_context.new_page()
    open_link(worker, live_server.url, crowd)
    held = current_assignment(worker)
    export = tmp_path / "prolific_export.csv"
    export.write_bytes(prolific((PID, "RETURNED")))
    open_as(page, live_server.url, rita, f"/studies/{crowd.study_id}/crowd/")
    assert serious_violations(page) == []
    page.locator("#platform-file").set_input_files(str(export))
    page.locator("#platform-status-upload").click()
    page.wait_for_selector("text=1 session(s) ended, 1 open item(s) back in the pool")
    assert page.locator("#worker-counts tr[data-status=left] td").nth(1).inner_text() == "1"
    assert Assignment.objects.get(pk=held.pk).status == "reclaimed"
    worker.reload()
    worker.wait_for_selector("text=This study is closed for you")
    assert worker.locator("#end").get_attribute("data-status") == "left"
    assert serious_violations(worker) == []
    page.goto(f"{live_server.url}/studies/{crowd.study_id}/quality/")
    assert "On the platform: Returned (unpaid)" in page.locator(".platform-status").inner_text()
    worker_context.close()
