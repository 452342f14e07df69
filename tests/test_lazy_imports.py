"""The web process and every command but scoring start without the model code (torch and friends)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "bert_score", "spacy", "sentence_transformers", "crowdkit", "pandas", "sklearn")
# Modules a page may import that must keep their heavy imports inside the functions that need them.
LAZY = ("stats.crowd_quality", "protocols.attention", "protocols.timing")
# The commands that compute scores load the models by design.
SCORING_COMMANDS = ("score", "demo_setup")

PROBE = """
import importlib, json, sys
import django
django.setup()
from django.core.management import get_commands
from django.urls import get_resolver

def views(patterns):
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            yield from views(pattern.url_patterns)
        else:
            yield pattern.callback.__module__

modules = sorted(set(views(get_resolver().url_patterns)))
for module in [*modules, *LAZY]:
    importlib.import_module(module)
commands = sorted(name for name in get_commands() if name not in SCORING_COMMANDS)
for name in commands:
    importlib.import_module(f"{get_commands()[name]}.management.commands.{name}")
print(json.dumps({"views": modules, "commands": commands, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def test_it_serves_every_page_and_runs_every_other_command_without_importing_torch_or_crowd_kit() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "faithanno.settings"}
    probe = f"SCORING_COMMANDS = {SCORING_COMMANDS!r}\nHEAVY = {HEAVY!r}\nLAZY = {LAZY!r}\n{PROBE}"
    answer = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(answer.stdout.strip().splitlines()[-1])
    assert "api.corpus" in found["views"] and "inspector.views.inspect" in found["views"]
    assert {"agreement", "export_judgements", "import_dataset", "create_study"} <= set(found["commands"])
    assert found["heavy"] == []


def test_it_still_loads_torch_where_scoring_runs() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "faithanno.settings"}
    probe = (
        "import sys, django; django.setup(); import scoring.management.commands.score; print('torch' in sys.modules)"
    )
    answer = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert answer.stdout.strip() == "True"


def test_it_loads_crowd_kit_only_when_labels_are_aggregated_by_a_model() -> None:
    probe = (
        "import sys\n"
        "from stats.crowd_quality import CrowdJudgement, labels_aggregate\n"
        "judgements = [CrowdJudgement(w, 0, l) for w, l in [('a', 'yes'), ('b', 'no'), ('c', 'yes')]]\n"
        "labels_aggregate(judgements=judgements, method='majority')\n"
        "before = 'crowdkit' in sys.modules\n"
        "labels_aggregate(judgements=judgements, method='dawid_skene')\n"
        "print(before, 'crowdkit' in sys.modules, 'transformers' in sys.modules)"
    )
    answer = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "False True False"
