"""Task definitions without a database: units, FEQA's decision tree, span and edit checks, minimal edits."""

from __future__ import annotations

import pytest

from protocols.minimal_edit import MAX_CHANGED_WORDS, edit_diff
from protocols.tasks import (
    BUMP_ERROR_TYPES,
    STUDY_TASKS,
    TASKS,
    Submission,
    SubmissionError,
    get_task,
    word_spans,
)
from stats.selection import controversy_ranking, percentile_ranks

SUMMARY = "Emma Morano died in Italy. She was 117."
SENTENCES = [[0, 26], [27, 39]]


def feqa_units() -> list:
    return get_task("feqa").units(summary_text=SUMMARY, summary_sentences=SENTENCES)


def test_it_offers_every_protocol_as_a_study_task_with_its_own_view() -> None:
    views = {TASKS[key].view for key in STUDY_TASKS}
    assert {"words", "qgqa", "entailment", "sentences", "spans", "edit"} == views
    assert {"bertscore", "qgqa", "entailment", "sentence_consistency", "feqa", "hallucination_spans", "bump"} <= set(
        STUDY_TASKS
    )
    for key in STUDY_TASKS:
        task = TASKS[key]
        assert task.steps, f"{key} lists no numbered steps"
        units = task.units(summary_text=SUMMARY, summary_sentences=SENTENCES) if not task.explanation_metric else []
        for choices in [task.choices_for(unit) for unit in units] or [task.choices]:
            keys = [choice.key for choice in choices if choice.key]
            assert len(set(keys)) == len(keys), f"{key}: two choices share a shortcut"


def test_it_cuts_feqa_into_four_questions_per_sentence_that_appear_only_when_they_apply() -> None:
    task = get_task("feqa")
    units = feqa_units()
    assert [u.index for u in units] == list(range(8))
    assert units[4].text == "She was 117." and units[4].requires is None
    assert units[5].requires == (4, ("meaningful",)) and units[7].requires == (6, ("unfaithful",))
    asked = lambda labels: [u.index for u in task.applicable(units, labels)]  # noqa: E731
    assert asked({}) == [0, 4]
    assert asked({0: "nonsensical", 4: "meaningful"}) == [0, 4, 5, 6]
    assert asked({0: "meaningful", 2: "unfaithful", 4: "meaningful", 6: "faithful"}) == [0, 1, 2, 3, 4, 5, 6]
    # the hallucination/contradiction question needs the faithfulness question to be asked at all
    assert asked({0: "nonsensical", 2: "unfaithful"}) == [0, 4]


def test_it_accepts_a_complete_feqa_path_and_names_what_is_missing_or_does_not_apply() -> None:
    task = get_task("feqa")
    units = feqa_units()
    labels = {0: "meaningful", 1: "grammatical", 2: "unfaithful", 3: "contradiction", 4: "nonsensical"}
    cleaned = task.clean(Submission(labels=labels), units=units, summary_text=SUMMARY)
    assert [(j.unit_index, j.label) for j in cleaned] == sorted(labels.items())

    with pytest.raises(SubmissionError) as missing:
        task.clean(Submission(labels={0: "meaningful", 4: "nonsensical"}), units=units, summary_text=SUMMARY)
    assert missing.value.messages == ["2 unit(s) still need a label."]

    with pytest.raises(SubmissionError) as extra:
        task.clean(Submission(labels={**labels, 5: "grammatical"}), units=units, summary_text=SUMMARY)
    assert "unit 5 does not apply: it is asked only when unit 4 is 'meaningful'" in extra.value.messages

    with pytest.raises(SubmissionError) as wrong_question:
        task.clean(Submission(labels={**labels, 1: "faithful"}), units=units, summary_text=SUMMARY)
    assert "'faithful' is not a choice of task 'feqa' for unit 1 (choices: grammatical, minor_problems)" in (
        wrong_question.value.messages
    )


