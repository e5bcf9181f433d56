"""ssl.principal.mapping.rules and the RFC 2253 name of a peer certificate, as Kafka and Java make them.

The expected names below were printed by Java 17's X500Principal.getName() for certificates with
these subjects; `test_names_agree_with_java` checks that again wherever Java is installed."""

from __future__ import annotations

import datetime
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kraftpy.security.principal import ANONYMOUS, KafkaPrincipal
from kraftpy.security.principal_mapping import (
    NoMatchingRule,
    SslPrincipalMapper,
    parse_rule,
    peer_principal,
    split_rules,
)
from protocol.transport.peer_name import distinguished_name, escape_value, rfc2253_name
from tests.conftest import have, require_real

# -- splitting and parsing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "expect"),
    [
        ("", "[]"),
        ("DEFAULT", "[DEFAULT]"),
        ("RULE://", "[RULE:/]"),
        ("RULE:/.*/L", "[RULE:/.*/L]"),
        ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"),
        ("\tRULE:(a)/$1/U,DEFAULT\n", "[RULE:(a)/$1/U, DEFAULT]"),
        (",, ,RULE:x/y/,,, DEFAULT, ,", "[RULE:x/y, DEFAULT]"),
        ("RULE:^CN=(.*?),OU=Ops.*$/$1/L, DEFAULT", "[RULE:^CN=(.*?),OU=Ops.*$/$1/L, DEFAULT]"),
        # an escaped slash stays inside the pattern or the replacement
        ("RULE:a\\/b/c\\/d/", "[RULE:a\\/b/c\\/d]"),
        # a comma inside a pattern does not split when the rule is whole
        ("RULE:^CN=([^,]+),.*$/$1/,DEFAULT", "[RULE:^CN=([^,]+),.*$/$1, DEFAULT]"),
    ],
)
def test_rules_split_and_print_as_kafka_does(rules: str, expect: str) -> None:
    assert str(SslPrincipalMapper(rules)) == expect


def test_split_rules_keeps_a_rule_as_written() -> None:
    assert split_rules(" RULE:^CN=(.*)$/$1/U ,  DEFAULT ") == ["RULE:^CN=(.*)$/$1/U", "DEFAULT"]


def test_no_rules_configured_means_default() -> None:
    assert str(SslPrincipalMapper(None)) == "[DEFAULT]"


@pytest.mark.parametrize(
    ("rules", "named"),
    [
        ("default", "default"),
        ("DEFAUL", "DEFAUL"),
        ("DEFAULT/L", "DEFAULT/L"),
        ("DEFAULT, RULE", "RULE"),
        ("rule:^CN=(.*)$/$1/", "rule:^CN=(.*)$/$1/"),
        ("RULE:^CN=(.*)$/$1", "RULE:^CN=(.*)$/$1"),
        ("RULE:^CN=(.*)$/$1/L/U", "RULE:^CN=(.*)$/$1/L/U"),
        ("RULE:^CN=(.*)$/$1/LU", "RULE:^CN=(.*)$/$1/LU"),
        ("RULE:^CN=(.*)$/$1/X", "RULE:^CN=(.*)$/$1/X"),
        ("RULE:^CN=(.*),OU=x$/L", "RULE:^CN=(.*)"),
        # what Kafka's grammar accepts but the pattern or replacement cannot be used
        ("RULE:^CN=(.*$/$1/", "RULE:^CN=(.*$/$1/"),
        ("RULE:^CN=(?<n>.*)$/${n}/", "RULE:^CN=(?<n>.*)$/${n}/"),
        ("RULE:^CN=.*$/$1/", "RULE:^CN=.*$/$1/"),
        ("RULE:^CN=(.*)$/$x/", "RULE:^CN=(.*)$/$x/"),
        ("RULE:^CN=(.*)$/$/", "RULE:^CN=(.*)$/$/"),
        ("RULE:^CN=(?P<n>.*)$/${m}/", "RULE:^CN=(?P<n>.*)$/${m}/"),
        ("RULE:^CN=(?P<n>.*)$/${n/", "RULE:^CN=(?P<n>.*)$/${n/"),
    ],
)
def test_bad_rules_are_refused_by_name(rules: str, named: str) -> None:
    with pytest.raises(ValueError) as caught:
        SslPrincipalMapper(rules)
    assert f"Invalid rule: `{named}`" in str(caught.value)


