"""The inspector in real headless Chromium at 1280x720: a summary token lights the whole source words of its
word on hover and on keyboard focus, the threshold slider moves with the keyboard and changes the flagged count,
selecting a QAGS question highlights both answers, and the comparison shows both summaries."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset, Summary
from protocols.alignment import word_alignment
from scoring.models import Explanation
from tests.browser.conftest import open_as
from tests.browser.test_task_views import UNNAMED_CONTROLS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_page(page: Any, live_server: Any, user: AbstractUser, path: str) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_as(page, live_server.url, user, path)
    page.wait_for_selector("#document")
    return errors


def source_text(summary: Summary, token: dict[str, Any]) -> list[str]:
    """What focusing the token lights: the whole source words of its word (protocols.alignment)."""
    payload = Explanation.objects.get(summary=summary, metric="bertscore").payload
    alignment = word_alignment(payload, summary_text=summary.text, document_text=summary.document.text)
    word = next(w for w in alignment.words if any(p.start == token["start"] for p in w.pieces))
    return [source.text for source in sorted(word.sources, key=lambda source: source.start)]


def flagged_below(tokens: list[dict[str, Any]], threshold: float) -> int:
    return sum(1 for token in tokens if token["similarity"] is not None and token["similarity"] < threshold - 1e-9)


def test_it_lights_source_tokens_and_flags_tokens_below_the_threshold(
    live_server: Any, page: Any, explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = Summary.objects.select_related("document").get(document__external_id="oldest", system="ModelA")
    tokens = Explanation.objects.get(summary=summary, metric="bertscore").payload["tokens"]
    errors = open_page(page, live_server, rita, reverse("summary_inspect", args=[summary.pk]))
    assert page.evaluate(UNNAMED_CONTROLS) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # Hover: the whole source words of the token's word light up in the document.
    page.locator("#summary-a .tok").nth(8).hover()
    assert page.locator("#document mark.lit").all_text_contents() == source_text(summary, tokens[8])
    assert tokens[8]["text"] in page.locator("#token-info-a").text_content()
    # Keyboard: focus the first token, then move with the arrow key.
    page.mouse.move(0, 0)
    page.locator("#summary-a .tok").first.focus()
    assert page.locator("#document mark.lit").all_text_contents() == source_text(summary, tokens[0])
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.token") == "1"
    assert page.locator("#document mark.lit").all_text_contents() == source_text(summary, tokens[1])
    # Human spans are drawn on the summary, apart from the similarity colours.
    assert page.locator("#summary-a mark.human").count() == 3
    # The slider works with the keyboard and the count follows it.
    flagged = page.locator("#flagged-a")
    assert flagged.get_attribute("data-flagged") == str(flagged_below(tokens, 0.90))
    page.locator("#threshold-a").focus()
    page.keyboard.press("Home")
    assert page.locator("#threshold-value-a").text_content() == "0.80"
    assert flagged.get_attribute("data-flagged") == str(flagged_below(tokens, 0.80))
    assert page.locator("#summary-a .tok.flagged").count() == flagged_below(tokens, 0.80)
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert page.locator("#threshold-value-a").text_content() == "0.85"
    assert flagged.get_attribute("data-flagged") == str(flagged_below(tokens, 0.85))
    assert flagged_below(tokens, 0.80) != flagged_below(tokens, 0.90)
    assert errors == []


def test_it_highlights_both_answers_of_a_selected_qags_question(
    live_server: Any, page: Any, explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = Summary.objects.select_related("document").get(document__external_id="oldest", system="Gold")
    errors = open_page(page, live_server, rita, reverse("summary_inspect", args=[summary.pk]))
    questions = page.locator(".qags-question .question-button")
    assert questions.count() > 0
    questions_stored = Explanation.objects.get(summary=summary, metric="qags_cloze").payload["questions"]
    target = next(q for q in questions_stored if q["kept"] and not q["source_answer"]["unanswerable"])
    # Questions keep their number in the stored order (filtered ones included), whatever the sorting.
    button = page.locator(f'.qags-question[data-number="{questions_stored.index(target) + 1}"] .question-button')
    button.focus()
    page.keyboard.press("Enter")
    assert button.get_attribute("aria-pressed") == "true"
    assert page.locator("#qags-summary-a mark.answer").text_content() == target["summary_answer"]["text"]
    assert page.locator("#document mark.answer").text_content() == target["source_answer"]["text"]
    assert target["source_answer"]["text"] in page.locator("#qags-info-a").text_content()
    assert errors == []


def test_it_compares_two_summaries_of_one_document(
    live_server: Any, page: Any, explained_dataset: Dataset, rita: AbstractUser
) -> None:
    gold = Summary.objects.get(document__external_id="oldest", system="Gold")
    model = Summary.objects.get(document__external_id="oldest", system="ModelA")
    errors = open_page(page, live_server, rita, f"{reverse('summary_compare')}?a={gold.pk}&b={model.pk}")
    assert page.locator("#summary-a").text_content() == gold.text
    assert page.locator("#summary-b").text_content() == model.text
    assert page.locator("#document").count() == 1
    assert page.evaluate(UNNAMED_CONTROLS) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # B's tokens light the shared document too.
    page.locator("#summary-b .tok").first.hover()
    assert page.locator("#document mark.lit").count() == 1
    # Swapping goes through the pickers.
    page.select_option("#pick-a", str(model.pk))
    page.select_option("#pick-b", str(gold.pk))
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(f"**a={model.pk}&b={gold.pk}")
    assert page.locator("#summary-a").text_content() == model.text
    assert errors == []