def test_it_requires_an_explanation_per_sentence_in_the_qags_protocol() -> None:
    task = get_task("sentence_consistency")
    units = task.units(summary_text=SUMMARY, summary_sentences=SENTENCES)
    assert [u.text for u in units] == ["Emma Morano died in Italy.", "She was 117."]
    with pytest.raises(SubmissionError) as error:
        task.clean(Submission(labels={0: "yes", 1: "no"}, notes={0: "line 1"}), units=units, summary_text=SUMMARY)
    assert "unit(s) 1 need a short explanation" in error.value.messages[0]
    cleaned = task.clean(
        Submission(labels={0: "yes", 1: "no"}, notes={0: " line 1 ", 1: "the age is not given"}),
        units=units,
        summary_text=SUMMARY,
    )
    assert [(j.label, j.note) for j in cleaned] == [("yes", "line 1"), ("no", "the age is not given")]


def test_it_refuses_parts_a_task_does_not_take() -> None:
    units = get_task("bertscore").units(summary_text=SUMMARY)
    with pytest.raises(SubmissionError) as error:
        get_task("bertscore").clean(Submission(edit={"text": "x", "label": "freestyle"}), units=units, summary_text="")
    assert "task 'bertscore' takes no edit" in error.value.messages
    with pytest.raises(SubmissionError) as error:
        get_task("hallucination_spans").clean(Submission(labels={0: "intrinsic"}), units=[], summary_text=SUMMARY)
    assert "task 'hallucination_spans' takes no labels" in error.value.messages


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        ([{"start": 30, "end": 45, "label": "extrinsic"}], "span 1 (30-45) lies outside the summary (characters 0-39)"),
        ([{"start": -1, "end": 4, "label": "extrinsic"}], "span 1 (-1-4) lies outside the summary"),
        ([{"start": 8, "end": 8, "label": "extrinsic"}], "span 1 (8-8): start must be before end"),
        ([{"start": 9, "end": 4, "label": "intrinsic"}], "span 1 (9-4): start must be before end"),
        ([{"start": 4, "end": 5, "label": "intrinsic"}], "span 1 (4-5) marks only white space"),
        ([{"start": 0, "end": 4, "label": "correct"}], "span 1: 'correct' is not a choice of task"),
        ([{"start": "0", "end": 4, "label": "intrinsic"}], "span 1: start and end must be whole numbers"),
        (
            [{"start": 20, "end": 25, "label": "extrinsic"}, {"start": 0, "end": 22, "label": "intrinsic"}],
            "spans 1 (20-25) and 2 (0-22) overlap",
        ),
    ],
)
def test_it_refuses_spans_outside_empty_or_overlapping(spans: list, message: str) -> None:
    with pytest.raises(SubmissionError) as error:
        get_task("hallucination_spans").clean(Submission(spans=spans), units=[], summary_text=SUMMARY)
    assert any(message in line for line in error.value.messages), error.value.messages


def test_it_stores_spans_in_text_order_with_their_text() -> None:
    spans = [{"start": 20, "end": 25, "label": "extrinsic"}, {"start": 0, "end": 11, "label": "intrinsic"}]
    cleaned = get_task("hallucination_spans").clean(Submission(spans=spans), units=[], summary_text=SUMMARY)
    assert [(j.unit_index, j.unit_text, j.label, j.start, j.end) for j in cleaned] == [
        (0, "Emma Morano", "intrinsic", 0, 11),
        (1, "Italy", "extrinsic", 20, 25),
    ]
    assert get_task("hallucination_spans").clean(Submission(spans=[]), units=[], summary_text=SUMMARY) == []
    assert word_spans("Hi, you.") == [[0, 2], [2, 3], [4, 7], [7, 8]]


