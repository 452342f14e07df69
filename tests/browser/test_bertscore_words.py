"""BERTScore alignments per word in real headless Chromium: a summary word made of several pieces ("Morano":
"Moran" + "o" for MiniLM's tokenizer) lights whole source words in the task view and in the inspector, the
status line names what is lit with each piece's similarity, and the pieces list opens with the keyboard;
axe-core finds no serious violation with a word lit."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset, Summary
from protocols.alignment import AlignedWord, word_alignment
from scoring.models import Explanation
from studies.models import Assignment, Study
from studies.selectors.assignments import item_units
from tests.browser.conftest import open_as
from tests.browser.test_accessibility import serious_violations
from tests.browser.test_task_views import UNNAMED_CONTROLS, open_task_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORD_CHARACTER = re.compile(r"\w")


def whole_word(text: str, start: int, end: int) -> bool:
    """[start, end) neither starts nor ends inside a word of `text`."""
    inside_before = start > 0 and WORD_CHARACTER.match(text[start - 1]) and WORD_CHARACTER.match(text[start])
    inside_after = end < len(text) and WORD_CHARACTER.match(text[end - 1]) and WORD_CHARACTER.match(text[end])
    return not inside_before and not inside_after


def several_pieces(summary: Summary) -> AlignedWord:
    payload = Explanation.objects.get(summary=summary, metric="bertscore").payload
    alignment = word_alignment(payload, summary_text=summary.text, document_text=summary.document.text)
    word = next(word for word in alignment.important if len(word.pieces) > 1)
    assert word.text == "Morano" and [piece.text for piece in word.pieces] == ["Moran", "o"]
    return word


def in_document_order(word: AlignedWord) -> list[str]:
    return [source.text for source in sorted(word.sources, key=lambda source: source.start)]


def gold_of_oldest() -> Summary:
    return Summary.objects.select_related("document").get(document__external_id="oldest", system="Gold")


def test_it_lights_whole_source_words_for_a_word_of_several_pieces_in_the_task_view(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    summary = gold_of_oldest()
    word = several_pieces(summary)
    assignment = Assignment.objects.get(annotator=alice, item__summary=summary)
    unit = next(u for u in item_units(assignment.item, with_document=True) if u.index == word.index)
    open_task_view(page, live_server, alice, f"/annotate/{assignment.pk}/")
    page.locator(f'#summary button.unit[data-index="{word.index}"]').focus()

    lit = page.locator("#source .src-token.lit")
    document = summary.document.text
    assert lit.all_text_contents() == in_document_order(word)
    for number in range(lit.count()):
        start, end = int(lit.nth(number).get_attribute("data-start")), int(lit.nth(number).get_attribute("data-end"))
        assert whole_word(document, start, end), document[start:end]
    # The status line names the word, what is lit and every piece's similarity.
    info = page.locator("#focus-info").text_content()
    assert f"“Morano” → “{unit.extra['aligned_text']}”" in info
    assert f"{word.score:.2f}, lowest piece" in info
    pieces = ", ".join(f"{piece.text} {piece.similarity:.2f}" for piece in word.pieces)
    assert f"pieces: {pieces}" in info
    # The pieces list: opened with the key i (its title takes the focus), one line per piece with its source word.
    details = page.locator("#pieces")
    assert details.is_visible() and not details.evaluate("el => el.open")
    page.keyboard.press("i")
    assert details.evaluate("el => el.open")
    assert page.evaluate("document.activeElement.id") == "pieces-title"
    assert "Morano" in page.locator("#pieces-title").text_content()
    lines = page.locator("#pieces-list li").all_text_contents()
    assert len(lines) == 2
    for line, piece in zip(lines, word.pieces, strict=True):
        assert line.startswith(f"“{piece.text}” → “{piece.source.text}”")
        assert line.endswith(f"similarity {piece.similarity:.2f}")
    assert serious_violations(page) == []  # axe-core, with the word lit and its pieces listed
    # i again closes it and gives the focus back to the word, still the current one.
    page.keyboard.press("i")
    assert not details.evaluate("el => el.open")
    assert page.evaluate("document.activeElement.dataset.index") == str(word.index)
    assert page.evaluate(UNNAMED_CONTROLS) == []


def test_it_lights_whole_source_words_for_every_piece_of_a_word_in_the_inspector(
    live_server: Any, page: Any, explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = gold_of_oldest()
    word = several_pieces(summary)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_as(page, live_server.url, rita, reverse("summary_inspect", args=[summary.pk]))
    page.wait_for_selector("#document")
    tokens = page.locator("#summary-a .tok")
    texts = tokens.all_text_contents()
    second_piece = next(i for i in range(1, len(texts)) if texts[i - 1 : i + 1] == ["Moran", "o"])
    tokens.nth(second_piece).focus()

    document = summary.document.text
    lit = page.locator("#document mark.lit")
    assert lit.all_text_contents() == in_document_order(word)
    for source in word.sources:
        assert whole_word(document, source.start, source.end)
    # Both pieces of the word are marked current, so the word reads whole.
    assert tokens.nth(second_piece - 1).evaluate("el => el.classList.contains('current')")
    assert tokens.nth(second_piece).evaluate("el => el.classList.contains('current')")
    info = page.locator("#token-info-a").text_content()
    pieces = ", ".join(f"{piece.text} {piece.similarity:.2f}" for piece in word.pieces)
    assert info.startswith("“Morano” → ") and f"pieces: {pieces}" in info
    assert f"this piece “o” {word.pieces[1].similarity:.2f}" in info
    assert serious_violations(page) == []
    # The arrow key moves to the previous piece: the same word stays lit.
    page.keyboard.press("ArrowLeft")
    assert lit.all_text_contents() == in_document_order(word)
    assert f"this piece “Moran” {word.pieces[0].similarity:.2f}" in page.locator("#token-info-a").text_content()
    assert errors == []