def test_a_bad_rule_after_good_ones_is_refused() -> None:
    with pytest.raises(ValueError, match="Invalid rule: `nonsense`"):
        SslPrincipalMapper("RULE:^CN=(.*)$/$1/, DEFAULT, nonsense")


# -- mapping ------------------------------------------------------------------------------------

RULES = ", ".join(
    [
        "RULE:^CN=([^,]+),OU=Brokers,.*$/$1/L",
        "RULE:^CN=([^,]+),OU=([^,]+),O=Acme,C=([A-Z]+)$/$1@$2.$3/",
        "RULE:^cn=([^,]+),dc=([^,]+),dc=([^,]+)$/$1@$2.$3/U",
        "DEFAULT",
    ]
)


@pytest.mark.parametrize(
    ("dn", "name"),
    [
        ("CN=Node-1,OU=Brokers,O=Acme,C=US", "node-1"),
        ("CN=alice,OU=Payments,O=Acme,C=US", "alice@Payments.US"),
        ("cn=bob,dc=acme,dc=com", "BOB@ACME.COM"),
        ("CN=alice,OU=Payments,O=Other,C=US", "CN=alice,OU=Payments,O=Other,C=US"),
        # the first rule needs a whole-name match, not a partial one
        ("CN=x,OU=Brokers", "CN=x,OU=Brokers"),
        ("", ""),
    ],
)
def test_first_matching_rule_wins(dn: str, name: str) -> None:
    assert SslPrincipalMapper(RULES).name(dn) == name


def test_no_matching_rule_is_an_error() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=([^,]+),OU=Brokers$/$1/")
    assert mapper.name("CN=b1,OU=Brokers") == "b1"
    with pytest.raises(NoMatchingRule, match="No rules apply to CN=b1,OU=Other"):
        mapper.name("CN=b1,OU=Other")
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("").name("CN=b1")


@pytest.mark.parametrize(
    ("rule", "dn", "name"),
    [
        ("RULE:^CN=(.*)$/$1/L", "CN=MiXeD", "mixed"),
        ("RULE:^CN=(.*)$/$1/U", "CN=MiXeD", "MIXED"),
        ("RULE:^CN=(.*)$/$1/", "CN=MiXeD", "MiXeD"),
        ("RULE:^CN=(.*),O=(.*)$/$2:$1/", "CN=a,O=b", "b:a"),
        ("RULE:^CN=(.*)$/$0!/", "CN=a", "CN=a!"),
        # a rule applies only when its pattern matches the whole name, anchored or not
        ("RULE:CN=([a-z]+)/$1/", "CN=abc,OU=x", None),
        ("RULE:CN=([a-z]+),OU=x/$1/", "CN=abc,OU=x", "abc"),
        # one group: $12 is group 1 and a literal 2, as Java reads it
        ("RULE:^CN=(.*)$/$12/", "CN=a", "a2"),
        # a group the pattern lacks is literal text, as Kafka escapes it
        ("RULE:^CN=(.*)$/$1-$7/", "CN=a", "a-$7"),
        ("RULE:^CN=(.*)$/\\$1/", "CN=a", "$1"),
        ("RULE:^CN=(.*)$/a\\\\b/", "CN=x", "a\\b"),
        ("RULE:^CN=(?P<who>.*)$/${who}/", "CN=a", "a"),
        # an optional group that took no part adds nothing
        ("RULE:^CN=(a)?(.*)$/$1|$2/", "CN=zz", "|zz"),
        # every match is replaced, as Java's replaceAll does, the empty one at the end included
        ("RULE:.*/x/", "CN=a", "xx"),
        # ASCII classes, as Java's: \w is no letter outside ASCII
        ("RULE:^CN=(\\w+)$/$1/", "CN=é", None),
        ("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/", "CN=Tkac\\, Adam,OU=ITZ", "Tkac\\, Adam"),
    ],
)
def test_rule_replacement(rule: str, dn: str, name: str | None) -> None:
    assert parse_rule(rule).apply(dn) == name


