"""Every task view in real headless Chromium: done with the keyboard only, drafts survive a reload,
submit stays disabled until the item is complete, every control has an accessible name."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from protocols.tasks import MAX_NOTE_CHARS, get_task
from studies.models import Assignment, Judgement, Study
from tests.browser.conftest import open_as
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every focusable control must have a name a screen reader can read out.
UNNAMED_CONTROLS = """() => {
  const nameOf = (el) => {
    const labelled = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean)
      .map((id) => (document.getElementById(id) || {}).textContent || '').join(' ');
    const labels = el.labels ? Array.from(el.labels).map((l) => l.textContent).join(' ') : '';
    return [el.getAttribute('aria-label'), labelled, labels, el.textContent, el.getAttribute('title')]
      .map((text) => (text || '').trim()).find(Boolean) || '';
  };
  const controls = document.querySelectorAll(
    'button, a[href], input:not([type=hidden]), textarea, select, [tabindex]:not([tabindex="-1"])');
  return Array.from(controls).filter((el) => !nameOf(el)).map((el) => el.outerHTML.slice(0, 120));
}"""


def item_of(user: AbstractUser, task: str) -> Assignment:
    return Assignment.objects.filter(annotator=user, item__study_task__task=task).order_by("position").first()


def open_task_view(page: Any, live_server: Any, user: AbstractUser, path: str) -> None:
    """Open a task view (an item or a researcher's example) and check it started cleanly."""
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    open_as(page, live_server.url, user, path)
    page.wait_for_selector("#submit")
    page.wait_for_function("document.getElementById('remaining').textContent.length > 0")
    assert page_errors == []
    assert page.evaluate(UNNAMED_CONTROLS) == []


def open_item(page: Any, live_server: Any, user: AbstractUser, task: str) -> Assignment:
    assignment = item_of(user, task)
    open_task_view(page, live_server, user, f"/annotate/{assignment.pk}/")
    return assignment


def submit_with_keyboard(page: Any, assignment: Assignment) -> None:
    submit = page.locator("#submit")
    assert submit.is_enabled()
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: f"/annotate/{assignment.pk}/" not in url)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.draft == {}
    assert assignment.guidelines_version == 1


def stored(assignment: Assignment) -> dict[int, tuple[str, str]]:
    return {j.unit_index: (j.label, j.note) for j in Judgement.objects.filter(assignment=assignment)}


def test_it_runs_the_qgqa_task_one_question_at_a_time(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "qgqa")
    units = units_of(assignment)
    first, second = units[0].extra, units[2].extra
    assert page.locator("#question-title").text_content().startswith(f"Question 1 / 2: {units[0].text}")
    assert page.locator("#source mark.answer").text_content() == first["source_answer"]["text"]
    assert page.locator("#summary mark.answer").text_content() == first["summary_answer"]["text"]
    page.keyboard.press("ArrowRight")
    assert page.locator("#question-title").text_content().startswith("Question 2 / 2")
    assert second["source_answer"]["unanswerable"] and page.locator("#source mark.answer").count() == 0
    assert "unanswerable" in page.locator("#source-answer").text_content()
    page.keyboard.press("ArrowLeft")

    submit = page.locator("#submit")
    for number, key in enumerate(["1", "2", "3"]):
        assert submit.is_disabled() and f"{4 - number} missing" in submit.text_content()
        page.keyboard.press(key)
    assert page.locator("#question-title").text_content().startswith("Question 2 / 2")  # moved on by itself
    assert submit.is_disabled()
    page.keyboard.press("1")
    assert submit.evaluate("el => el === document.activeElement")
    submit_with_keyboard(page, assignment)
    assert stored(assignment) == {0: ("correct", ""), 1: ("incorrect", ""), 2: ("dont_know", ""), 3: ("correct", "")}


def test_it_highlights_the_top_sentences_in_the_entailment_task(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "entailment")
    units = units_of(assignment)
    top = units[0].extra["top"]
    lit = page.locator("#source .src-sentence.top")
    assert lit.count() == len(top) == 3
    document = assignment.item.summary.document
    assert lit.first.text_content() == document.text[top[0]["start"] : top[0]["end"]]
    assert lit.first.get_attribute("data-rank") == "1"
    in_view = "el => { const r = el.getBoundingClientRect(), p = el.parentElement.getBoundingClientRect();"
    in_view += " return r.bottom > p.top && r.top < p.bottom; }"
    assert lit.first.evaluate(in_view)
    for _ in units:
        assert page.locator("#submit").is_disabled()
        assert f"of {len(units)} sentences still to judge" in page.locator("#remaining").text_content()
        page.keyboard.press("4")
    submit_with_keyboard(page, assignment)
    assert stored(assignment) == {unit.index: ("most", "") for unit in units}


