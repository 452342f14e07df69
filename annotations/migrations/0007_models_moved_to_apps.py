"""The models of this app moved to corpus, studies and accounts under their old table names.

Here they leave this app's state (the tables stay), and their content types are renamed, so that
permissions and admin log entries follow them to their new apps.
"""

from django.db import migrations

MOVED = {
    "dataset": "corpus",
    "document": "corpus",
    "summary": "corpus",
    "humanscore": "corpus",
    "metricscore": "corpus",
    "importjob": "corpus",
    "study": "studies",
    "studytask": "studies",
    "guidelinesversion": "studies",
    "studyexample": "studies",
    "studyitem": "studies",
    "assignment": "studies",
    "judgement": "studies",
    "annotatoraccount": "accounts",
}


def rename_content_types(apps, schema_editor, forward=True):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, new_app in MOVED.items():
        old_label, new_label = ("annotations", new_app) if forward else (new_app, "annotations")
        # A row under the new label exists only if something created it before this ran (a partial
        # migrate); then the old row's permissions and log entries stay where they are.
        if not content_type.objects.filter(app_label=new_label, model=model).exists():
            content_type.objects.filter(app_label=old_label, model=model).update(app_label=new_label)


def content_types_back(apps, schema_editor):
    rename_content_types(apps, schema_editor, forward=False)


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0006_import_job"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("accounts", "0001_initial"),
        ("corpus", "0002_import_job"),
        ("studies", "0001_initial"),
        ("scoring", "0003_summary_moved_to_corpus"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # Models that others refer to leave last.
            state_operations=[
                migrations.DeleteModel(name=name)
                for name in (
                    "Judgement",
                    "Assignment",
                    "StudyItem",
                    "StudyExample",
                    "GuidelinesVersion",
                    "StudyTask",
                    "Study",
                    "ImportJob",
                    "HumanScore",
                    "MetricScore",
                    "Summary",
                    "Document",
                    "Dataset",
                    "AnnotatorAccount",
                )
            ],
            database_operations=[],
        ),
        migrations.RunPython(rename_content_types, content_types_back),
    ]
