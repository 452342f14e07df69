"""Analysis pages and the new study's controversial selection start with the dataset's primary human score,
never the alphabetically first one."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from corpus.models import Dataset, HumanScore, Summary
from corpus.selectors import primary_human_score
from studies.models import Study
from tests.conftest import client_for


def test_it_prefers_a_score_named_like_the_faithfulness_judgement_then_the_one_with_most_values() -> None:
    assert primary_human_score({"CircE": 10, "Factuality": 3}) == "Factuality"
    assert primary_human_score({"Faithful": 10, "Factuality": 3}) == "Factuality"
    assert primary_human_score({"Apples": 2, "Bananas": 5}) == "Bananas"
    assert primary_human_score({}) is None
    assert primary_human_score({"CircE": 10, "Factuality": 3}, "CircE") == "CircE"
    assert primary_human_score({"CircE": 10, "Factuality": 3}, "Gone") == "Factuality"


def circe_everywhere_factuality_on_three(dataset: Dataset) -> None:
    """FRANK's situation: CircE has the most values and comes first by name; Factuality is the judgement."""
    summaries = list(Summary.objects.filter(document__dataset=dataset))
    HumanScore.objects.filter(summary__in=summaries).delete()
    HumanScore.objects.bulk_create(
        [HumanScore(summary=summary, name="CircE", value=0.5) for summary in summaries]
        + [HumanScore(summary=summary, name="Factuality", value=1.0) for summary in summaries[:3]]
    )


@pytest.mark.django_db
def test_it_starts_every_analysis_dropdown_with_factuality_not_circe(
    small_dataset: Dataset, rita: AbstractUser
) -> None:
    circe_everywhere_factuality_on_three(small_dataset)
    client = client_for(rita)

    page = client.get(reverse("dataset_analysis", args=[small_dataset.pk]))
    assert page.context["humans"] == ["CircE", "Factuality"] and page.context["human"] == "Factuality"
    assert "<option selected>Factuality</option>" in page.content.decode()

    study = Study.objects.filter(dataset=small_dataset).first()
    assert study is not None
    study.researchers.add(rita)
    study_page = client.get(reverse("study_analysis", args=[study.pk]))
    assert study_page.status_code == 200 and study_page.context["human"] == "Factuality"

    api = client.get(reverse("api_correlations", args=[small_dataset.pk]))
    assert api.status_code == 200, api.content
    assert {row["human"] for row in api.json()} == {"Factuality"}

    small_dataset.primary_human_score = "CircE"  # the researcher's own choice wins
    small_dataset.save(update_fields=["primary_human_score"])
    assert client.get(reverse("dataset_analysis", args=[small_dataset.pk])).context["human"] == "CircE"


@pytest.mark.django_db
def test_it_starts_the_new_studys_controversial_selection_with_the_primary_human_score(
    small_dataset: Dataset, rita: AbstractUser
) -> None:
    circe_everywhere_factuality_on_three(small_dataset)
    client = client_for(rita)
    form = client.get(reverse("study_new") + f"?dataset={small_dataset.pk}").content.decode()
    assert '<option value="Factuality" selected>Factuality (3 summaries)</option>' in form
    assert '<option value="CircE">CircE' in form
    small_dataset.primary_human_score = "CircE"
    small_dataset.save(update_fields=["primary_human_score"])
    form = client.get(reverse("study_new") + f"?dataset={small_dataset.pk}").content.decode()
    assert '<option value="CircE" selected>' in form
