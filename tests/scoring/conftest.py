"""Models for the scoring tests, built once per test process: the packaged sentence embedder and tiny
randomly initialised QG, QA and NLI models saved to a temporary directory (tests/scoring/random_models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scoring.random_models import save_nli_model, save_qa_model, save_qg_model

TINY_QUESTION = "what happened to the person?"


@pytest.fixture(scope="session")
def sentence_embedder() -> Any:
    from scoring.encoders import SentenceEmbedder

    return SentenceEmbedder("packaged:minilm")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths of tiny models: `qg` always asks TINY_QUESTION; `qa` has a zeroed head (first context token,
    or unanswerable with a negative null threshold); `nli` puts 99% on its entailment label, index 2;
    `nli_entailment_first` has the same biased head but names index 0 "entailment"."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "qg": str(save_qg_model(root / "qg", question=TINY_QUESTION)),
        "qa": str(save_qa_model(root / "qa")),
        "nli": str(save_nli_model(root / "nli", favour=2)),
        "nli_entailment_first": str(
            save_nli_model(root / "nli-first", label2id={"entailment": 0, "neutral": 1, "contradiction": 2}, favour=2)
        ),
        "nli_random": str(save_nli_model(root / "nli-random", seed=3)),
        "not_nli": str(save_nli_model(root / "not-nli", label2id={"LABEL_0": 0, "LABEL_1": 1})),
    }


@pytest.fixture
def tiny_model_settings(settings: Any, tiny_models: dict[str, str]) -> dict[str, str]:
    """Settings as in a custom profile whose QG, QA and NLI roles point at the tiny models."""
    settings.FAITHANNO_QG_MODEL = tiny_models["qg"]
    settings.FAITHANNO_QA_MODEL = tiny_models["qa"]
    settings.FAITHANNO_NLI_MODEL = tiny_models["nli_random"]
    return tiny_models


ROOT = Path(__file__).resolve().parent.parent.parent


def database_url() -> str:
    """The URL of the database this test runs against, for processes the test starts (commands, workers)."""
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
