"""A delivery whose write fails while later ones commit, then the laptop SIGKILLed: after the
restart it is stored, and nothing else is stored or printed a second time.

The failure is real: a trigger in the laptop's SQLite file aborts any write holding one
webhook-id (the whole batch with it fails, as a full disk or an I/O error would), later
deliveries commit, and ``listen`` is killed before its retry can succeed. A restart that resumed
after the newest stored cursor would never fetch it again; the link resumes after its low-water
mark instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from laptop_process import Laptop, check_signatures, post_all, post_one
from relay_helpers import RelayProcess, add_channel

from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.webhooks.store import Store

pytestmark = pytest.mark.slow

POISON = "msg_the_first_write_of_this_one_fails"


def fail_writes_of(path: Path, webhook_id: str) -> None:
    db = sqlite3.connect(path)
    try:
        db.execute(
            "CREATE TRIGGER fail_one BEFORE INSERT ON attempts "
            f"WHEN NEW.webhook_id = '{webhook_id}' "
            "BEGIN SELECT RAISE(ABORT, 'injected write failure'); END"
        )
        db.commit()
    finally:
        db.close()


def let_writes_through(path: Path) -> None:
    db = sqlite3.connect(path)
    try:
        db.execute("DROP TRIGGER fail_one")
        db.commit()
    finally:
        db.close()


async def test_a_failed_write_is_stored_after_a_sigkill_though_later_ones_were_committed(
    relay_process: RelayProcess, tmp_path: Path
) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()
    ingress = ingress_url(relay_process.url, issued.channel.slug)
    laptop = Laptop(
        tmp_path / "laptop", subscribe_url(relay_process.url, issued.channel.slug), issued.token
    )
    history = laptop.home / "deliveries.sqlite3"
    await (await Store.open(history)).close()  # the laptop's store, with its schema
    fail_writes_of(history, POISON)

    await laptop.start()
    try:
        before = await post_all(ingress, 3)
        await post_one(ingress, POISON)
        after = await post_all(ingress, 20)
        await laptop.read(23)  # every other one stored (and printed); the poisoned one retried
    finally:
        await laptop.kill()
    stored = [r[0] for r in laptop.stored()]
    assert POISON not in stored and sorted(stored) == sorted(before + after)

    let_writes_through(history)
    laptop.attempts.clear()
    await laptop.start()
    try:
        await laptop.read(1)
        later = await post_all(ingress, 1)  # stored after everything fetched again was handled
        await laptop.read(2)
    finally:
        assert await laptop.stop() == 0
    # Only the one that was missing is stored and printed again; the 20 stored above it are not.
    assert [a["webhook_id"] for a in laptop.attempts] == [POISON, *later]
    rows = laptop.stored()
    ids = [r[0] for r in rows]
    assert sorted(ids) == sorted([*before, POISON, *after, *later])
    assert len(set(ids)) == len(ids) == 25
    assert sorted(r[1] for r in rows) == list(range(1, 26))
    check_signatures(rows)
