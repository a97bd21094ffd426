"""The store contract tests' ``store`` fixture (tests/store/conftest.py): a test here that takes
``store`` runs once per backend, SQLite, PostgreSQL and MongoDB."""

from tests.store.conftest import backend, mongo_uri, store  # noqa: F401
