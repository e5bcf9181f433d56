"""A broker's sasl.jaas.config as Kafka's JaasConfig reads it, and the PLAIN users in it."""

from __future__ import annotations

import pytest

from kraftpy.security.jaas import PLAIN_LOGIN_MODULE, PlainUsers, parse_jaas_config


def test_one_login_module_its_flag_and_options_quoted_or_bare() -> None:
    entry = parse_jaas_config(
        f'  {PLAIN_LOGIN_MODULE} Required username="admin" password="a;b=c d"\n'
        '  user_admin=\'admin-secret\' user_q="say \\"hi\\"" debug=true ;  '
    )
    assert (entry.login_module, entry.control_flag) == (PLAIN_LOGIN_MODULE, "required")
    assert dict(entry.options) == {
        "username": "admin",
        "password": "a;b=c d",
        "user_admin": "admin-secret",
        "user_q": 'say "hi"',
        "debug": "true",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        (f"{PLAIN_LOGIN_MODULE} required", "must end with ';'"),
        (f"{PLAIN_LOGIN_MODULE} required a=1; Other required;", "contains 2 login modules, should be 1"),
        (f"{PLAIN_LOGIN_MODULE} sometimes a=1;", "Invalid control flag 'sometimes'"),
        (f"{PLAIN_LOGIN_MODULE} required user_a=;", "Value not specified for key 'user_a'"),
        (f"{PLAIN_LOGIN_MODULE} required user_a;", "Value not specified for key 'user_a'"),
        (f'{PLAIN_LOGIN_MODULE} required user_a="x;', "unclosed quote"),
        (f"{PLAIN_LOGIN_MODULE} required =x;", "an option name was expected"),
        ("required;", "a login module and its control flag"),
    ],
)
def test_what_cannot_be_read_is_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_jaas_config(text)


def test_plain_users_are_the_user_options_and_passwords_must_match_exactly() -> None:
    users = PlainUsers.from_jaas(
        parse_jaas_config(f'{PLAIN_LOGIN_MODULE} required username="admin" password="x" user_alice="s3cret";')
    )
    assert dict(users.passwords) == {"alice": "s3cret"}  # the broker's own login is not a user
    assert users.check("alice", "s3cret")
    assert (
        not users.check("alice", "s3cret ") and not users.check("alice", "") and not users.check("admin", "x")
    )
    with pytest.raises(ValueError, match="PlainLoginModule"):
        PlainUsers.from_jaas(parse_jaas_config('org.example.OtherModule required user_alice="s3cret";'))
