"""The keyboard rule of every task view, in real headless Chromium.

A single-key shortcut acts only while the focus is not in an editable field; inside a field only modified
keys act (Ctrl+Enter submits, Esc leaves the field); no field receives the focus unless the annotator moves
it there (a field's own shortcut, declared in its aria-keyshortcuts, may; its key is not typed). The keys
are read from each page's help overlay, so a shortcut added later is covered without touching this file.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError

from corpus.models import Summary
from protocols.tasks import STUDY_TASKS
from studies.models import Assignment, Judgement, Study, StudyExample
from studies.selectors.selection import ItemSelection
from studies.services.examples import study_example_create
from studies.services.studies import StudySpec, study_create
from tests.browser.test_task_views import open_item, open_task_view, stored, submit_with_keyboard
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# How the help overlay writes a key -> how Playwright presses it.
KEY_NAMES = {"←": "ArrowLeft", "→": "ArrowRight", "↑": "ArrowUp", "↓": "ArrowDown", "Esc": "Escape", "Del": "Delete"}
# Enter is not a shortcut of its own: it activates the focused button (the submit button too), as on any page.
NOT_SHORTCUTS = {"Enter"}

TEXT_FIELDS = (
    "textarea, [contenteditable]:not([contenteditable=false]), input:not([type=checkbox]):not([type=radio])"
    ":not([type=button]):not([type=submit]):not([type=reset]):not([type=hidden])"
)
EDITABLE = TEXT_FIELDS + ", select"
NAME = "(el) => el.id || el.getAttribute('aria-label') || el.outerHTML.slice(0, 80)"
VALUE = "(el) => (el.isContentEditable ? el.textContent : el.value)"

# Every text field's value, the editable field that has the focus (with the keys it declares), open dialogs.
TEXT_STATE = f"""() => {{
  const name = {NAME}, value = {VALUE};
  const active = document.activeElement;
  const inField = active && (active.matches('{EDITABLE}') || active.isContentEditable);
  const fields = Array.from(document.querySelectorAll('{TEXT_FIELDS}'));
  const keys = (el) => (el.getAttribute('aria-keyshortcuts') || '').split(/\\s+/);
  return {{
    values: Object.fromEntries(fields.map((el) => [name(el), value(el)])),
    field: inField ? {{ name: name(active), keys: keys(active) }} : null,
    nothingFocused: active === document.body,
    dialogs: Array.from(document.querySelectorAll('dialog[open]')).map((d) => d.id),
  }};
}}"""

# Everything a shortcut's action changes, plus every field's value. `spans` (the marked spans) is kept apart:
# choosing another type in a span's own select legitimately changes it.
ACTION_STATE = f"""() => {{
  const name = {NAME}, value = {VALUE};
  const classes = (selector) => Array.from(document.querySelectorAll(selector)).map((el) =>
    el.className.replace(/\\bdone\\b/, '').trim() + '|' + (el.getAttribute('aria-pressed') || '') + '|' + el.hidden);
  const description = document.querySelector('.task-description');
  const title = document.getElementById('question-title');
  return {{
    values: Object.fromEntries(Array.from(document.querySelectorAll('{EDITABLE}'), (el) => [name(el), value(el)])),
    focus: document.activeElement ? name(document.activeElement) : null,
    url: location.href,
    description: description ? description.open : null,
    dialogs: Array.from(document.querySelectorAll('dialog[open]')).map((d) => d.id),
    checked: Array.from(document.querySelectorAll('input[type=checkbox]')).map((el) => el.id + '=' + el.checked),
    question: title ? title.textContent : null,
    marks: classes('.choice, .unit, .src-sentence, .src-token, .question, .statement, .sentence-mark'),
    spans: classes('.w, #span-list li'),
  }};
}}"""

VISIBLE_FIELDS = f"""() => Array.from(document.querySelectorAll('{EDITABLE}'))
  .filter((el) => el.getClientRects().length > 0 && !el.disabled).map({NAME})"""
FOCUS_FIELD = (
    f"(wanted) => Array.from(document.querySelectorAll('{EDITABLE}')).find((el) => ({NAME})(el) === wanted).focus()"
)
# Typing goes where the caret is; an arrow key pressed before moved it.
CARET_TO_END = """() => {
  const el = document.activeElement;
  if (el && typeof el.setSelectionRange === 'function' && typeof el.value === 'string') {
    try { el.setSelectionRange(el.value.length, el.value.length); } catch (error) { /* no caret in this input */ }
  }
}"""
DOCUMENTED_KEYS = "() => Array.from(document.querySelectorAll('#help-rows kbd')).map((k) => k.textContent)"
LINK_KEYS = "() => Array.from(document.querySelectorAll('a[aria-keyshortcuts]')).map((a) => a.ariaKeyShortcuts)"

# Keys that bring out fields a fresh item hides: BUMP's "why not possible" note, a marked span's type select.
REVEAL = {"bump": ["x"], "hallucination_spans": ["1"]}


def single_keys(page: Any, *, with_links: bool) -> list[tuple[str, str]]:
    """(as documented, as pressed) for every single-key shortcut in the help overlay."""
    documented = page.evaluate(DOCUMENTED_KEYS)
    assert "?" in documented and "d" in documented  # the overlay was read
    links = set() if with_links else set(page.evaluate(LINK_KEYS))
    keys = []
    for name in dict.fromkeys(documented):
        if (len(name) > 1 and "+" in name) or name in NOT_SHORTCUTS or name in links:
            continue
        keys.append((name, KEY_NAMES.get(name, name)))
    return keys


def press_outside_fields(page: Any, name: str, key: str, values: dict[str, str], done: list[str]) -> None:
    """Press a shortcut with the focus outside every field; no text may change and no field may take the
    focus unless it declares that key. Then leave the field or close the dialog, ready for the next key."""
    page.keyboard.press(key)
    done.append(name)
    state = page.evaluate(TEXT_STATE)
    assert state["values"] == values, f"text changed after pressing {done}"
    if state["field"] is not None:
        assert name in state["field"]["keys"], f"{state['field']['name']} took the focus after pressing {done}"
        page.keyboard.press("Escape")
        assert page.evaluate(TEXT_STATE)["field"] is None, f"Esc did not leave {state['field']['name']}"
    if state["dialogs"]:
        page.keyboard.press("Escape")
        assert page.evaluate(TEXT_STATE)["dialogs"] == [], f"Esc did not close {state['dialogs']}"


def assert_shortcuts_leave_text_alone(page: Any) -> None:
    """From the state the page loads in and after each shortcut, every shortcut leaves every text as it was."""
    loaded = page.evaluate(TEXT_STATE)
    assert loaded["nothingFocused"], "something has the focus on load"
    values = loaded["values"]
    assert values  # at least the comment
    keys = single_keys(page, with_links=False)
    done: list[str] = []
    for first in [None, *keys]:
        for name, key in [first, *keys] if first else keys:
            press_outside_fields(page, name, key, values, done)


def assert_fields_take_the_keys(page: Any, task: str) -> None:
    """With the focus in each field, every single-key shortcut only types its character into that field."""
    done: list[str] = []
    values = page.evaluate(TEXT_STATE)["values"]
    for key in REVEAL.get(task, []):
        press_outside_fields(page, key, key, values, done)
    keys = [(name, key) for name, key in single_keys(page, with_links=True) if key != "Escape"]
    fields = page.evaluate(VISIBLE_FIELDS)
    assert "comment" in fields
    for field in fields:
        page.evaluate(FOCUS_FIELD, field)
        is_select = page.evaluate("() => document.activeElement.tagName") == "SELECT"
        for name, key in keys:
            page.evaluate(CARET_TO_END)
            before = page.evaluate(ACTION_STATE)
            assert before["focus"] == field
            page.keyboard.press(key)
            after = page.evaluate(ACTION_STATE)
            where = f"{name!r} pressed in {field}"
            expected = dict(before["values"])
            if len(key) == 1 and not is_select:
                expected[field] += name
            else:
                expected[field] = after["values"][field]  # the field's own editing: caret, deletion, choice
            assert after["values"] == expected, where
            for part in ("focus", "url", "description", "dialogs", "checked", "question", "marks"):
                assert after[part] == before[part], f"{where} changed {part}"
            if not is_select:
                assert after["spans"] == before["spans"], f"{where} changed the spans"
        left = page.evaluate(TEXT_STATE)["values"]
        page.keyboard.press("Escape")
        state = page.evaluate(TEXT_STATE)
        assert state["field"] is None, f"Esc did not leave {field}"
        assert state["values"] == left


def example_path(task_study: Study, rita: AbstractUser, carol: AbstractUser, task: str) -> str:
    """A researcher's example of `task`: a second study of rita's with one item per task (BUMP freestyle, so
    its type select shows), the example taken from the summaries that are not items."""
    study = study_create(
        spec=StudySpec(
            name="Examples",
            dataset=task_study.dataset,
            tasks=list(STUDY_TASKS),
            annotators=[carol],
            annotators_per_item=1,
            created_by=rita,
            task_options={"bump": {"mode": "freestyle"}},
            selection=ItemSelection(mode="random", size=1, seed=2),
        )
    ).study
    study_task = study.tasks.get(task=task)
    items = study_task.items.values_list("summary_id", flat=True)
    for summary in Summary.objects.filter(document__dataset=study.dataset).exclude(pk__in=items).order_by("pk"):
        try:
            example = study_example_create(study_task=study_task, summary=summary, user=rita)
        except ValidationError:
            continue  # not a reference (BUMP), or nothing to judge in it
        return f"/studies/{study.pk}/examples/{example.pk}/"
    raise AssertionError(f"no summary can be an example of {task}")


@pytest.mark.parametrize("mode", ["item", "example"])
@pytest.mark.parametrize("task", STUDY_TASKS)
def test_it_never_types_a_shortcut_into_a_text_field(
    live_server: Any,
    page: Any,
    task_study: Study,
    alice: AbstractUser,
    bob: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
    task: str,
    mode: str,
) -> None:
    if mode == "item":
        open_item(page, live_server, alice, task)
        assert_shortcuts_leave_text_alone(page)
        open_item(page, live_server, bob, task)  # an untouched item: alice's draft holds her keys
    else:
        path = example_path(task_study, rita, carol, task)
        open_task_view(page, live_server, rita, path)
        assert_shortcuts_leave_text_alone(page)
        open_task_view(page, live_server, rita, path)  # examples keep no drafts: untouched again
    assert_fields_take_the_keys(page, task)


def submit_example(page: Any, path: str) -> StudyExample:
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: not url.endswith(path))
    return StudyExample.objects.get(pk=int(path.rstrip("/").rsplit("/", 1)[1]))


@pytest.mark.parametrize("mode", ["item", "example"])
def test_it_keeps_the_bump_edit_free_of_the_description_and_edit_keys(
    live_server: Any,
    page: Any,
    task_study: Study,
    alice: AbstractUser,
    carol: AbstractUser,
    rita: AbstractUser,
    mode: str,
) -> None:
    # Seen on the old view: the editor had the focus on load, so "d" and, after "r", "e" went into the
    # exported summary ("…has said.esuffolk").
    if mode == "item":
        assignment = open_item(page, live_server, alice, "bump")
        reference = assignment.item.summary.text
    else:
        path = example_path(task_study, rita, carol, "bump")
        open_task_view(page, live_server, rita, path)
        reference = StudyExample.objects.get(pk=int(path.rstrip("/").rsplit("/", 1)[1])).summary.text
    edited = page.locator("#edited")
    page.keyboard.press("d")
    assert page.locator(".task-description").get_attribute("open") is None
    page.keyboard.press("r")
    assert edited.input_value() == reference
    page.keyboard.press("e")
    assert edited.evaluate("el => el === document.activeElement")
    page.keyboard.press("Control+End")
    page.keyboard.type(" It rained.")
    if mode == "item":
        submit_with_keyboard(page, assignment)  # Ctrl+Enter from inside the editor
        assert Judgement.objects.get(assignment=assignment).unit_text == reference + " It rained."
    else:
        example = submit_example(page, path)
        assert [j["unit_text"] for j in example.judgements] == [reference + " It rained."]


def test_it_keeps_the_qags_explanation_free_of_the_explanation_key(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    # Seen on the old view: "2" moved the focus into the explanation, so the documented "e" was typed into it
    # (exported "earticle says…").
    assignment = open_item(page, live_server, alice, "sentence_consistency")
    (unit,) = units_of(assignment)
    note = page.locator(f"#note-{unit.index}")
    page.keyboard.press("2")
    assert not note.evaluate("el => el === document.activeElement")
    page.keyboard.press("e")
    assert note.evaluate("el => el === document.activeElement")
    page.keyboard.type("The article says nothing about it.")
    submit_with_keyboard(page, assignment)  # Ctrl+Enter from inside the explanation
    assert stored(assignment) == {unit.index: ("no", "The article says nothing about it.")}


def test_it_keeps_the_comment_free_of_the_comment_key(
    live_server: Any, page: Any, task_study: Study, alice: AbstractUser
) -> None:
    assignment = open_item(page, live_server, alice, "factuality")
    page.keyboard.press("1")
    page.keyboard.press("m")
    assert page.locator("#comment").evaluate("el => el === document.activeElement")
    page.keyboard.type("dates?")
    submit_with_keyboard(page, assignment)  # Ctrl+Enter from inside the comment
    assert Assignment.objects.get(pk=assignment.pk).comment == "dates?"
    assert stored(assignment) == {0: ("yes", "")}