# -- distinguished names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("plain", "plain"),
        ("Acme Inc", "Acme Inc"),
        ("Tkac, Adam", "Tkac\\, Adam"),
        ('a+b=c;d<e>f"g\\h', 'a\\+b\\=c\\;d\\<e\\>f\\"g\\\\h'),
        ("#hash # mid", "\\#hash \\# mid"),
        (" lead and trail  ", "\\ lead and trail\\ \\ "),
        ("\rcr\r", "\\\rcr\\\r"),
        ("   ", "\\ \\ \\ "),
        ("nul\0x", "nul\\00x"),
        ("Zürich", "Zürich"),
        ("", ""),
    ],
)
def test_escape_value(value: str, escaped: str) -> None:
    assert escape_value(value) == escaped


def rdns(*pairs: tuple[str, str]) -> tuple[tuple[tuple[str, str], ...], ...]:
    """A getpeercert() subject of single-valued RDNs, least specific first."""
    return tuple((pair,) for pair in pairs)


# (subject as getpeercert() gives it, Java's X500Principal.getName() of the same certificate)
JAVA_NAMES = {
    "plain": (
        rdns(
            ("countryName", "US"),
            ("stateOrProvinceName", "CA"),
            ("localityName", "SF"),
            ("organizationName", "Acme Inc"),
            ("organizationalUnitName", "kraftpy"),
            ("commonName", "node-1"),
        ),
        "CN=node-1,OU=kraftpy,O=Acme Inc,L=SF,ST=CA,C=US",
    ),
    "no keyword": (
        rdns(
            ("domainComponent", "com"),
            ("domainComponent", "acme"),
            ("streetAddress", "1 Main St"),
            ("userId", "u42"),
            ("commonName", "alice"),
            ("emailAddress", "alice@acme.com"),
            ("serialNumber", "1234"),
            ("title", "Boss"),
        ),
        "2.5.4.12=#0c04426f7373,2.5.4.5=#130431323334,1.2.840.113549.1.9.1=#160e616c6963654061636d652e636f6d,"
        "CN=alice,UID=u42,STREET=1 Main St,DC=acme,DC=com",
    ),
    "escapes": (
        rdns(
            ("organizationName", 'a+b=c;d<e>f"g\\h'),
            ("organizationalUnitName", " lead and trail  "),
            ("localityName", "#hash # mid"),
            ("commonName", "Tkac, Adam"),
        ),
        'CN=Tkac\\, Adam,L=\\#hash \\# mid,OU=\\ lead and trail\\ \\ ,O=a\\+b\\=c\\;d\\<e\\>f\\"g\\\\h',
    ),
    "unicode": (
        rdns(("organizationName", "Zürich Straße"), ("commonName", "日本")),
        "CN=日本,O=Zürich Straße",
    ),
    "multi-valued": (
        ((("countryName", "US"),), (("commonName", "bob"), ("organizationalUnitName", "ops"))),
        "CN=bob+OU=ops,C=US",
    ),
    "unnamed oid": (rdns(("1.2.3.4.5", "custom"), ("commonName", "x")), "CN=x,1.2.3.4.5=#0c06637573746f6d"),
    "openssl name": (
        rdns(("houseIdentifier", "house"), ("commonName", "nul\0x")),
        "CN=nul\\00x,2.5.4.51=#0c05686f757365",
    ),
    "long value": (
        rdns(("title", "t" * 200), ("commonName", "n")),
        "CN=n,2.5.4.12=#0c81c8" + "74" * 200,
    ),
}


@pytest.mark.parametrize(("subject", "dn"), JAVA_NAMES.values(), ids=JAVA_NAMES.keys())
def test_rfc2253_name_as_java_prints_it(subject: Any, dn: str) -> None:
    assert rfc2253_name(subject) == dn
    assert distinguished_name({"subject": subject, "issuer": ()}) == dn


def test_unknown_attribute_name_is_refused() -> None:
    with pytest.raises(ValueError, match="noSuchAttribute"):
        rfc2253_name(rdns(("noSuchAttribute", "x")))


MAPPER = SslPrincipalMapper("RULE:^CN=([^,]+),OU=kraftpy,.*$/$1/, DEFAULT")


@pytest.mark.parametrize(
    ("peercert", "principal"),
    [
        (None, ANONYMOUS),
        ({}, ANONYMOUS),
        ({"subject": ()}, ANONYMOUS),
        ({"subject": JAVA_NAMES["plain"][0]}, KafkaPrincipal.user("node-1")),
        ({"subject": rdns(("commonName", "x"))}, KafkaPrincipal.user("CN=x")),
    ],
)
def test_peer_principal(peercert: dict[str, Any] | None, principal: KafkaPrincipal) -> None:
    assert peer_principal(peercert, MAPPER) == principal


