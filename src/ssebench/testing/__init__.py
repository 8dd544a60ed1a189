"""Test support shipped with ssebench: a fake backend and the backend conformance suite.

ssebench.testing.conformance needs pytest (pip install 'ssebench[dev]').
"""
