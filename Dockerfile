# Production image: gunicorn serving FaithAnno; static files served by WhiteNoise.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY pyproject.toml .
# The dependency pins live in pyproject.toml only; torch comes from PyTorch's CPU index (no CUDA).
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml','rb'))['project']['dependencies']))" > requirements.txt \
 && pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
COPY . .
RUN DEBUG=False SECRET_KEY=collectstatic-only ALLOWED_HOSTS=localhost python manage.py collectstatic --no-input -v 0
RUN useradd --create-home faithanno && mkdir /home/faithanno/hf-cache /home/faithanno/uploads \
    && chown faithanno /home/faithanno/hf-cache /home/faithanno/uploads
# The image runs with DEBUG off (the default) and keeps no state: its data directory (/app/var) is not
# writable, so a container without SECRET_KEY refuses to start, naming the variable, instead of inventing
# a key that would die with the container. docker-compose.yml requires SECRET_KEY.
USER faithanno
EXPOSE 8000
CMD ["gunicorn", "faithanno.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--access-logfile", "-"]
