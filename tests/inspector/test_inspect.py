"""The inspector of one summary and the comparison of two: roles, bad input, what the panels show (with
the offsets of the stored payloads), the judgements a researcher may see, and flat query counts."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from corpus.models import Dataset, Summary
from scoring.models import Explanation
from studies.models import Assignment, Study
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.conftest import client_for, units_of
from tests.factories import explanation_create, qags_payload

pytestmark = pytest.mark.django_db


def summary_of(dataset: Dataset, document: str, system: str) -> Summary:
    return Summary.objects.select_related("document").get(
        document__dataset=dataset, document__external_id=document, system=system
    )


def inspect_url(summary: Summary) -> str:
    return reverse("summary_inspect", args=[summary.pk])


def compare_url(a: Any, b: Any) -> str:
    return f"{reverse('summary_compare')}?a={a}&b={b}"


def script_state(content: str, side: str = "a") -> dict[str, Any]:
    match = re.search(rf'<script id="inspect-state-{side}" type="application/json">(.*?)</script>', content, re.S)
    assert match, f"no state for side {side}"
    return json.loads(match.group(1))


def attribute_values(content: str, name: str) -> list[Any]:
    return [json.loads(html.unescape(raw)) for raw in re.findall(rf'{name}="([^"]*)"', content)]


def test_it_lets_only_researchers_inspect_summaries(
    explained_dataset: Dataset, alice: AbstractUser, rita: AbstractUser, admin_user: AbstractUser
) -> None:
    gold = summary_of(explained_dataset, "oldest", "Gold")
    model = summary_of(explained_dataset, "oldest", "ModelA")
    for url in (inspect_url(gold), compare_url(gold.pk, model.pk)):
        anonymous = Client().get(url)
        assert anonymous.status_code == 302 and reverse("login") in anonymous["Location"]
        assert client_for(alice).get(url).status_code == 403
        assert client_for(rita).get(url).status_code == 200
        assert client_for(admin_user).get(url).status_code == 200


def test_it_answers_bad_input_with_404_and_400(explained_dataset: Dataset, rita: AbstractUser) -> None:
    client = client_for(rita)
    oldest = summary_of(explained_dataset, "oldest", "Gold")
    bridge = summary_of(explained_dataset, "bridge", "ModelA")
    missing = Summary.objects.order_by("-pk").first().pk + 1
    assert client.get(reverse("summary_inspect", args=[missing])).status_code == 404
    assert client.get(compare_url(oldest.pk, missing)).status_code == 404
    across = client.get(compare_url(oldest.pk, bridge.pk))
    assert across.status_code == 400 and b"different documents" in across.content
    for a, b in (("x", oldest.pk), (oldest.pk, ""), (oldest.pk, "-3"), (oldest.pk, "1.5")):
        malformed = client.get(compare_url(a, b))
        assert malformed.status_code == 400 and b"must be a summary id" in malformed.content
    assert client.get(f"{reverse('summary_compare')}?a={oldest.pk}").status_code == 400


def test_it_shows_bertscore_tokens_with_their_offsets_and_the_human_spans(
    explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = summary_of(explained_dataset, "oldest", "ModelA")
    response = client_for(rita).get(inspect_url(summary))
    content = response.content.decode()
    state = script_state(content)
    payload = Explanation.objects.get(summary=summary, metric="bertscore").payload
    assert state["summary"] == summary.text
    assert [(t["start"], t["end"]) for t in state["tokens"]] == [(t["start"], t["end"]) for t in payload["tokens"]]
    document = summary.document.text
    for token in state["tokens"]:
        assert summary.text[token["start"] : token["end"]].lower() == token["text"].lower().removeprefix("##")
        if token["aligned"]:
            start, end = token["aligned"]
            assert document[start:end].lower() == token["aligned_text"].lower().removeprefix("##")
    assert 'id="threshold-a"' in content and 'min="0.8"' in content and 'max="0.99"' in content
    # The imported Maynez spans: w1 marked "March 5, 1898", w2 nothing; each word is 1 of 2.
    assert state["humanAnnotators"] == 2
    marked = {word["text"]: word["marked"] for word in state["humanWords"]}
    assert marked == {"March": 1, "5": 1, "1898": 1}
    for word in state["humanWords"]:
        assert summary.text[word["start"] : word["end"]] == word["text"]
    assert "1 of 2" in content


def test_it_gives_the_script_whole_source_words_per_word_and_says_when_the_word_view_is_partial(
    explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = summary_of(explained_dataset, "oldest", "Gold")
    client = client_for(rita)
    state = script_state(client.get(inspect_url(summary)).content.decode())
    document = summary.document.text
    morano = next(word for word in state["words"] if word["text"] == "Morano")
    assert [piece["text"] for piece in morano["pieces"]] == ["Moran", "o"]
    for start, end, text in morano["sources"]:
        assert document[start:end] == text and re.fullmatch(r"\w+", text)  # whole words, never "Moran"
        assert not re.match(r"\w", document[end : end + 1]) and not re.match(r"\w", document[start - 1 : start])
    assert morano["score"] == min(piece["similarity"] for piece in morano["pieces"])
    pieces = [token for token in state["tokens"] if token["word"] == morano["word"]]
    assert [token["text"] for token in pieces] == ["Moran", "o"]
    # An explanation without `words` (no version wrote one; a foreign row may): tokens still drawn, words from
    # the word tokenizer, and the page says the word view is partial.
    explanation = Explanation.objects.get(summary=summary, metric="bertscore")
    explanation.payload = {key: value for key, value in explanation.payload.items() if key != "words"}
    explanation.save()
    content = client.get(inspect_url(summary)).content.decode()
    degraded = script_state(content)
    assert len(degraded["tokens"]) == len(state["tokens"])
    assert [word["text"] for word in degraded["words"]][:4] == ["The", "world", "'", "s"]
    assert "Word view partial: the explanation stores no words" in content


def test_it_shows_qags_questions_lowest_f1_first_with_both_answers(
    explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = summary_of(explained_dataset, "oldest", "Gold")
    response = client_for(rita).get(inspect_url(summary))
    content = response.content.decode()
    explanation = Explanation.objects.get(summary=summary, metric="qags_cloze")
    kept = [q for q in explanation.payload["questions"] if q["kept"]]
    assert "QAGS (cloze fallback)" in content
    assert not re.search(r'class="panel-title">QAGS <', content)
    panel = next(p for p in response.context["inspection"].panels if p.metric == "qags_cloze")
    f1s = [row["f1"] for row in panel.data["kept"]]
    assert f1s == sorted(f1s) and len(f1s) == len(kept)
    assert [row["pulls_down"] for row in panel.data["kept"]] == [f1 < explanation.score for f1 in f1s]
    summary_ranges = attribute_values(content, "data-summary-ranges")
    source_ranges = attribute_values(content, "data-source-ranges")
    expected = {(q["summary_answer"]["start"], q["summary_answer"]["end"]) for q in kept}
    shown = {(start, end) for ranges in summary_ranges for start, end, name in ranges if name == "answer"}
    assert expected <= shown
    for question in kept:
        answer = question["source_answer"]
        if not answer["unanswerable"]:
            assert [answer["start"], answer["end"], "answer"] in [r for ranges in source_ranges for r in ranges]
            assert summary.document.text[answer["start"] : answer["end"]] == answer["text"]
        assert escape(question["question"]) in content


def test_it_shows_entailment_top_sentences_and_why_probabilities_are_missing(
    explained_dataset: Dataset, rita: AbstractUser
) -> None:
    summary = summary_of(explained_dataset, "oldest", "ModelA")
    content = client_for(rita).get(inspect_url(summary)).content.decode()
    explanation = Explanation.objects.get(summary=summary, metric="entailment")
    assert "not computed: " + escape(explanation.payload["nli"]["reason"])[:40] in content
    sentences = summary.document.sentences
    ranges = attribute_values(content, "data-source-ranges")
    for sentence in explanation.payload["sentences"]:
        expected = [[*sentences[top["index"]], f"top rank-{rank}"] for rank, top in enumerate(sentence["top"], 1)]
        assert expected in ranges


def test_it_shows_every_score_model_and_error(explained_dataset: Dataset, rita: AbstractUser) -> None:
    summary = summary_of(explained_dataset, "oldest", "ModelA")
    response = client_for(rita).get(inspect_url(summary))
    content = response.content.decode()
    names = {(row.kind, row.name) for row in response.context["inspection"].scores}
    assert {("human", "Faithful"), ("imported metric", "R1"), ("computed", "BERTScore")} <= names
    assert ("computed", "Abstractiveness") in names and ("computed", "Named-entity overlap") in names
    for explanation in Explanation.objects.filter(summary=summary):
        assert explanation.config_hash[:12] in content
        for model in explanation.model_ids.values():
            if model:
                assert escape(str(model)) in content
    # The novel words of the abstractiveness panel are cut from the summary at the stored offsets.
    abstractive = Explanation.objects.get(summary=summary, metric="abstractiveness").payload["sentences"][0]
    words = [summary.text[s:e] for s, e in abstractive["novel_words"]]
    assert ", ".join(words) in content
    empty = Summary.objects.get(document__dataset=explained_dataset, text="")
    errors = client_for(rita).get(inspect_url(empty)).content.decode()
    assert "Error: the summary is empty" in errors


def test_it_shows_judgements_only_from_studies_the_researcher_may_see(
    bertscore_study: Study, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser, ronald: AbstractUser
) -> None:
    assignment = Assignment.objects.filter(item__study_task__study=bertscore_study, annotator=alice).first()
    units = units_of(assignment)
    assignment_submit(assignment=assignment, user=alice, labels={u.index: "incorrect" for u in units})
    url = inspect_url(assignment.item.summary)
    seen = client_for(rita).get(url)
    tables = [t for t in seen.context["inspection"].judgements if not t.imported]
    assert [(t.study_name, t.annotators) for t in tables] == [("Small study", ["alice"])]
    assert len(tables[0].rows) == len(units) and all(labels == ["incorrect"] for _, labels in tables[0].rows)
    assert f"{units[0].index}: {units[0].text}" in seen.content.decode()
    unseen = client_for(ronald).get(url)
    assert [t for t in unseen.context["inspection"].judgements if not t.imported] == []


def test_it_compares_two_summaries_of_a_document(explained_dataset: Dataset, rita: AbstractUser) -> None:
    gold = summary_of(explained_dataset, "oldest", "Gold")
    model = summary_of(explained_dataset, "oldest", "ModelA")
    response = client_for(rita).get(compare_url(gold.pk, model.pk))
    content = response.content.decode()
    comparison = response.context["comparison"]
    assert script_state(content, "a")["summary"] == gold.text
    assert script_state(content, "b")["summary"] == model.text
    assert content.count('id="document-text"') == 1
    metrics = [metric for metric, _, _, _ in comparison.panels]
    assert metrics == ["bertscore", "qags_cloze", "entailment", "similarity", "entities", "abstractiveness"]
    assert all(a is not None and b is not None for _, _, a, b in comparison.panels)
    bertscore = {e.summary_id: e.score for e in Explanation.objects.filter(metric="bertscore")}
    row = next(r for r in comparison.scores if r.name == "BERTScore")
    assert row.delta == pytest.approx(bertscore[model.pk] - bertscore[gold.pk])
    human = next(r for r in comparison.scores if r.name == "Faithful")
    assert human.delta == pytest.approx(0.4 - 1.0)
    # The inspector offers the document's other summaries to compare with.
    inspector = client_for(rita).get(inspect_url(gold)).content.decode()
    assert escape(compare_url(gold.pk, model.pk)) in inspector


def test_it_links_the_inspector_from_the_analysis_pages(explained_dataset: Dataset, rita: AbstractUser) -> None:
    client = client_for(rita)
    response = client.get(reverse("dataset_analysis", args=[explained_dataset.pk]))
    agreements = response.context["agreements"]
    entry = next(entry for overview in agreements for entry in overview.tables.items)
    assert entry.summary_id is not None
    assert inspect_url(Summary.objects.get(pk=entry.summary_id)) in response.content.decode()
    item = client.get(reverse("analysis_item", args=[entry.item_id])).content.decode()
    assert inspect_url(Summary.objects.get(pk=entry.summary_id)) in item


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(url)
    assert response.status_code == 200
    return len(context.captured_queries)


def judged_study(dataset: Dataset, tasks: list[str], annotators: list[AbstractUser], researcher: AbstractUser) -> None:
    """A study over the dataset whose annotators submit every item of the "oldest" document."""
    study = study_create(
        spec=StudySpec(
            name=f"{len(annotators)} annotators",
            dataset=dataset,
            tasks=tasks,
            annotators=annotators,
            annotators_per_item=len(annotators),
            created_by=researcher,
        )
    ).study
    for assignment in Assignment.objects.filter(
        item__study_task__study=study, item__summary__document__external_id="oldest"
    ).select_related("item__study_task"):
        task = assignment.item.study_task.task
        labels = {u.index: "correct" if task == "bertscore" else "yes" for u in units_of(assignment)}
        assignment_submit(assignment=assignment, user=assignment.annotator, labels=labels)


def test_it_keeps_the_inspector_query_count_flat(
    explained_dataset: Dataset, alice: AbstractUser, bob: AbstractUser, rita: AbstractUser
) -> None:
    client = client_for(rita)
    summary = summary_of(explained_dataset, "oldest", "ModelA")
    gold = summary_of(explained_dataset, "oldest", "Gold")
    judged_study(explained_dataset, ["bertscore"], [alice], rita)
    assert queries(client, inspect_url(summary)) == 10
    assert queries(client, compare_url(gold.pk, summary.pk)) == 17
    # More explanations (another configuration), more studies, tasks, annotators and judgements.
    explanation_create(summary, "qags_cloze", qags_payload(summary, [("Who died?", "person", "Emma Morano")]))
    judged_study(explained_dataset, ["bertscore", "factuality"], [alice, bob], rita)
    inspection = client.get(inspect_url(summary)).context["inspection"]
    assert len([t for t in inspection.judgements if not t.imported]) == 3
    assert len(inspection.explanations) == Explanation.objects.filter(summary=summary).count() == 7
    assert queries(client, inspect_url(summary)) == 10
    assert queries(client, compare_url(gold.pk, summary.pk)) == 17
