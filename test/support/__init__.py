"""Helpers for the integration and e2e suites (importable as `support` once test/conftest.py has run)."""
