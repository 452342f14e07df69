"""Takes over Dataset, Document, Summary and the score models from `annotations`, in the state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotations', '0006_import_job'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Dataset',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('description', models.TextField(blank=True)),
                        ('source_format', models.CharField(help_text='import format that created the dataset', max_length=50)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'annotations_dataset',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='Document',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=200)),
                        ('title', models.CharField(blank=True, max_length=300)),
                        ('text', models.TextField(blank=True, help_text='empty when the source only gave an id')),
                        ('sentences', models.JSONField(blank=True, default=list)),
                        ('meta', models.JSONField(blank=True, default=dict)),
                        ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='documents', to='corpus.dataset')),
                    ],
                    options={
                        'db_table': 'annotations_document',
                        'ordering': ['dataset', 'external_id'],
                    },
                ),
                migrations.CreateModel(
                    name='Summary',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=200)),
                        ('system', models.CharField(max_length=100)),
                        ('text', models.TextField(blank=True)),
                        ('sentences', models.JSONField(blank=True, default=list)),
                        ('is_reference', models.BooleanField(default=False)),
                        ('meta', models.JSONField(blank=True, default=dict)),
                        ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='summaries', to='corpus.document')),
                    ],
                    options={
                        'verbose_name_plural': 'summaries',
                        'db_table': 'annotations_summary',
                        'ordering': ['document', 'external_id'],
                    },
                ),
                migrations.CreateModel(
                    name='MetricScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('value', models.FloatField()),
                        ('source', models.CharField(blank=True, max_length=100)),
                        ('summary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='metric_scores', to='corpus.summary')),
                    ],
                    options={
                        'db_table': 'annotations_metricscore',
                        'ordering': ['summary', 'name'],
                        'abstract': False,
                    },
                ),
                migrations.CreateModel(
                    name='HumanScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('value', models.FloatField()),
                        ('source', models.CharField(blank=True, max_length=100)),
                        ('summary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='human_scores', to='corpus.summary')),
                    ],
                    options={
                        'db_table': 'annotations_humanscore',
                        'ordering': ['summary', 'name'],
                        'abstract': False,
                    },
                ),
                migrations.AddConstraint(
                    model_name='document',
                    constraint=models.UniqueConstraint(fields=('dataset', 'external_id'), name='document_unique_per_dataset'),
                ),
                migrations.AddIndex(
                    model_name='summary',
                    index=models.Index(fields=['system'], name='annotations_system_1a1eb6_idx'),
                ),
                migrations.AddConstraint(
                    model_name='summary',
                    constraint=models.UniqueConstraint(fields=('document', 'external_id'), name='summary_unique_per_document'),
                ),
                migrations.AddConstraint(
                    model_name='metricscore',
                    constraint=models.UniqueConstraint(fields=('summary', 'name'), name='metric_score_unique'),
                ),
                migrations.AddConstraint(
                    model_name='humanscore',
                    constraint=models.UniqueConstraint(fields=('summary', 'name'), name='human_score_unique'),
                ),
            ],
            # The tables exist: annotations' migrations created them under these names.
            database_operations=[],
        ),
    ]
