"""Secrets are masked as whole tokens wherever they appear, and nowhere else."""

import pytest

from bench.util import redact


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    # The registry is process-wide; other tests register their own passwords.
    monkeypatch.setattr(redact, "_SECRETS", set())
    monkeypatch.setattr(redact, "_pattern", None)


def test_secret_is_masked_as_a_token_but_not_inside_other_words():
    redact.register_secret("elastic")
    redact.register_secret("s3cr3t-pw!")
    text = ('{"engine": "elasticsearch", "password": "elastic"} -p elastic url=http://u:s3cr3t-pw!@h:9200 '
            "x s3cr3t-pw! y")
    out = redact.redact_text(text)
    assert '"engine": "elasticsearch"' in out
    assert "elastic\"" not in out and "-p elastic " not in out
    assert "s3cr3t-pw!" not in out
    assert out.count(redact.MASK) == 4


def test_secret_keys_are_masked_in_structures():
    data = {"basic_auth_password": "whatever", "nested": [{"api_key": "k"}], "user": "bob"}
    assert redact.redact(data) == {"basic_auth_password": redact.MASK, "nested": [{"api_key": redact.MASK}],
                                   "user": "bob"}
