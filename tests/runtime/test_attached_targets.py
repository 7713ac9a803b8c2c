"""What an attached dashboard takes of the forward targets' options a receiver tells it: checked as
listen checks its own --header flags and bounded in count, so a hostile receiver (anything
listening on the socket) can add no header listen itself would refuse; a CA bundle path that is
no regular file is never waited on."""

from __future__ import annotations

import os
from pathlib import Path

from walletpass_tui.runtime.attached_targets import TargetsHeard
from walletpass_tui.runtime.control import MAX_TOLD, TargetNote, decode, encode
from walletpass_tui.webhooks.target_options import (
    ADDED_HEADERS_MAX,
    HEADER_VALUE_MAX,
    TargetOptions,
    Trust,
)

T = "http://127.0.0.1:3000/hook"


def told(note: TargetNote) -> TargetsHeard:
    heard = TargetsHeard()
    for message in note.to_wire():
        heard.take(decode(encode(message, MAX_TOLD)[:-1], MAX_TOLD))
    return heard


def test_what_listen_adds_reaches_the_dashboard_as_it_was_given() -> None:
    headers = (("Authorization", "Bearer tok"), ("X-Big", '"\\' * (HEADER_VALUE_MAX // 2)))
    heard = told(TargetNote(T, headers=headers, insecure=True))
    assert heard.options(T) == TargetOptions(headers=headers, trust=Trust(insecure=True))
    assert heard.options("http://127.0.0.1:3000/other") == TargetOptions()


def test_headers_listen_would_refuse_are_left_out() -> None:
    heard = TargetsHeard()
    heard.take({"type": "target", "target": T, "insecure": "yes"})
    for name, value in [
        ("X-A", "one\r\nX-Injected: 1"),
        ("webhook-signature", "v1,forged"),
        ("Host", "evil"),
        ("X A", "v"),
        ("X-B", "café"),
        ("X-C", 7),
    ]:
        heard.take({"type": "header", "target": T, "name": name, "value": value})
    heard.take({"type": "header", "target": "http://elsewhere/", "name": "X-D", "value": "v"})
    for n in range(ADDED_HEADERS_MAX + 5):
        heard.take({"type": "header", "target": T, "name": f"X-N{n}", "value": "v"})
    options = heard.options(T)
    assert [name for name, _ in options.headers] == [f"X-N{n}" for n in range(ADDED_HEADERS_MAX)]
    assert options.trust == Trust()  # "yes" is not true


def test_a_ca_bundle_that_is_no_regular_file_is_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    heard = told(TargetNote(T, ca_file=str(fifo)))
    assert heard.options(T).trust == Trust()


def test_the_ca_bundle_listen_trusts_is_read_from_its_path(tmp_path: Path) -> None:
    from peers import self_signed

    cert = self_signed(tmp_path).cert
    trust = told(TargetNote(T, ca_file=str(cert))).options(T).trust
    assert trust.ca_file == str(cert) and trust.ca_pem and "BEGIN CERTIFICATE" in trust.ca_pem