def test_peer_principal_without_a_matching_rule_fails() -> None:
    with pytest.raises(NoMatchingRule):
        peer_principal({"subject": rdns(("commonName", "x"))}, SslPrincipalMapper("RULE:^CN=y$/y/"))


# -- real certificates --------------------------------------------------------------------------


def write_certificates(folder: Path) -> dict[str, Path]:
    """A self-signed certificate per subject that the tables above describe."""
    key = ec.generate_private_key(ec.SECP256R1())
    attr = x509.NameAttribute
    subjects = {
        "plain": x509.Name(
            [
                attr(NameOID.COUNTRY_NAME, "US"),
                attr(NameOID.STATE_OR_PROVINCE_NAME, "CA"),
                attr(NameOID.LOCALITY_NAME, "SF"),
                attr(NameOID.ORGANIZATION_NAME, "Acme Inc"),
                attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "kraftpy"),
                attr(NameOID.COMMON_NAME, "node-1"),
            ]
        ),
        "escapes": x509.Name(
            [
                attr(NameOID.ORGANIZATION_NAME, 'a+b=c;d<e>f"g\\h'),
                attr(NameOID.ORGANIZATIONAL_UNIT_NAME, " lead and trail  "),
                attr(NameOID.LOCALITY_NAME, "#hash # mid"),
                attr(NameOID.COMMON_NAME, "Tkac, Adam"),
            ]
        ),
        "multi-valued": x509.Name(
            [
                x509.RelativeDistinguishedName([attr(NameOID.COUNTRY_NAME, "US")]),
                x509.RelativeDistinguishedName(
                    [attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops"), attr(NameOID.COMMON_NAME, "bob")]
                ),
            ]
        ),
        "no keyword": x509.Name(
            [
                attr(NameOID.DOMAIN_COMPONENT, "com"),
                attr(NameOID.DOMAIN_COMPONENT, "acme"),
                attr(NameOID.STREET_ADDRESS, "1 Main St"),
                attr(NameOID.USER_ID, "u42"),
                attr(NameOID.COMMON_NAME, "alice"),
                attr(NameOID.EMAIL_ADDRESS, "alice@acme.com"),
                attr(NameOID.SERIAL_NUMBER, "1234"),
                attr(NameOID.TITLE, "Boss"),
            ]
        ),
    }
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    paths = {}
    for label, subject in subjects.items():
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(1)
            .not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256())
        )
        paths[label] = folder / f"{label.replace(' ', '-')}.pem"
        paths[label].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths


def test_subjects_python_decodes_print_as_expected(tmp_path: Path) -> None:
    """The certificates' subjects as this Python's ssl module decodes them (the getpeercert()
    decoder) are the ones the tables assume, and print as Java prints them."""
    decode = getattr(ssl._ssl, "_test_decode_cert", None)  # type: ignore[attr-defined]
    if decode is None:
        pytest.skip("this Python's ssl module has no certificate decoder to test with")
    for label, path in write_certificates(tmp_path).items():
        subject, dn = JAVA_NAMES[label]
        decoded = decode(str(path))
        assert decoded["subject"] == subject, label
        assert distinguished_name(decoded) == dn, label


JAVA_PRINTER = """
import java.io.FileInputStream;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;

public class PrintSubjects {
    public static void main(String[] paths) throws Exception {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        for (String path : paths) {
            try (FileInputStream in = new FileInputStream(path)) {
                X509Certificate cert = (X509Certificate) factory.generateCertificate(in);
                System.out.print(cert.getSubjectX500Principal().getName() + "\\u0000");
            }
        }
    }
}
"""


def test_names_agree_with_java(tmp_path: Path) -> None:
    require_real("java", have("java"))
    paths = write_certificates(tmp_path)
    source = tmp_path / "PrintSubjects.java"
    source.write_text(JAVA_PRINTER)
    out = subprocess.run(
        ["java", str(source), *map(str, paths.values())],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    java_names = dict(zip(paths, out.split("\0")[:-1], strict=True))
    assert java_names == {label: JAVA_NAMES[label][1] for label in paths}
