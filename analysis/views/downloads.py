"""The downloads the web pages and the API both serve: the same rows, the same file names."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import StreamingHttpResponse

from analysis.selectors import exports as export_selectors
from common.views import export_response
from corpus.models import Dataset
from studies.models import Study


def summaries_download(*, dataset: Dataset, study: Study | None, user: User, format_name: str) -> StreamingHttpResponse:
    """One row per summary of the dataset (or of the study's items) with every score the user may see."""
    rows = export_selectors.summary_table_rows(dataset=dataset, study=study, user=user)
    fields = export_selectors.summary_table_fields(dataset=dataset, study=study, user=user)
    filename = f"study-{study.pk}-summaries" if study is not None else f"dataset-{dataset.pk}-summaries"
    return export_response(rows, fields, format_name, filename, export_selectors.export_column_types(fields))


def judgements_download(*, study: Study, format_name: str, filename: str) -> StreamingHttpResponse:
    """Every judgement of a study (or a dataset's imported judgements) as flat rows."""
    rows = export_selectors.study_judgement_rows(study=study)
    fields = export_selectors.EXPORT_FIELDS
    return export_response(rows, fields, format_name, filename, export_selectors.export_column_types(fields))
