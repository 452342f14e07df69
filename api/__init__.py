"""The REST API under /api/v1/: thin views over the same selectors and services as the web pages."""
