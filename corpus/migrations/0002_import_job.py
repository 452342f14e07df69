"""Takes over ImportJob from `annotations` (its table annotations_importjob), in the state only."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0006_import_job'),
        ('corpus', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ImportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(help_text='dataset name: created, or updated when it exists', max_length=200)),
                        ('format', models.CharField(max_length=50)),
                        ('file_name', models.CharField(help_text="the upload's own name, as errors name it", max_length=255)),
                        ('path', models.CharField(help_text='where the upload is stored until it is imported', max_length=1000)),
                        ('size', models.BigIntegerField(default=0)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=10)),
                        ('lines_done', models.PositiveIntegerField(default=0)),
                        ('lines_total', models.PositiveIntegerField(blank=True, null=True)),
                        ('errors', models.JSONField(blank=True, default=list)),
                        ('report', models.JSONField(blank=True, default=list, help_text="the import's summary lines")),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('dataset', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='corpus.dataset')),
                    ],
                    options={
                        'db_table': 'annotations_importjob',
                        'ordering': ['-created_at'],
                    },
                ),
            ],
            # The table exists: annotations 0006 created it under this name.
            database_operations=[],
        ),
    ]
