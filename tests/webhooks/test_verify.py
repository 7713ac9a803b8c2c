"""Signature verification, checked against signatures computed independently of our code.

The reference signer below follows the spec (section 5) step by step with only hmac, hashlib and
base64; the Standard Webhooks spec's published example pins both down.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime, timedelta, timezone

import pytest
from factories import SPEC_BODY, SPEC_ID, SPEC_NOW, SPEC_SECRET, SPEC_SIGNATURE, SPEC_TS
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from standardwebhooks import Webhook

from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.verify import (
    SecretError,
    SigningKey,
    compute_signature,
    parse_secret,
    sign,
    verify,
)

# SPEC_*: the Standard Webhooks specification's example (standard-webhooks/spec, "Signature
# scheme"), in factories.py.
OTHER_SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


def reference_signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """Spec section 5, steps 2-5, written without our code or the standardwebhooks package."""
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body  # step 2
    key = base64.b64decode(secret.split("_", 1)[1])  # step 3
    digest = hmac.new(key, signed, hashlib.sha256).digest()  # step 4
    return "v1," + base64.b64encode(digest).decode()  # step 5


def headers(signature: str, msg_id: str = SPEC_ID, ts: int | str = SPEC_TS) -> dict[str, str]:
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}


def key(secret: str = SPEC_SECRET, endpoint_id: str | None = None) -> SigningKey:
    return SigningKey.from_secret(secret, endpoint_id=endpoint_id)


def test_reference_signer_reproduces_the_spec_example() -> None:
    assert reference_signature(SPEC_SECRET, SPEC_ID, str(SPEC_TS), SPEC_BODY) == SPEC_SIGNATURE


def test_spec_example_verifies() -> None:
    verdict = verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=SPEC_NOW)
    assert verdict.ok
    assert verdict.reason is Reason.OK
    assert verdict.status == 200
    assert verdict.text == "verified"
    assert verdict.matched == key()


def test_compute_signature_and_sign_match_the_spec_example() -> None:
    assert compute_signature(parse_secret(SPEC_SECRET), SPEC_ID, str(SPEC_TS), SPEC_BODY) == (
        SPEC_SIGNATURE
    )
    assert sign(SPEC_SECRET, SPEC_ID, SPEC_BODY, SPEC_NOW) == headers(SPEC_SIGNATURE)


def test_header_names_are_case_insensitive() -> None:
    mixed = {
        "Webhook-Id": SPEC_ID,
        "WEBHOOK-TIMESTAMP": str(SPEC_TS),
        "Webhook-Signature": SPEC_SIGNATURE,
    }
    assert verify(mixed, SPEC_BODY, [key()], now=SPEC_NOW).ok


@pytest.mark.parametrize(
    ("drop", "named"),
    [
        (["webhook-id"], "webhook-id"),
        (["webhook-timestamp"], "webhook-timestamp"),
        (["webhook-signature"], "webhook-signature"),
        (["webhook-id", "webhook-signature"], "webhook-id, webhook-signature"),
        (["webhook-id", "webhook-timestamp", "webhook-signature"], "webhook-id, webhook-timestamp"),
    ],
)
def test_missing_headers_are_named(drop: list[str], named: str) -> None:
    given_headers = {k: v for k, v in headers(SPEC_SIGNATURE).items() if k not in drop}
    verdict = verify(given_headers, SPEC_BODY, [key()], now=SPEC_NOW)
    assert not verdict.ok
    assert verdict.reason is Reason.MISSING_HEADERS
    assert named in verdict.detail
    for present in set(headers(SPEC_SIGNATURE)) - set(drop):
        assert present not in verdict.detail
    assert verdict.status == 400


def test_an_empty_header_counts_as_missing() -> None:
    verdict = verify(headers(SPEC_SIGNATURE, msg_id=""), SPEC_BODY, [key()], now=SPEC_NOW)
    assert (verdict.reason, verdict.detail) == (Reason.MISSING_HEADERS, "webhook-id")


@pytest.mark.parametrize(
    "ts",
    [
        *("abc", "1614265330.5", "-1614265330", "1e9", "0x60", "9" * 13, "9" * 100_000),
        *("١٢٣", "²", "+5", "1_0"),  # what int() or str.isdigit() would take
    ],
)
def test_malformed_timestamps(ts: str) -> None:
    verdict = verify(headers(SPEC_SIGNATURE, ts=ts), SPEC_BODY, [key()], now=SPEC_NOW)
    assert verdict.reason is Reason.MALFORMED_TIMESTAMP
    assert verdict.status == 400


def test_too_old_and_too_new_with_the_default_tolerance() -> None:
    old = verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=SPEC_NOW + timedelta(seconds=301))
    assert (old.ok, old.reason, old.status) == (False, Reason.TIMESTAMP_TOO_OLD, 401)
    assert "301 s old, tolerance 300 s" in old.text
    new = verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=SPEC_NOW - timedelta(seconds=301))
    assert (new.ok, new.reason) == (False, Reason.TIMESTAMP_TOO_NEW)
    assert "301 s ahead" in new.text
    for edge in (300, -300):
        now = SPEC_NOW + timedelta(seconds=edge)
        assert verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=now).ok


@pytest.mark.parametrize("tolerance", [0, 5, 3600])
def test_tolerance_is_configurable(tolerance: int) -> None:
    for offset, reason in ((tolerance + 1, Reason.TIMESTAMP_TOO_OLD),
                           (-(tolerance + 1), Reason.TIMESTAMP_TOO_NEW)):  # fmt: skip
        now = SPEC_NOW + timedelta(seconds=offset)
        verdict = verify(
            headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=now, tolerance_s=tolerance
        )
        assert verdict.reason is reason
    for offset in (tolerance, -tolerance):
        now = SPEC_NOW + timedelta(seconds=offset)
        assert verify(
            headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=now, tolerance_s=tolerance
        ).ok


def test_now_in_another_time_zone_is_the_same_instant() -> None:
    tokyo = SPEC_NOW.astimezone(timezone(timedelta(hours=9)))
    assert verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=tokyo).ok


def test_a_naive_now_is_refused() -> None:
    """A naive datetime would be read as local time and shift the tolerance window."""
    with pytest.raises(ValueError):
        verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=datetime(2021, 2, 21, 15, 2, 10))


@pytest.mark.parametrize(
    "signature",
    [
        "v2," + SPEC_SIGNATURE[3:],
        "v1a," + SPEC_SIGNATURE[3:],
        SPEC_SIGNATURE[3:],
        "",
        "   ",
    ],
)
def test_no_v1_signature_present(signature: str) -> None:
    given_headers = headers(signature)
    if not signature.strip():
        given_headers["webhook-signature"] = signature or " "
    verdict = verify(given_headers, SPEC_BODY, [key()], now=SPEC_NOW)
    assert verdict.reason is Reason.NO_V1_SIGNATURE
    assert verdict.status == 400


@pytest.mark.parametrize(
    "signature", ["v1,", "v1,!!!not-base64!!!", "v2,abc v1,!!!notb64 v1,", "v1 v2,abc"]
)
def test_malformed_v1_entries_are_v1_entries_that_do_not_match(signature: str) -> None:
    verdict = verify(headers(signature), SPEC_BODY, [key()], now=SPEC_NOW)
    assert (verdict.reason, verdict.status) == (Reason.NO_MATCH, 401)
    assert verdict.text == "no signature matches: tried 1 secret"


# One entry of a webhook-signature header: a version, a comma, a value (any of them odd).
_ENTRY = st.one_of(
    st.builds(
        "{},{}".format,
        st.sampled_from(["v1", "v2", "v1a", "V1", "", "v0"]),
        st.one_of(
            st.text(alphabet="ABCabc+/=!-_ 09", max_size=50).map(lambda t: t.replace(" ", "")),
            st.binary(min_size=1, max_size=40).map(lambda b: base64.b64encode(b).decode()),
        ),
    ),
    st.sampled_from(["v1", "v1,", "v2", ",", "v1,,"]),
)


@settings(max_examples=300)
@given(entries=st.lists(_ENTRY, max_size=6), with_good=st.booleans(), where=st.integers(0, 6))
def test_any_signature_list_is_judged_by_its_v1_entries(
    entries: list[str], with_good: bool, where: int
) -> None:
    """A valid v1 entry anywhere verifies; otherwise any v1 entry (well formed or not) means 401
    "no signature matches", and no v1 entry at all means 400 "no v1 signature"."""
    if with_good:
        entries = [*entries[:where], SPEC_SIGNATURE, *entries[where:]]
    assume(" ".join(entries).strip())
    verdict = verify(headers(" ".join(entries)), SPEC_BODY, [key()], now=SPEC_NOW)
    has_v1 = any(entry.partition(",")[0] == "v1" for entry in entries)
    if with_good:
        assert verdict.ok
    elif has_v1:
        assert (verdict.reason, verdict.status) == (Reason.NO_MATCH, 401)
    else:
        assert (verdict.reason, verdict.status) == (Reason.NO_V1_SIGNATURE, 400)


def test_no_match() -> None:
    wrong = reference_signature(OTHER_SECRET, SPEC_ID, str(SPEC_TS), SPEC_BODY)
    verdict = verify(headers(wrong), SPEC_BODY, [key()], now=SPEC_NOW)
    assert (verdict.ok, verdict.reason, verdict.status) == (False, Reason.NO_MATCH, 401)
    assert verdict.detail == "tried 1 secret"
    verdict = verify(headers(wrong), SPEC_BODY, [key(), key(SPEC_SECRET, "ep_2")], now=SPEC_NOW)
    assert verdict.detail == "tried 2 secrets"
    assert verdict.matched is None and verdict.endpoint_id is None


def test_no_secret_configured() -> None:
    verdict = verify(headers(SPEC_SIGNATURE), SPEC_BODY, [], now=SPEC_NOW)
    assert (verdict.ok, verdict.reason, verdict.status) == (False, Reason.NO_SECRET, 401)
    assert "--secret" in verdict.text


def test_v2_entries_next_to_v1() -> None:
    for signature in (
        f"v2,AAAA {SPEC_SIGNATURE}",
        f"{SPEC_SIGNATURE} v2,{SPEC_SIGNATURE[3:]}",
        f"v1a,xyz v2,abc {SPEC_SIGNATURE} v3,def",
    ):
        assert verify(headers(signature), SPEC_BODY, [key()], now=SPEC_NOW).ok, signature


def test_malformed_entries_before_a_valid_v1_do_not_hide_it() -> None:
    signature = f"garbage v1 v1, v1,%%% ,, v1,AAAA v1,abc,def  {SPEC_SIGNATURE}"
    assert verify(headers(signature), SPEC_BODY, [key()], now=SPEC_NOW).ok
    # The standardwebhooks package itself gives up on such a header (with a fresh timestamp, so it
    # gets as far as the signatures).
    now = datetime.now(UTC)
    ts = str(int(now.timestamp()))
    valid = reference_signature(SPEC_SECRET, SPEC_ID, ts, SPEC_BODY)
    fresh = headers(f"garbage v1,%%% {valid}", ts=ts)
    assert verify(fresh, SPEC_BODY, [key()], now=now).ok
    with pytest.raises(ValueError):
        Webhook(SPEC_SECRET).verify(SPEC_BODY, fresh)


def test_a_v1_entry_must_match_as_a_whole() -> None:
    """The version prefix is matched as a whole entry: 'v1,' glued to another entry is no v1."""
    verdict = verify(headers("v2," + SPEC_SIGNATURE), SPEC_BODY, [key()], now=SPEC_NOW)
    assert not verdict.ok


def test_several_keys_report_which_matched() -> None:
    keys = [key(OTHER_SECRET, "ep_first"), key(SPEC_SECRET, "ep_second")]
    verdict = verify(headers(SPEC_SIGNATURE), SPEC_BODY, keys, now=SPEC_NOW)
    assert verdict.ok
    assert verdict.endpoint_id == "ep_second"
    assert verdict.matched is keys[1]
    # With secret rotation the header may carry one entry per key; the first key wins.
    both = f"{reference_signature(OTHER_SECRET, SPEC_ID, str(SPEC_TS), SPEC_BODY)} {SPEC_SIGNATURE}"
    assert verify(headers(both), SPEC_BODY, keys, now=SPEC_NOW).endpoint_id == "ep_first"


def test_a_bare_secret_has_no_endpoint() -> None:
    verdict = verify(headers(SPEC_SIGNATURE), SPEC_BODY, [key()], now=SPEC_NOW)
    assert verdict.endpoint_id is None


@pytest.mark.parametrize(
    "body", [b"\xff\xfe\x00binary\x80", "caf\xe9".encode("latin-1"), b"", b"\x00" * 64]
)
def test_non_utf8_and_empty_bodies_verify(body: bytes) -> None:
    signature = reference_signature(SPEC_SECRET, SPEC_ID, str(SPEC_TS), body)
    assert verify(headers(signature), body, [key()], now=SPEC_NOW).ok
    assert sign(SPEC_SECRET, SPEC_ID, body, SPEC_NOW)["webhook-signature"] == signature


def test_the_raw_body_is_what_is_signed() -> None:
    """Re-serializing the JSON (spec section 5, step 7) breaks the signature."""
    reformatted = b'{"test":2432232314}'
    verdict = verify(headers(SPEC_SIGNATURE), reformatted, [key()], now=SPEC_NOW)
    assert verdict.reason is Reason.NO_MATCH


# -- secrets -------------------------------------------------------------------------------------


def test_parse_secret_decodes_the_key() -> None:
    assert parse_secret(SPEC_SECRET) == base64.b64decode(SPEC_SECRET[6:])
    assert parse_secret(f"  {SPEC_SECRET}\n") == parse_secret(SPEC_SECRET)
    assert parse_secret(OTHER_SECRET) == bytes(range(32))
    # Unpadded base64 is accepted (some dashboards drop the '=').
    padded = "whsec_" + base64.b64encode(b"\x01\x02\x03\x04").decode()
    assert padded.endswith("=")
    assert parse_secret(padded.rstrip("=")) == b"\x01\x02\x03\x04"


@pytest.mark.parametrize(
    ("secret", "why"),
    [
        ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with whsec_"),
        ("wsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with whsec_"),
        ("whsec_", "nothing after whsec_"),
        ("whsec_not base64!", "not valid base64"),
        ("whsec_MfKQ9r8G-KYqrTw_jUPD8", "not valid base64"),
        ("whsec_A", "not valid base64"),
        ("whsec_====", "not valid base64"),
        # Characters copied along, invisible on a screen: named by code point, where they are.
        ("\ufeffwhsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "starts with U+FEFF (a byte order mark)"),
        ("whsec_MfK\u200bQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "at character 10, U+200B (zero width"),
        ("whsec_MfKQ9r8G\xa0KYqrTwjUPD8ILPZIo2LaLaSw", "U+00A0 (no-break space)"),
        ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\x1b[2J", "U+001B (a control character)"),
    ],
)
def test_parse_secret_rejects_unusable_secrets(secret: str, why: str) -> None:
    with pytest.raises(SecretError) as info:
        parse_secret(secret)
    assert why in str(info.value)
    assert secret not in str(info.value) or secret == "whsec_"


def test_signing_key_from_secret() -> None:
    signing_key = SigningKey.from_secret(SPEC_SECRET, endpoint_id="ep_1")
    assert (signing_key.endpoint_id, signing_key.label) == ("ep_1", "ep_1")
    with pytest.raises(SecretError):
        SigningKey.from_secret("whsec_%%%")


def test_signing_key_repr_does_not_show_the_key() -> None:
    text = repr(SigningKey.from_secret(SPEC_SECRET, endpoint_id="ep_1"))
    assert SPEC_SECRET[6:] not in text
    assert repr(parse_secret(SPEC_SECRET)) not in text


# -- sign() --------------------------------------------------------------------------------------


def test_sign_needs_an_aware_time_and_converts_it_to_utc() -> None:
    with pytest.raises(ValueError):
        sign(SPEC_SECRET, SPEC_ID, SPEC_BODY, datetime(2021, 2, 21))
    in_tokyo = SPEC_NOW.astimezone(timezone(timedelta(hours=9)))
    assert sign(SPEC_SECRET, SPEC_ID, SPEC_BODY, in_tokyo) == headers(SPEC_SIGNATURE)


def test_sign_rejects_a_bad_secret() -> None:
    with pytest.raises(SecretError):
        sign("whsec_%%%", SPEC_ID, SPEC_BODY, SPEC_NOW)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.text(max_size=200),
    msg_id=st.from_regex(r"msg_[A-Za-z0-9]{1,30}", fullmatch=True),
    key_bytes=st.binary(min_size=1, max_size=64),
)
def test_sign_output_verifies_with_the_standardwebhooks_package(
    body: str, msg_id: str, key_bytes: bytes
) -> None:
    secret = "whsec_" + base64.b64encode(key_bytes).decode()
    now = datetime.now(UTC)
    signed = sign(secret, msg_id, body.encode(), now)
    Webhook(secret).verify(body.encode(), signed, json_parse=False)  # raises when wrong
    assert signed["webhook-signature"] == reference_signature(
        secret, msg_id, signed["webhook-timestamp"], body.encode()
    )
    assert verify(signed, body.encode(), [key(secret)], now=now).ok


# -- any change is rejected ------------------------------------------------------------------


@settings(max_examples=200)
@given(
    field=st.sampled_from(["id", "timestamp", "body", "signature"]),
    body=st.binary(max_size=100),
    replacement=st.binary(min_size=1, max_size=40),
    data=st.data(),
)
def test_any_change_to_id_timestamp_body_or_signature_is_rejected(
    field: str, body: bytes, replacement: bytes, data: st.DataObject
) -> None:
    msg_id, ts = "msg_2KWPBgLlAfxdpx2AI54pPJ85f1W", str(SPEC_TS)
    good = headers(reference_signature(SPEC_SECRET, msg_id, ts, body), msg_id=msg_id, ts=ts)
    assert verify(good, body, [key()], now=SPEC_NOW, tolerance_s=10**9).ok

    tampered, tampered_body = dict(good), body
    if field == "id":
        new_id = data.draw(st.text(min_size=1, max_size=30).filter(lambda s: s.strip()))
        assume(new_id != msg_id)
        tampered["webhook-id"] = new_id
    elif field == "timestamp":
        new_ts = data.draw(st.integers(min_value=0, max_value=10**11))
        assume(str(new_ts) != ts)
        tampered["webhook-timestamp"] = str(new_ts)
    elif field == "body":
        tampered_body = data.draw(st.binary(max_size=100))
        assume(tampered_body != body)
    else:
        sig = base64.b64decode(good["webhook-signature"][3:])
        position = data.draw(st.integers(min_value=0, max_value=len(sig) - 1))
        flipped = bytes([sig[position] ^ (replacement[0] or 1)])
        new_sig = sig[:position] + flipped + sig[position + 1 :]
        tampered["webhook-signature"] = "v1," + base64.b64encode(new_sig).decode()
    # A huge tolerance so only the signature decides.
    verdict = verify(tampered, tampered_body, [key()], now=SPEC_NOW, tolerance_s=10**12)
    assert not verdict.ok
    assert verdict.reason is Reason.NO_MATCH
