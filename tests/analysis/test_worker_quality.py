"""The worker quality page and its actions (issue 14, points 7-10): exclusion leaves work out of every
analysis and export by default (and back with ?judgements=all), reviews and bonuses feed the payment files,
and the live progress counts accepted work."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from analysis.selectors.analysis import agreement_overview
from corpus.models import Dataset
from review.selectors.quality import study_payments, study_quality
from studies.models import Assignment, Participation, PaymentRules, Study, StudyItem
from studies.selectors.participation import ALL
from studies.services.participation import (
    participation_act,
    participation_bonus_set,
    participation_get_or_create,
)
from studies.services.payments import payment_rules_set
from studies.services.studies import StudySpec, assignment_submit, study_create
from tests.api.conftest import api_client_for
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def _csv(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _exclude(study: Study, who: AbstractUser, by: AbstractUser, reason: str = "failed checks") -> None:
    participation_act(study=study, annotator=who, action="exclude", reason=reason, by=by)


# --- the page ---------------------------------------------------------------------------------------


def test_it_lists_every_worker_with_quality_flags_and_standing(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    response = client_for(rita).get(reverse("study_quality", args=[crowd_study.pk]), {"min_seconds": "5"})
    assert response.status_code == 200
    quality = response.context["quality"]
    rows = {row.username: row for row in quality.workers}
    assert set(rows) == {"alice", "bob", "carol"}
    assert rows["carol"].done == 2 and rows["carol"].median_seconds == 2
    assert rows["carol"].fast_items == 2 and rows["alice"].fast_items == 0
    assert rows["carol"].agreement_with_majority == 0 and rows["alice"].agreement_with_majority == 1
    assert quality.method_used == "one_coin_dawid_skene"
    assert rows["carol"].competence < rows["alice"].competence
    assert quality.workers[0].username == "carol"  # the least competent first
    assert rows["alice"].checks_graded is None and rows["alice"].pasted_items is None  # not stored: "—"
    page = response.content.decode()
    assert "2 fast of 2" in page and "failed checks: —" in page
    assert (
        f'href="{reverse("study_quality", args=[crowd_study.pk])}"'
        in client_for(rita).get(reverse("study_detail", args=[crowd_study.pk])).content.decode()
    )


def test_it_computes_competence_with_the_chosen_model_and_refuses_an_unknown_one(
    crowd_study: Study, rita: AbstractUser
) -> None:
    url = reverse("study_quality", args=[crowd_study.pk])
    assert client_for(rita).get(url, {"method": "mace"}).context["quality"].method_used == "mace"
    refused = client_for(rita).get(url, {"method": "coin_toss", "min_seconds": "nan"})
    assert refused.status_code == 400 and "method must be one of" in refused.content.decode()
    assert client_for(rita).get(url, {"min_seconds": "inf"}).status_code == 400
    assert client_for(rita).get(url, {"active_minutes": "99999999"}).status_code == 400


def test_it_shows_the_page_and_its_actions_to_the_studys_researchers_only(
    crowd_study: Study, alice: AbstractUser, carol: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> None:
    url = reverse("study_quality", args=[crowd_study.pk])
    assert client_for(ronald).get(url).status_code == 404
    assert client_for(alice).get(url).status_code == 403
    assert client_for(admin_user).get(url).status_code == 200
    action = reverse("study_quality_action", args=[crowd_study.pk, carol.pk, "exclude"])
    assert client_for(ronald).post(action, {"reason": "mine now"}).status_code == 404
    assert client_for(alice).post(action, {"reason": "mine now"}).status_code == 403
    assert not Participation.objects.filter(excluded=True).exists()
    assert client_for(ronald).get(reverse("study_payment_file", args=[crowd_study.pk, "mturk"])).status_code == 404


def test_it_refuses_a_forged_annotator_of_another_study(
    crowd_study: Study, small_dataset: Dataset, rita: AbstractUser, ronald: AbstractUser, admin_user: AbstractUser
) -> None:
    from tests.conftest import make_user

    outsider = make_user("dave", "annotator")
    study_create(
        spec=StudySpec(
            name="Ronald's",
            dataset=small_dataset,
            tasks=["factuality"],
            annotators=[outsider],
            annotators_per_item=1,
            created_by=ronald,
        )
    )
    for action in ("exclude", "approve", "bonus"):
        url = reverse("study_quality_action", args=[crowd_study.pk, outsider.pk, action])
        assert client_for(rita).post(url, {"reason": "x", "amount": "1"}).status_code == 404
    assert (
        client_for(rita).post(reverse("study_quality_action", args=[crowd_study.pk, 2**40, "approve"])).status_code
        == 404
    )
    assert not Participation.objects.filter(annotator=outsider).exists()


def test_it_excludes_with_a_reason_and_reinstates_idempotently(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    client = client_for(rita)
    exclude = reverse("study_quality_action", args=[crowd_study.pk, carol.pk, "exclude"])
    refused = client.post(exclude, {"reason": "bad\x00reason"}, follow=True)
    assert "NUL" in refused.content.decode() and not Participation.objects.filter(excluded=True).exists()
    assert "Say why" in client.post(exclude, {"reason": "  "}, follow=True).content.decode()
    client.post(exclude, {"reason": "failed two checks"})
    first = Participation.objects.get(study=crowd_study, annotator=carol)
    client.post(exclude, {"reason": "failed two checks"})  # replayed
    again = Participation.objects.get(study=crowd_study, annotator=carol)
    assert again.excluded and again.excluded_reason == "failed two checks" and again.excluded_at == first.excluded_at
    assert again.excluded_by == rita
    reinstate = reverse("study_quality_action", args=[crowd_study.pk, carol.pk, "reinstate"])
    client.post(reinstate)
    client.post(reinstate)
    assert not Participation.objects.get(study=crowd_study, annotator=carol).excluded
    unknown = client.post(reverse("study_quality_action", args=[crowd_study.pk, carol.pk, "promote"]), follow=True)
    assert "Unknown action" in unknown.content.decode()


@pytest.mark.parametrize(
    "amount",
    ["nan", "NaN", "inf", "-1", "-0.01", "1e3", "1000.01", "99999999999999999999", "1.234", "", "1,50", "0x10", None],
)
def test_it_refuses_a_bonus_that_is_no_amount(
    crowd_study: Study, alice: AbstractUser, amount: str | None, rita: AbstractUser
) -> None:
    with pytest.raises(ValidationError) as caught:
        participation_bonus_set(study=crowd_study, annotator=alice, amount=amount)
    assert "amount" in caught.value.message_dict
    url = reverse("study_quality_action", args=[crowd_study.pk, alice.pk, "bonus"])
    client_for(rita).post(url, {} if amount is None else {"amount": amount})
    assert not Participation.objects.filter(bonus__gt=0).exists()


def test_it_sets_a_bonus_as_an_exact_decimal_and_replays_it(
    crowd_study: Study, alice: AbstractUser, rita: AbstractUser
) -> None:
    url = reverse("study_quality_action", args=[crowd_study.pk, alice.pk, "bonus"])
    client_for(rita).post(url, {"amount": "0.30"})
    client_for(rita).post(url, {"amount": "0.30"})
    assert Participation.objects.get(study=crowd_study, annotator=alice).bonus == Decimal("0.30")
    assert participation_bonus_set(study=crowd_study, annotator=alice, amount=0.1).bonus == Decimal("0.10")


# --- accepted work only, everywhere ---------------------------------------------------------------


def test_it_leaves_excluded_work_out_of_the_agreement_by_default_and_says_so(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    task = crowd_study.tasks.get()
    before = agreement_overview(study_task=task)
    _exclude(crowd_study, carol, rita)
    accepted = agreement_overview(study_task=task)
    everything = agreement_overview(study_task=task, judgements=ALL)
    assert {row.annotator for row in accepted.tables.annotators} == {"alice", "bob"}
    assert accepted.judgements == "accepted" and everything.judgements == "all"
    assert {row.annotator for row in everything.tables.annotators} == {
        row.annotator for row in before.tables.annotators
    }
    api = api_client_for(rita)
    url = reverse("api_study_agreement", args=[crowd_study.pk])
    default, all_rows = api.get(url).json(), api.get(url, {"judgements": "all"}).json()
    assert default[0]["judgements"] == "accepted" and {a["annotator"] for a in default[0]["annotators"]} == {
        "alice",
        "bob",
    }
    assert all_rows[0]["judgements"] == "all" and "carol" in {a["annotator"] for a in all_rows[0]["annotators"]}
    assert api.get(url, {"judgements": "some"}).status_code == 400
    page = client_for(rita).get(reverse("study_analysis", args=[crowd_study.pk])).content.decode()
    assert "accepted work only" in page and "1 excluded annotator left out" in page
    page_all = client_for(rita).get(reverse("study_analysis", args=[crowd_study.pk]), {"judgements": "all"})
    assert 'data-judgements="all"' in page_all.content.decode()
    detail = client_for(rita).get(reverse("study_detail", args=[crowd_study.pk]))
    glance = {row["progress"].username: row["agreement"] for row in detail.context["annotators"]}
    assert set(glance) == {"alice", "bob", "carol"} and glance["carol"] is None  # listed, its labels not counted
    assert detail.context["judgements"] == "accepted"
    assert "(excluded: not counted)" in detail.content.decode()


def test_it_exports_platform_worker_id_and_exclusion_and_accepted_work_by_default(
    crowd_study: Study, rita: AbstractUser, alice: AbstractUser, carol: AbstractUser, tmp_path: Any
) -> None:
    participation_get_or_create(study=crowd_study, annotator=alice, platform="prolific", external_id="=HYPERLINK(1)")
    _exclude(crowd_study, carol, rita)
    client = client_for(rita)
    response = client.get(reverse("study_export", args=[crowd_study.pk, "csv"]))
    assert response["X-FaithAnno-Judgements"] == "accepted"
    rows = _csv(response)
    assert {row["annotator"] for row in rows} == {"alice", "bob"}
    alice_row = next(row for row in rows if row["annotator"] == "alice")
    assert alice_row["annotator_platform"] == "prolific" and alice_row["worker_id"] == "'=HYPERLINK(1)"
    assert next(row for row in rows if row["annotator"] == "bob")["annotator_platform"] == "internal"
    everything = client.get(reverse("study_export", args=[crowd_study.pk, "csv"]), {"judgements": "all"})
    assert everything["X-FaithAnno-Judgements"] == "all" and "-all.csv" in everything["Content-Disposition"]
    carol_rows = [row for row in _csv(everything) if row["annotator"] == "carol"]
    assert carol_rows and all(row["excluded"] == "True" for row in carol_rows)
    api = api_client_for(rita).get(
        reverse("api_study_judgements_export", args=[crowd_study.pk, "parquet"]), {"judgements": "all"}
    )
    path = tmp_path / "all.parquet"
    path.write_bytes(b"".join(api.streaming_content))
    table = pq.read_table(path)
    assert table.schema.metadata[b"judgements"] == b"all"
    assert str(table.schema.field("excluded").type) == "bool" and str(table.schema.field("worker_id").type) == "string"
    flags = zip(table["annotator"].to_pylist(), table["excluded"].to_pylist(), strict=True)
    assert dict(flags) == {"alice": False, "bob": False, "carol": True}


def test_the_commands_use_accepted_work_unless_told_and_say_which(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser, tmp_path: Any
) -> None:
    _exclude(crowd_study, carol, rita)
    out = io.StringIO()
    call_command("agreement", study=crowd_study.pk, json=True, stdout=out)
    data = json.loads(out.getvalue().splitlines()[0])
    assert data["judgements"] == "accepted"
    out_text = io.StringIO()
    call_command("agreement", study=crowd_study.pk, stdout=out_text)
    assert "Judgements: accepted work only (excluded annotators left out)." in out_text.getvalue()
    out_all = io.StringIO()
    call_command("agreement", study=crowd_study.pk, all_judgements=True, stdout=out_all)
    assert "Judgements: all judgements" in out_all.getvalue()
    path = tmp_path / "j.parquet"
    call_command("export_judgements", study=crowd_study.pk, format_name="parquet", output=path)
    table = pq.read_table(path)
    assert table.schema.metadata[b"judgements"] == b"accepted" and "carol" not in table["annotator"].to_pylist()
    call_command("export_judgements", study=crowd_study.pk, format_name="parquet", output=path, all_judgements=True)
    assert "carol" in pq.read_table(path)["annotator"].to_pylist()


# --- payments ----------------------------------------------------------------------------------------


def test_it_computes_payments_from_the_rules_and_writes_the_platform_files(
    crowd_study: Study, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser
) -> None:
    participation_get_or_create(study=crowd_study, annotator=alice, platform="prolific", external_id="5f1a")
    participation_get_or_create(study=crowd_study, annotator=bob, platform="prolific", external_id="5f2b")
    participation_get_or_create(study=crowd_study, annotator=carol, platform="mturk", external_id="A1CAROL")
    client = client_for(rita)
    client.post(
        reverse("study_payment_rules", args=[crowd_study.pk]),
        {
            "per_item": "0.10",
            "per_accepted_item": "0.05",
            "gold_bonus": "1.00",
            "gold_min_percent": "80",
            "currency": "GBP",
        },
    )
    for who, action, extra in ((alice, "approve", {}), (bob, "reject", {}), (carol, "reject", {})):
        client.post(reverse("study_quality_action", args=[crowd_study.pk, who.pk, action]), extra)
    client.post(reverse("study_quality_action", args=[crowd_study.pk, alice.pk, "bonus"]), {"amount": "0.25"})
    _exclude(crowd_study, carol, rita, reason="=cmd|' /C calc'!A0")
    payments = {row.work.worker: row for row in study_payments(study=crowd_study).rows}
    # alice: 2 items x (0.10 + 0.05) + 0.25 bonus; no gold bonus without check outcomes.
    assert payments["alice"].total == Decimal("0.55") and payments["alice"].gold_reason == "no graded check items"
    assert payments["bob"].total == Decimal("0.20") and payments["carol"].total == Decimal("0.20")
    files = {
        name: client.get(reverse("study_payment_file", args=[crowd_study.pk, name])).content.decode()
        for name in ("prolific-approve", "prolific-reject", "prolific-bonus", "mturk")
    }
    assert files["prolific-approve"] == "5f1a\n"
    assert files["prolific-reject"] == "5f2b\n"
    assert files["prolific-bonus"] == "5f1a,0.55\n5f2b,0.20\n"
    mturk = list(csv.DictReader(io.StringIO(files["mturk"])))
    assert mturk == [
        {"WorkerId": "A1CAROL", "AssignmentId": "", "Approve": "", "Reject": "'=cmd|' /C calc'!A0", "Bonus": "0.20"}
    ]
    assert client.get(reverse("study_payment_file", args=[crowd_study.pk, "paypal"])).status_code == 404
    quality = client.get(reverse("study_quality", args=[crowd_study.pk])).context["quality"]
    assert quality.live.cost == Decimal("0.95") and quality.live.currency == "GBP"


@pytest.mark.parametrize("hostile_id", ['=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1)", "a,b", "\t=1"])
def test_it_leaves_a_worker_id_a_spreadsheet_would_run_out_of_every_payment_file_and_lists_it(
    crowd_study: Study, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser, carol: AbstractUser, hostile_id: str
) -> None:
    # Such an id never arrives by the public link (crowd.services.workers.WORKER_ID); it may come from an
    # imported dataset, a bundle or the admin. Neutralised (a leading ') it would name another worker.
    participation_get_or_create(study=crowd_study, annotator=alice, platform="prolific", external_id="5f1a")
    participation_get_or_create(study=crowd_study, annotator=bob, platform="prolific", external_id=hostile_id)
    participation_get_or_create(study=crowd_study, annotator=carol, platform="mturk", external_id=hostile_id)
    payment_rules_set(
        study=crowd_study,
        per_item="0.10",
        per_accepted_item="0",
        gold_bonus="0",
        gold_min_percent=100,
        currency="GBP",
        by=rita,
    )
    client = client_for(rita)
    for who in (alice, bob, carol):
        client.post(reverse("study_quality_action", args=[crowd_study.pk, who.pk, "approve"]))
    for name in ("prolific-approve", "prolific-reject", "prolific-bonus", "mturk"):
        response = client.get(reverse("study_payment_file", args=[crowd_study.pk, name]))
        body = response.content.decode()
        assert response.status_code == 200 and response["X-FaithAnno-Left-Out"] == "2"
        assert hostile_id not in body and "'" not in body
    approve = client.get(reverse("study_payment_file", args=[crowd_study.pk, "prolific-approve"]))
    assert approve.content.decode() == "5f1a\n"
    bonus = client.get(reverse("study_payment_file", args=[crowd_study.pk, "prolific-bonus"]))
    assert bonus.content.decode() == "5f1a,0.20\n"
    mturk = client.get(reverse("study_payment_file", args=[crowd_study.pk, "mturk"])).content.decode()
    assert mturk.splitlines() == ["WorkerId,AssignmentId,Approve,Reject,Bonus"]
    api = api_client_for(rita).get(reverse("api_study_payment_file", args=[crowd_study.pk, "prolific-bonus"]))
    assert api.content.decode() == "5f1a,0.20\n" and api["X-FaithAnno-Left-Out"] == "2"
    page = client.get(reverse("study_quality", args=[crowd_study.pk]))
    assert page.context["quality"].payment_ids_left_out == [hostile_id, hostile_id]
    assert 'id="payment-ids-left-out"' in page.content.decode()
    assert study_payments(study=crowd_study).left_out == [hostile_id, hostile_id]


@pytest.mark.parametrize(
    ("field", "value"),
    [("per_item", "nan"), ("per_item", "-0.10"), ("per_item", "100.01"), ("gold_bonus", "1e2"),
     ("gold_min_percent", "101"), ("currency", "pounds"), ("per_accepted_item", "0.001")],
)  # fmt: skip
def test_it_refuses_bad_payment_rules_and_changes_nothing(
    crowd_study: Study, rita: AbstractUser, field: str, value: str
) -> None:
    rules = {
        "per_item": "0.10",
        "per_accepted_item": "0",
        "gold_bonus": "0",
        "gold_min_percent": "100",
        "currency": "GBP",
    }
    with pytest.raises(ValidationError) as caught:
        payment_rules_set(study=crowd_study, by=rita, **{**rules, field: value})
    assert field in caught.value.message_dict
    page = client_for(rita).post(
        reverse("study_payment_rules", args=[crowd_study.pk]), {**rules, field: value}, follow=True
    )
    assert f"Payment rules, {field}" in page.content.decode()
    assert not PaymentRules.objects.exists()


# --- live progress ----------------------------------------------------------------------------------


def test_it_projects_completion_from_recent_throughput_over_accepted_work(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    items = StudyItem.objects.filter(study_task__study=crowd_study).count()
    now = timezone.now()
    live = study_quality(study=crowd_study, now=now).live
    assert live.items == items and live.items_at_k == 2 and live.judgements_to_k == (items - 2) * 3
    assert live.active_now == 3 and live.per_hour == 6
    assert live.projected_completion == now + timedelta(hours=live.judgements_to_k / 6)
    assert live.median_seconds == 30
    _exclude(crowd_study, carol, rita)
    after = study_quality(study=crowd_study, now=now).live
    assert after.items_at_k == 0 and after.judgements_to_k == (items - 2) * 3 + 2
    later = study_quality(study=crowd_study, now=now + timedelta(hours=2)).live
    assert later.active_now == 0 and later.projected_completion is None


# --- query count -------------------------------------------------------------------------------------

QUALITY_PAGE_QUERIES = 17


def test_the_quality_page_runs_a_fixed_number_of_queries(
    crowd_study: Study, rita: AbstractUser, alice: AbstractUser, bob: AbstractUser
) -> None:
    participation_get_or_create(study=crowd_study, annotator=alice, platform="prolific", external_id="p1")
    participation_bonus_set(study=crowd_study, annotator=bob, amount="1.00")
    client = client_for(rita)
    url = reverse("study_quality", args=[crowd_study.pk])
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).status_code == 200
    for assignment in Assignment.objects.filter(item__study_task__study=crowd_study, status="assigned")[:6]:
        assignment_submit(assignment=assignment, user=assignment.annotator, labels={"0": "yes"}, seconds=9)
    with CaptureQueriesContext(connection) as more:
        assert client.get(url).status_code == 200
    assert len(few.captured_queries) == len(more.captured_queries) == QUALITY_PAGE_QUERIES


def test_the_browse_pages_disagreement_leaves_excluded_work_out(
    crowd_study: Study, rita: AbstractUser, carol: AbstractUser
) -> None:
    from django.http import QueryDict

    from analysis.selectors.browse import summaries_browse

    judged = set(
        Assignment.objects.filter(item__study_task__study=crowd_study, status="submitted").values_list(
            "item__summary_id", flat=True
        )
    )

    def disagreement() -> dict[int, float | None]:
        rows = summaries_browse(dataset=crowd_study.dataset, params=QueryDict(""), user=rita)
        return {row.pk: row.disagreement for row in rows if row.pk in judged}

    assert set(disagreement().values()) == {1.0}  # carol said no where alice and bob said yes
    _exclude(crowd_study, carol, rita)
    assert set(disagreement().values()) == {0.0}
