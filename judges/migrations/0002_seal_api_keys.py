"""Keys of runs queued before keys were sealed (common.sealing) are sealed in place."""

from django.conf import settings
from django.db import migrations

from common.sealing import SEALED_PREFIX, secret_seal

API_KEY_PURPOSE = "faithanno judges: LLM endpoint API key"  # judges.services.API_KEY_PURPOSE at this migration


def seal_plain_keys(apps, schema_editor):
    JudgeRun = apps.get_model("judges", "JudgeRun")
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    for run in JudgeRun.objects.exclude(api_key="").exclude(api_key__startswith=SEALED_PREFIX):
        run.api_key = secret_seal(run.api_key, secrets=secrets, purpose=API_KEY_PURPOSE)
        run.save(update_fields=["api_key"])


class Migration(migrations.Migration):
    dependencies = [("judges", "0001_initial")]

    operations = [migrations.RunPython(seal_plain_keys, migrations.RunPython.noop)]
