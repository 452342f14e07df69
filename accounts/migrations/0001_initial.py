"""Takes over the AnnotatorAccount proxy from `annotations`, in the state only (a proxy has no table)."""

import django.contrib.auth.models
from django.db import migrations


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotations', '0006_import_job'),
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='AnnotatorAccount',
                    fields=[
                    ],
                    options={
                        'verbose_name': 'annotator',
                        'proxy': True,
                        'indexes': [],
                        'constraints': [],
                    },
                    bases=('auth.user',),
                    managers=[
                        ('objects', django.contrib.auth.models.UserManager()),
                    ],
                ),
            ],
            # The tables exist: annotations' migrations created them under these names.
            database_operations=[],
        ),
    ]