def test_it_labels_the_clicked_word_and_moves_on_to_the_next_word_without_a_label(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "bertscore")
    units = units_of(assignment)
    assert len(units) >= 2
    choices = get_task("bertscore").choices
    buttons = page.locator("#summary button.unit")
    choice_buttons = page.locator(".choices .choice")
    last = buttons.nth(len(units) - 1)
    last.click()
    assert "current" in (last.get_attribute("class") or "")
    choice_buttons.nth(1).click()
    # The clicked word carries its label; the next word without one (wrapping around) has the focus.
    assert f"label-{choices[1].value}" in (last.get_attribute("class") or "")
    assert last.get_attribute("aria-label").endswith(": " + choices[1].label)
    assert buttons.first.evaluate("el => el === document.activeElement")
    assert buttons.first.get_attribute("aria-label").endswith(": no label yet")
    assert choice_buttons.nth(1).get_attribute("aria-pressed") == "false"
    for _ in units[:-1]:
        page.keyboard.press(choices[0].key)
    assert page.locator("#submit").evaluate("el => el === document.activeElement")
    assert choice_buttons.first.get_attribute("aria-pressed") == "true"
    submit_with_keyboard(page, assignment)
    expected = {unit.index: (choices[0].value, "") for unit in units[:-1]}
    assert stored(assignment) == {**expected, units[-1].index: (choices[1].value, "")}


def test_it_labels_a_clicked_sentence_and_moves_on_to_submit_when_all_are_judged(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "entailment")
    units = units_of(assignment)
    choices = get_task("entailment").choices
    sentence = page.locator("#summary button.unit").first
    assert sentence.get_attribute("aria-label").endswith(": no label yet")
    assert not sentence.evaluate("el => el === document.activeElement")  # current, yet not focused
    sentence.click()
    page.locator(f".choices .choice-{choices[2].value}").click()
    assert {"labelled", f"label-{choices[2].value}"} <= set(sentence.get_attribute("class").split())
    assert sentence.get_attribute("aria-label") == f"Sentence 1: {units[0].text}: {choices[2].label}"
    if len(units) == 1:
        assert page.locator("#submit").evaluate("el => el === document.activeElement")
    else:
        assert page.locator("#summary button.unit").nth(1).evaluate("el => el === document.activeElement")


def test_it_asks_for_an_explanation_of_every_sentence_in_the_qags_protocol(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "sentence_consistency")
    (unit,) = units_of(assignment)
    page.keyboard.press("2")
    note = page.locator(f"#note-{unit.index}")
    assert note.get_attribute("maxlength") == str(MAX_NOTE_CHARS)
    assert page.locator("#submit").is_disabled()
    assert "1 explanation still missing" in page.locator("#remaining").text_content()
    page.keyboard.press("e")  # the reason comes next, in the field the annotator enters
    assert note.evaluate("el => el === document.activeElement")
    page.keyboard.type("The article gives no date of death.")
    page.keyboard.press("Enter")
    assert page.locator("#submit").evaluate("el => el === document.activeElement")
    submit_with_keyboard(page, assignment)
    assert stored(assignment) == {unit.index: ("no", "The article gives no date of death.")}


def test_it_shows_feqa_follow_up_questions_only_when_they_apply(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "feqa")
    question = lambda index: page.locator(f'.question[data-index="{index}"]')  # noqa: E731
    assert question(0).is_visible() and not question(1).is_visible() and not question(3).is_visible()
    page.keyboard.press("1")  # meaningful
    assert question(1).is_visible() and question(2).is_visible() and not question(3).is_visible()
    page.keyboard.press("2")  # minor problems
    page.keyboard.press("2")  # unfaithful
    assert question(3).is_visible()
    assert page.locator("#submit").is_disabled()
    assert "1 answer still missing" in page.locator("#remaining").text_content()
    page.keyboard.press("2")  # contradiction
    assert page.locator("#submit").is_enabled()
    for _ in range(3):
        page.keyboard.press("ArrowUp")
    page.keyboard.press("2")  # nonsensical after all: the follow-ups go away
    assert not question(1).is_visible() and not question(3).is_visible()
    submit_with_keyboard(page, assignment)
    assert stored(assignment) == {0: ("nonsensical", "")}


