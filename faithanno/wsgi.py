"""WSGI entry point (gunicorn faithanno.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faithanno.settings")
application = get_wsgi_application()