def test_it_checks_a_bump_edit_against_the_requested_error_type() -> None:
    task = get_task("bump")
    params = {"error_type": "intrinsic_entity"}
    units = task.units(summary_text=SUMMARY, params=params)
    assert units[0].prompt == "Introduce exactly one intrinsic entity error by a minimal edit."
    edited = SUMMARY.replace("Italy", "Piedmont")
    (judgement,) = task.clean(
        Submission(edit={"text": edited, "label": "intrinsic_entity"}), units=units, summary_text=SUMMARY, params=params
    )
    assert judgement.label == "intrinsic_entity" and judgement.unit_text == edited
    assert judgement.data["reference"] == SUMMARY and judgement.data["requested_type"] == "intrinsic_entity"
    assert judgement.data["diff"]["changes"][0]["old"] == "Italy" and judgement.data["diff"]["warnings"] == []

    for edit, message in [
        ({"text": edited, "label": "extrinsic_entity"}, "'extrinsic_entity' is not allowed here"),
        ({"text": SUMMARY + "  ", "label": "intrinsic_entity"}, "the summary is unchanged"),
        ({"text": SUMMARY, "label": "not_possible"}, "say in the note why"),
        ({"label": "intrinsic_entity"}, "give an object with the edited summary as 'text'"),
    ]:
        with pytest.raises(SubmissionError) as error:
            task.clean(Submission(edit=edit), units=units, summary_text=SUMMARY, params=params)
        assert any(message in line for line in error.value.messages), (edit, error.value.messages)
    (impossible,) = task.clean(
        Submission(edit={"text": SUMMARY, "label": "not_possible", "note": "no second entity"}),
        units=units,
        summary_text=SUMMARY,
        params=params,
    )
    assert impossible.label == "not_possible" and impossible.note == "no second entity"
    freestyle = task.units(summary_text=SUMMARY, params={})
    assert freestyle[0].extra["error_type"] == "freestyle"
    (free,) = task.clean(Submission(edit={"text": edited, "label": "freestyle"}), units=freestyle, summary_text=SUMMARY)
    assert free.data["requested_type"] == "freestyle"
    assert len(BUMP_ERROR_TYPES) == 7


def test_it_warns_when_an_edit_is_not_minimal() -> None:
    reference = "St Louis was hit on Tuesday by flash floods. A nearby town had more than two inches of rain."
    one_word = edit_diff(reference, reference.replace("Tuesday", "Friday"))
    assert (one_word.changed_words, len(one_word.changes), one_word.warnings) == (1, 1, [])
    assert (one_word.changes[0].old, one_word.changes[0].new) == ("Tuesday", "Friday")
    nearby = edit_diff(reference, reference.replace("was hit on", "got struck at"))
    assert len(nearby.changes) == 1  # adjacent words form one place
    two_places = edit_diff(reference, reference.replace("Tuesday", "Friday").replace("rain", "snow"))
    assert len(two_places.changes) == 2 and "changes 2 places" in two_places.warnings[0]
    rewrite = edit_diff(reference, "Heavy storms caused chaos across the Midwest, officials said on Friday.")
    assert rewrite.changed_words > MAX_CHANGED_WORDS
    assert any("a minimal edit changes a few" in warning for warning in rewrite.warnings)
    assert edit_diff(reference, reference.replace(" ", "  ")).unchanged
    insertion = edit_diff("A bridge closed.", "A bridge never closed.")
    assert (insertion.changes[0].old, insertion.changes[0].new, insertion.changes[0].words) == ("", "never", 1)


def test_it_ranks_items_by_how_much_human_and_metric_ranks_disagree() -> None:
    human = {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.7}
    metric = {"a": 0.2, "b": 0.95, "c": 0.5, "d": 0.75, "e": 0.3}
    ranking = controversy_ranking(human=human, metrics={"m": metric})
    assert [entry.key for entry in ranking] == ["a", "b", "c", "d"]  # "e" has no human score
    assert ranking[0].score == pytest.approx(1.0) and ranking[-1].score == pytest.approx(0.0)
    assert list(percentile_ranks([3.0, 1.0, 1.0])) == [1.0, 0.25, 0.25]
    with pytest.raises(ValueError, match="at least one metric"):
        controversy_ranking(human=human, metrics={})
