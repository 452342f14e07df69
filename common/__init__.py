"""Helpers every app uses: checked client input, CSV/JSON export writing, roles, error pages, throttles."""
