"""Takes over the study models from `annotations`, in the state only."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotations', '0006_import_job'),
        ('corpus', '0001_initial'),
        ('scoring', '0003_summary_moved_to_corpus'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Study',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('kind', models.CharField(choices=[('study', 'Annotation study'), ('imported', 'Imported judgements')], default='study', max_length=20)),
                        ('description', models.TextField(blank=True)),
                        ('annotators_per_item', models.PositiveSmallIntegerField(default=3)),
                        ('one_task_per_summary', models.BooleanField(default=False)),
                        ('reclaim_after_hours', models.PositiveIntegerField(blank=True, null=True)),
                        ('selection', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('annotators', models.ManyToManyField(blank=True, related_name='annotated_studies', to=settings.AUTH_USER_MODEL)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='studies', to='corpus.dataset')),
                        ('researchers', models.ManyToManyField(blank=True, related_name='researched_studies', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'verbose_name_plural': 'studies',
                        'db_table': 'annotations_study',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='StudyItem',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveIntegerField(default=0)),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('explanation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='study_items', to='scoring.explanation')),
                        ('summary', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='study_items', to='corpus.summary')),
                    ],
                    options={
                        'db_table': 'annotations_studyitem',
                        'ordering': ['study_task', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='Assignment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('assigned', 'To do'), ('submitted', 'Done'), ('reclaimed', 'Given to someone else')], default='assigned', max_length=20)),
                        ('position', models.PositiveIntegerField(default=0, help_text="order in the annotator's queue")),
                        ('comment', models.TextField(blank=True)),
                        ('time_spent', models.FloatField(default=0.0, help_text='seconds of active work, summed over visits')),
                        ('guidelines_version', models.PositiveIntegerField(blank=True, null=True)),
                        ('draft', models.JSONField(blank=True, default=dict)),
                        ('draft_saved_at', models.DateTimeField(blank=True, null=True)),
                        ('touched_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('submitted_at', models.DateTimeField(blank=True, null=True)),
                        ('annotator', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to=settings.AUTH_USER_MODEL)),
                        ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='studies.studyitem')),
                    ],
                    options={
                        'db_table': 'annotations_assignment',
                        'ordering': ['annotator', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='StudyTask',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('task', models.CharField(max_length=50)),
                        ('guidelines', models.TextField(blank=True)),
                        ('guidelines_version', models.PositiveIntegerField(default=1)),
                        ('explanation_config_hash', models.CharField(blank=True, max_length=64)),
                        ('options', models.JSONField(blank=True, default=dict)),
                        ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tasks', to='studies.study')),
                    ],
                    options={
                        'db_table': 'annotations_studytask',
                        'ordering': ['study', 'task'],
                    },
                ),
                migrations.AddField(
                    model_name='studyitem',
                    name='study_task',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='studies.studytask'),
                ),
                migrations.CreateModel(
                    name='StudyExample',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('judgements', models.JSONField(blank=True, default=list)),
                        ('explanation_text', models.TextField(blank=True, help_text='why the example is labelled this way')),
                        ('position', models.PositiveIntegerField(default=0)),
                        ('annotated_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('explanation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='study_examples', to='scoring.explanation')),
                        ('summary', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='study_examples', to='corpus.summary')),
                        ('study_task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='examples', to='studies.studytask')),
                    ],
                    options={
                        'db_table': 'annotations_studyexample',
                        'ordering': ['study_task', 'position', 'pk'],
                    },
                ),
                migrations.CreateModel(
                    name='GuidelinesVersion',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('version', models.PositiveIntegerField()),
                        ('text', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('study_task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='guideline_versions', to='studies.studytask')),
                    ],
                    options={
                        'db_table': 'annotations_guidelinesversion',
                        'ordering': ['study_task', '-version'],
                    },
                ),
                migrations.CreateModel(
                    name='Judgement',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('unit_index', models.PositiveIntegerField()),
                        ('unit_text', models.TextField(blank=True)),
                        ('label', models.CharField(max_length=50)),
                        ('start', models.PositiveIntegerField(blank=True, null=True)),
                        ('end', models.PositiveIntegerField(blank=True, null=True)),
                        ('note', models.TextField(blank=True)),
                        ('data', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('assignment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='studies.assignment')),
                    ],
                    options={
                        'db_table': 'annotations_judgement',
                        'ordering': ['assignment', 'unit_index'],
                        'constraints': [models.UniqueConstraint(fields=('assignment', 'unit_index'), name='judgement_unique_unit')],
                    },
                ),
                migrations.AddIndex(
                    model_name='assignment',
                    index=models.Index(fields=['annotator', 'status'], name='annotations_annotat_0d1784_idx'),
                ),
                migrations.AddIndex(
                    model_name='assignment',
                    index=models.Index(fields=['status', 'touched_at'], name='annotations_status_99afe2_idx'),
                ),
                migrations.AddConstraint(
                    model_name='assignment',
                    constraint=models.UniqueConstraint(fields=('item', 'annotator'), name='assignment_unique_annotator'),
                ),
                migrations.AddConstraint(
                    model_name='studytask',
                    constraint=models.UniqueConstraint(fields=('study', 'task'), name='study_task_unique'),
                ),
                migrations.AddConstraint(
                    model_name='studyitem',
                    constraint=models.UniqueConstraint(fields=('study_task', 'summary'), name='study_item_unique_summary'),
                ),
                migrations.AddConstraint(
                    model_name='guidelinesversion',
                    constraint=models.UniqueConstraint(fields=('study_task', 'version'), name='guidelines_version_unique'),
                ),
            ],
            # The tables exist: annotations' migrations created them under these names.
            database_operations=[],
        ),
    ]
