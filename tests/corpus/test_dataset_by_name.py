"""Every command resolves --dataset through corpus.selectors.dataset_by_name: one message for an unknown name."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Dataset
from corpus.selectors import dataset_by_name

pytestmark = pytest.mark.django_db

UNKNOWN = "no such set"

COMMANDS = {
    "agreement": ["--task", "factuality"],
    "correlate": ["--human", "Faithful"],
    "metaeval": ["--protocol", "consistency"],
    "highlighter": [],
    "export_summaries": [],
    "export_judgements": [],
    "export_dataset": [],
    "create_study": ["--name", "s", "--task", "factuality", "--annotators", "alice"],
    "score": ["--metric", "abstractiveness"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_it_names_the_unknown_dataset_and_the_existing_ones_in_every_command(
    command: str, small_dataset: Dataset
) -> None:
    Dataset.objects.create(name="another")
    with pytest.raises(CommandError) as raised:
        call_command(command, "--dataset", UNKNOWN, *COMMANDS[command], stdout=io.StringIO(), stderr=io.StringIO())
    assert str(raised.value) == f"No dataset named {UNKNOWN!r}. Datasets: 'another', {small_dataset.name!r}."


def test_it_returns_the_dataset_of_that_name(small_dataset: Dataset) -> None:
    assert dataset_by_name(name=small_dataset.name) == small_dataset


def test_it_says_there_is_no_dataset_yet(db: None) -> None:
    with pytest.raises(LookupError, match="none yet"):
        dataset_by_name(name="x")
