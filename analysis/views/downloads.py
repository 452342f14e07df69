"""The downloads the web pages and the API both serve: the same rows, the same file names."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import StreamingHttpResponse

from analysis.selectors import exports as export_selectors
from common.views import export_response
from corpus.models import Dataset
from studies.models import Study
from studies.selectors.participation import ACCEPTED, ALL


def judgement_set_metadata(judgements: str) -> dict[str, str]:
    """What a download says about the judgements it holds (header X-FaithAnno-Judgements, Parquet metadata)."""
    return {"judgements": judgements}


def _suffix(judgements: str) -> str:
    return "-all" if judgements == ALL else ""


def summaries_download(
    *, dataset: Dataset, study: Study | None, user: User, format_name: str, judgements: str = ACCEPTED
) -> StreamingHttpResponse:
    """One row per summary of the dataset (or of the study's items) with every score the user may see; the
    human-enhanced scores from accepted work unless `judgements` is "all"."""
    rows = export_selectors.summary_table_rows(dataset=dataset, study=study, user=user, judgements=judgements)
    fields = export_selectors.summary_table_fields(dataset=dataset, study=study, user=user)
    filename = f"study-{study.pk}-summaries" if study is not None else f"dataset-{dataset.pk}-summaries"
    types = export_selectors.export_column_types(fields)
    return export_response(
        rows, fields, format_name, filename + _suffix(judgements), types, judgement_set_metadata(judgements)
    )


def judgements_download(
    *,
    study: Study,
    format_name: str,
    filename: str,
    judgements: str = ACCEPTED,
    checks: str = export_selectors.CHECKS_EXCLUDE,
) -> StreamingHttpResponse:
    """Every judgement of a study (or a dataset's imported judgements) as flat rows: accepted work only
    unless `judgements` is "all" (the file name then ends in -all); a public study's attention checks only
    when `checks` is "include" (the file name then ends in -checks, the header X-FaithAnno-Checks says so)."""
    rows = export_selectors.study_judgement_rows(study=study, judgements=judgements, checks=checks)
    fields = export_selectors.EXPORT_FIELDS
    types = export_selectors.export_column_types(fields)
    suffix = _suffix(judgements) + ("-checks" if checks == export_selectors.CHECKS_INCLUDE else "")
    metadata = {**judgement_set_metadata(judgements), "checks": checks}
    return export_response(rows, fields, format_name, filename + suffix, types, metadata)
