"""Helpers shared by the tests (fixtures stay in ``tests/conftest.py``)."""
