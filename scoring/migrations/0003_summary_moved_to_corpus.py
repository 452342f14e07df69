"""Summary moved from `annotations` to `corpus` under the same table: the foreign keys change in the state only."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('corpus', '0001_initial'),
        ('scoring', '0002_scoring_claims'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='explanation',
                    name='summary',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='explanations', to='corpus.summary'),
                ),
                migrations.AlterField(
                    model_name='scoringclaim',
                    name='summary',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='corpus.summary'),
                ),
            ],
            # The tables exist: annotations' migrations created them under these names.
            database_operations=[],
        ),
    ]