def test_it_judges_summary_factuality_with_one_key(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "factuality")
    assert page.locator("#submit").is_disabled()
    page.keyboard.press("d")  # the description folds away, and stays folded on the next item
    assert page.locator(".task-description").get_attribute("open") is None
    # The details element's toggle event, which remembers the choice, is dispatched as a task after the key.
    page.wait_for_function("localStorage.getItem('faithanno:description-closed:factuality') === '1'")
    page.keyboard.press("2")
    submit_with_keyboard(page, assignment)
    assert stored(assignment) == {0: ("no", "")}


def test_it_marks_hallucinated_spans_with_the_keyboard(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "hallucination_spans")
    summary = assignment.item.summary.text
    words = page.evaluate("JSON.parse(document.getElementById('annotate-state').textContent).words")
    assert page.evaluate("document.activeElement === document.body")  # the arrows work from the load on
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("2")  # words 3-5 are extrinsic
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("1")  # word 7 is intrinsic
    page.keyboard.press("ArrowRight")
    page.keyboard.press("1")
    assert page.locator("#span-list li").count() == 3
    page.keyboard.press("Delete")  # the span under the cursor goes again
    assert page.locator("#span-list li").count() == 2
    assert page.locator("#span-list li q").first.text_content() == summary[words[2][0] : words[4][1]]
    # The state says spans may not overlap (the server's rule): a selection reaching into a span is refused.
    assert page.evaluate("JSON.parse(document.getElementById('annotate-state').textContent).spansMayOverlap") is False
    for key in ["ArrowLeft", "ArrowLeft", "ArrowLeft", "Shift+ArrowRight", "1"]:
        page.keyboard.press(key)  # words 5-6, the first inside the extrinsic span
    assert "overlaps a marked span" in page.locator("#save-status").text_content()
    assert page.locator("#span-list li").count() == 2
    assert page.locator("#submit").is_disabled()
    page.keyboard.press("f")  # every hallucination is marked
    submit_with_keyboard(page, assignment)
    spans = list(Judgement.objects.filter(assignment=assignment).values_list("start", "end", "label", "unit_text"))
    assert spans == [
        (words[2][0], words[4][1], "extrinsic", summary[words[2][0] : words[4][1]]),
        (words[6][0], words[6][1], "intrinsic", summary[words[6][0] : words[6][1]]),
    ]


def test_it_marks_a_span_selected_with_the_mouse(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "hallucination_spans")
    first, last = page.locator("#summary .w").nth(1), page.locator("#summary .w").nth(3)
    first_text, last_text = first.text_content(), last.text_content()
    box_first, box_last = first.bounding_box(), last.bounding_box()
    page.mouse.move(box_first["x"] + 2, box_first["y"] + box_first["height"] / 2)
    page.mouse.down()
    page.mouse.move(box_last["x"] + box_last["width"] - 2, box_last["y"] + box_last["height"] / 2, steps=5)
    page.mouse.up()
    keys = " or ".join(choice.key for choice in get_task("hallucination_spans").choices)
    assert f"press {keys}, or a button below" in page.locator("#span-cursor").text_content()
    page.get_by_role("button", name="Mark as intrinsic").click()
    page.get_by_label("I have marked every hallucinated span").check()
    page.locator("#submit").click()
    page.wait_for_url(lambda url: f"/annotate/{assignment.pk}/" not in url)
    summary = assignment.item.summary.text
    ((start, end, label),) = Judgement.objects.filter(assignment=assignment).values_list("start", "end", "label")
    assert label == "intrinsic"
    assert summary[start:end].startswith(first_text) and summary[start:end].endswith(last_text)


def test_it_stores_a_bump_edit_with_its_diff_and_warns_when_it_is_not_minimal(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "bump")
    requested = assignment.item.params["error_type"]
    reference = assignment.item.summary.text
    assert (
        get_task("bump")
        .units(summary_text=reference, params=assignment.item.params)[0]
        .prompt.startswith("Introduce exactly one")
    )
    assert page.evaluate("document.activeElement === document.body")  # nothing is typed before e
    assert page.locator("#submit").is_disabled()
    assert page.locator("#not-possible-note").get_attribute("maxlength") == str(MAX_NOTE_CHARS)
    page.keyboard.press("e")
    page.keyboard.press("Control+a")
    page.keyboard.type("Nothing of this is in the article at all, says a spokesman for the council.")
    page.wait_for_selector(".warning")
    assert "a minimal edit changes a few" in page.locator("#edit-warnings").text_content()
    page.keyboard.press("Escape")
    page.keyboard.press("r")  # start again from the reference
    assert page.locator("#edited").input_value() == reference
    old_word = reference.split()[-2]
    page.keyboard.press("e")
    page.keyboard.press("Control+a")
    page.keyboard.type(reference.replace(old_word, "Tuesday"))
    page.wait_for_function("document.querySelector('#edit-diff del') !== null")
    assert page.locator("#edit-diff del").text_content() == old_word.strip(".,")
    assert page.locator(".warning").count() == 0
    submit_with_keyboard(page, assignment)
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.label == requested and judgement.unit_text == reference.replace(old_word, "Tuesday")
    assert judgement.data["reference"] == reference
    assert [c["new"] for c in judgement.data["diff"]["changes"]] == ["Tuesday"]


def pressed(selector: str) -> str:
    """A script listing the values of the pressed choice buttons under `selector`."""
    buttons = f"document.querySelectorAll('{selector} .choice[aria-pressed=true]')"
    return f"Array.from({buttons}).map(b => b.dataset.value).join()"


WORD_LABELS = (
    "Array.from(document.querySelectorAll('button.unit')).slice(0, 2).map(b => "
    "b.className.includes('label-dont_know') ? 'd' : b.className.includes('label-incorrect') ? 'i' : '-').join('')"
)
# task: (keys pressed on a fresh item, script that reads the state back, what it must read after the reload)
RELOAD_CASES = {
    "bertscore": (["ArrowRight", "3", "2"], WORD_LABELS, "di"),
    "qgqa": (["2"], pressed(".statement"), "incorrect"),
    "entailment": (["2"], pressed(".judge"), "few"),
    "sentence_consistency": (
        ["1", "e", "o", "k"],
        "document.querySelector('.note').value + '|' + " + pressed(""),
        "ok|yes",
    ),
    "feqa": (["1", "1"], pressed(".question:not([hidden])"), "meaningful,grammatical"),
    "hallucination_spans": (
        ["2"],
        "document.querySelectorAll('#span-list li').length + '|' + document.querySelector('#span-list select').value",
        "1|extrinsic",
    ),
    "bump": (["e", "End", "!", "!"], "document.getElementById('edited').value.slice(-2)", "!!"),
}


@pytest.mark.parametrize("task", sorted(RELOAD_CASES))
def test_it_keeps_drafts_across_a_reload_and_on_another_device(
    live_server: Any, browser: Any, page: Any, task_study: Study, alice: AbstractUser, task: str
) -> None:
    keys, read_back, expected = RELOAD_CASES[task]
    assignment = open_item(page, live_server, alice, task)
    for key in keys:
        page.keyboard.press(key)
    page.wait_for_function("document.getElementById('draft-status').textContent === 'Draft saved.'")
    page.reload()
    page.wait_for_selector("#submit")
    assert page.evaluate(read_back) == expected
    assert "Restored" in page.locator("#draft-status").text_content()

    # Another device (no browser storage) continues from the server's copy.
    other = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        second = other.new_page()
        open_as(second, live_server.url, alice, f"/annotate/{assignment.pk}/")
        second.wait_for_selector("#submit")
        assert second.evaluate(read_back) == expected
    finally:
        other.close()
    assert not Judgement.objects.filter(assignment=assignment).exists()  # a draft is not a submission


def test_it_keeps_work_while_the_connection_is_lost_and_sends_it_when_it_is_back(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "factuality")
    page.context.set_offline(True)
    page.keyboard.press("1")
    page.wait_for_function("document.getElementById('draft-status').textContent.startsWith('Offline')")
    assignment.refresh_from_db()
    assert assignment.draft == {}
    page.context.set_offline(False)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    page.wait_for_function("document.getElementById('draft-status').textContent === 'Draft saved.'")
    assignment.refresh_from_db()
    assert assignment.draft["task"]["labels"] == {"0": "yes"}


def test_it_fits_a_tablet_and_lists_every_shortcut_in_the_help(
    live_server: Any, browser: Any, task_study: Study, alice: AbstractUser
) -> None:
    context = browser.new_context(viewport={"width": 768, "height": 1024}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        for task in ("bertscore", "qgqa", "entailment", "feqa", "hallucination_spans", "bump"):
            open_item(page, live_server, alice, task)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), task
            page.locator("#submit").scroll_into_view_if_needed()
            assert page.locator("#submit").is_visible()
            page.locator("#open-help").tap()
            help_text = page.locator("#help").text_content()
            for key in ("Ctrl+Enter", "?", "n", "p", "c", "v", "m", "d"):
                assert key in help_text, (task, key)
            page.keyboard.press("Escape")
    finally:
        context.close()
