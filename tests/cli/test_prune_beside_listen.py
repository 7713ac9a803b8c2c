"""``events prune`` while a receiver runs on the same home: the command asks the receiver, whose
own writer deletes between its commits, so every delivery posted meanwhile is acknowledged and
stored, the old history goes and the counts by minute follow both. Ctrl-C stops it after the
step under way and says how many went; a receiver that stops or vanishes mid-way is said in one
sentence and the command goes on by itself; a second prune is refused; an older receiver, which
does not know the request, leaves the command to prune by itself as before.

The first test runs a real ``listen``. The others run the receiver in the test's own process (the
same runtime ``listen`` runs, on the same home) so that its writer can be held at a chosen step:
the real command meets it mid-way every time, counted, never timed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import signal
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import factories
import pytest
from process_helpers import CLEAR, post, start_listen

from walletpass_tui.config import Settings
from walletpass_tui.runtime import control, instance
from walletpass_tui.runtime.control import ReceiverStatus
from walletpass_tui.runtime.control_client import ControlClient
from walletpass_tui.runtime.control_server import ControlServer
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.text import format_ms
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import LogFilter
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.prune_job import FIRST_STEP

OLD = 3_000
DEADLINE_S = 60.0  # "did not hang" guard, never a timing assertion
SEVEN_DAYS = "older than 168 h"

pytestmark = pytest.mark.slow  # walletpass-tui processes


def now_ms() -> int:
    return int(time.time() * 1000)


async def fill(home: Path) -> None:
    """OLD attempts a month old, a second apart."""
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    old = now_ms() - 30 * 86_400_000
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for start in range(0, OLD, 500):
            await asyncio.gather(
                *(
                    store.record(
                        factories.json_attempt(f"msg_old{i}", at=old + i, topic="pass.activated")
                    )
                    for i in range(start, start + 500)
                )
            )


def counts_agree(path: Path) -> bool:
    """The counts by minute hold exactly what the rows say."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        kept = db.execute(
            "SELECT minute, topic, verified + rejected FROM activity "
            "WHERE verified + rejected > 0 ORDER BY 1, 2"
        ).fetchall()
        rows = db.execute(
            "SELECT received_at_ms / 60000, COALESCE(topic, ''), COUNT(*) FROM attempts "
            "GROUP BY 1, 2 ORDER BY 1, 2"
        ).fetchall()
    return kept == rows


async def left_before(home: Path, ms: int) -> int:
    async with await Store.open(home / "deliveries.sqlite3") as store:
        return await store.count(LogFilter(until_ms=ms))


async def until(check: Callable[[], object]) -> None:
    for _ in range(int(DEADLINE_S / 0.005)):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


PRUNE_ARGV = (sys.executable, "-m", "walletpass_tui", "events", "prune", "--older-than", "7d")
PRUNE_ARGV += ("--yes",)


async def prune_command(*argv: str) -> asyncio.subprocess.Process:
    """``events prune --older-than 7d --yes``, or with ``argv`` after ``events prune``."""
    command = (*PRUNE_ARGV[:5], *argv) if argv else PRUNE_ARGV
    return await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def finished(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    async with asyncio.timeout(DEADLINE_S):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@contextlib.asynccontextmanager
async def receiver(home: Path) -> AsyncIterator[DeliveryRuntime]:
    """The runtime ``listen`` runs, on ``home``, in this process."""
    options = ReceiverOptions(host="127.0.0.1", port=0)
    settings = Settings(home=home, receiver_port=0)
    async with DeliveryRuntime(settings, DeliverySetup(options=options)) as runtime:
        await runtime.start_instance("listen")
        await runtime.serve()
        yield runtime


# -- a real listen -----------------------------------------------------------------------------


async def test_a_prune_beside_listen_is_done_by_its_writer_and_loses_no_delivery(
    clean_env: Path,
) -> None:
    await fill(clean_env)
    listen, url = await asyncio.to_thread(start_listen)
    try:
        pruning = await prune_command()
        done = asyncio.ensure_future(finished(pruning))
        answers = []
        n = 0
        while not done.done() or n < 20:
            body = json.dumps({"type": "pass.activated", "data": {"n": n}}).encode()
            answers.append(await asyncio.to_thread(post, url, f"msg_new{n}", body))
            n += 1
        status, out, err = await done
        # listen's own lines (on stderr beside --json) say that its writer pruned, and how much
        said = await asyncio.to_thread(listen.err.until, lambda line: line.startswith("Pruned "))
    finally:
        listen.interrupt()
    assert (status, out, err) == (0, f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n", "")
    assert said.startswith(f"Pruned {OLD:,} attempt(s) received before ")
    assert any(line.startswith("Pruning the attempts received before") for line in listen.err.seen)
    assert answers == [200] * n  # no delivery waited out a lock or was refused
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        assert await store.count() == n
        assert await store.count(LogFilter(topic="pass.activated")) == n
        assert (await store.stats()).received == n
    assert counts_agree(clean_env / "deliveries.sqlite3")


async def test_a_prune_asked_of_listen_after_a_burst_runs_through_with_nothing_arriving(
    clean_env: Path,
) -> None:
    """Deliveries arrive in a burst, then nothing: the receiver's steps go on after each rest
    (never waiting for a next delivery to wake its writer), and the command ends with the count."""
    listen, url = await asyncio.to_thread(start_listen)
    try:
        for round_ in range(3):
            for n in range(300):
                body = json.dumps({"type": "pass.activated", "data": {"n": n}}).encode()
                assert await asyncio.to_thread(post, url, f"msg_{round_}_{n}", body) == 200
            await asyncio.sleep(0.2)  # nothing arrives from here on
            command = await asyncio.create_subprocess_exec(
                *PRUNE_ARGV[:5],
                "--older-than",
                "0",
                "--yes",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            status, out, err = await finished(command)
            assert (status, out, err) == (0, "Removed 300 attempt(s) older than 0 s.\n", "")
    finally:
        listen.interrupt()
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        assert await store.count() == 0


# -- a receiver held at a chosen step ------------------------------------------------------------


async def test_ctrl_c_stops_the_receivers_prune_after_its_step_and_says_how_many_went(
    clean_env: Path,
) -> None:
    await fill(clean_env)
    async with receiver(clean_env) as runtime:
        store = runtime.store
        async with store.hold_writes():  # its first step waits here
            command = await prune_command()
            await until(lambda: store.pruning is not None)  # asked, and listening for Ctrl-C
            command.send_signal(signal.SIGINT)
            await until(lambda: store.pruning is not None and store.pruning.stopping)
        status, out, err = await finished(command)
        assert status == 130 and err == ""
        assert out == (
            f"Stopped: removed {FIRST_STEP} attempt(s) {SEVEN_DAYS}; run the command again to "
            "remove the rest.\n"
        )
        assert await store.count() == OLD - FIRST_STEP  # what went stays gone, as said
    assert counts_agree(clean_env / "deliveries.sqlite3")


async def test_the_receivers_progress_is_drawn_on_a_terminal_and_cleared(clean_env: Path) -> None:
    await fill(clean_env)
    leader, follower = pty.openpty()
    try:
        async with receiver(clean_env) as runtime:
            store = runtime.store
            async with store.hold_writes():  # the receiver's first step waits here
                command = await asyncio.create_subprocess_exec(
                    *PRUNE_ARGV, stdout=asyncio.subprocess.PIPE, stderr=follower
                )
                await until(lambda: store.pruning is not None)
            os.close(follower)
            async with asyncio.timeout(DEADLINE_S):
                out, _ = await command.communicate()
        shown = await asyncio.to_thread(read_all, leader)
    finally:
        os.close(leader)
    assert command.returncode == 0 and out.decode() == f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n"
    assert f"pruned 0 of {OLD:,}" in shown  # drawn at once, then as the receiver tells
    assert shown.endswith(CLEAR)  # and erased before the last line


def read_all(fd: int) -> str:
    """What a pseudo-terminal got until its other end closed."""
    got = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        got += chunk
    return got.decode("utf-8", "replace")


async def test_a_receiver_stopped_mid_way_is_said_and_the_command_prunes_the_rest(
    clean_env: Path,
) -> None:
    """Ctrl-C on ``listen`` while it prunes: it ends its step, tells how many it deleted and
    goes; the command says so in one sentence and deletes the rest itself."""
    await fill(clean_env)
    async with receiver(clean_env) as runtime:
        store = runtime.store
        async with store.hold_writes():
            command = await prune_command()
            await until(lambda: store.pruning is not None)
            closing = asyncio.ensure_future(runtime.close())  # what Ctrl-C on listen does
            await until(lambda: store.pruning is not None and store.pruning.stopping)
        await closing
    status, out, err = await finished(command)
    assert status == 0
    assert err == (
        f"The receiver stopped before the prune ended ({FIRST_STEP} attempt(s) removed by it); "
        "going on without it.\n"
    )
    assert out == f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n"
    assert await left_before(clean_env, now_ms()) == 0
    assert counts_agree(clean_env / "deliveries.sqlite3")


async def test_the_progress_is_erased_before_the_sentence_that_the_receiver_stopped(
    clean_env: Path,
) -> None:
    await fill(clean_env)
    leader, follower = pty.openpty()
    try:
        async with receiver(clean_env) as runtime:
            store = runtime.store
            async with store.hold_writes():
                command = await asyncio.create_subprocess_exec(
                    *PRUNE_ARGV, stdout=asyncio.subprocess.PIPE, stderr=follower
                )
                await until(lambda: store.pruning is not None)
                closing = asyncio.ensure_future(runtime.close())  # what Ctrl-C on listen does
                await until(lambda: store.pruning is not None and store.pruning.stopping)
            await closing
        os.close(follower)
        async with asyncio.timeout(DEADLINE_S):
            out, _ = await command.communicate()
        shown = await asyncio.to_thread(read_all, leader)
    finally:
        os.close(leader)
    assert command.returncode == 0 and out.decode() == f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n"
    assert f"pruned 0 of {OLD:,}" in shown
    # on a line of its own: the progress erased first, never glued to the sentence
    assert f"{CLEAR}The receiver stopped before the prune ended ({FIRST_STEP} " in shown


async def test_a_receiver_gone_without_a_word_is_said_and_the_command_prunes_by_itself(
    clean_env: Path,
) -> None:
    """The receiver's channel closes under the command with no end told and its home is free,
    as when it is killed: the command counts what is left and prunes it itself."""
    await fill(clean_env)
    async with receiver(clean_env) as runtime:
        store = runtime.store
        async with store.hold_writes():  # the receiver's step never comes
            command = await prune_command()
            await until(lambda: store.pruning is not None)
            attachable, runtime._attachable = runtime._attachable, None
            assert attachable is not None
            await attachable.server.stop()  # its socket gone, no word said
            attachable.claim.withdraw()
            attachable.release()  # the home free, as the kernel frees a dead process's lock
            status, out, err = await finished(command)
    assert status == 0
    assert err == (
        "The receiver stopped before the prune ended (0 attempt(s) removed by it); going on "
        "without it.\n"
    )
    assert out == f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n"
    assert await left_before(clean_env, now_ms()) == 0
    assert counts_agree(clean_env / "deliveries.sqlite3")


async def test_a_second_prune_is_refused_while_the_receiver_prunes(clean_env: Path) -> None:
    await fill(clean_env)
    async with receiver(clean_env) as runtime:
        first = await ControlClient.connect(instance.socket_path(clean_env))
        reading = asyncio.create_task(first.run(lambda _: None))
        try:
            async with runtime.store.hold_writes():  # the first one cannot end meanwhile
                await first.request("prune", before_ms=now_ms() - 7 * 86_400_000)
                status, out, err = await finished(await prune_command())
        finally:
            first.close()
            await reading
    assert (status, out) == (1, "")
    assert err == (
        "walletpass-tui: error: The receiver is pruning its history already, for another "
        "command (one prune at a time); wait for it to end, then run this again.\n"
    )


class FakeReceiver:
    """A receiver's channel as another program may serve it: it takes a prune request and then
    says nothing (``refusal`` None: suspended, or hung), or refuses it with ``refusal``."""

    def __init__(self, refusal: str | None, controls: Sequence[str] = control.REQUESTS) -> None:
        self.refusal = refusal
        self.controls = tuple(controls)
        self.asked: list[str] = []

    def hello(self) -> dict[str, Any]:
        state = ReceiverStatus(controls=self.controls).to_wire()
        return {"instance": {"pid": os.getpid()}, "state": state, "upto": 0}

    def request(self, op: str, message: Mapping[str, Any], viewer: object) -> None:
        self.asked.append(op)
        if self.refusal is not None:
            raise ValueError(self.refusal)

    def left(self, viewer: object) -> None:
        """Nothing asked lasts."""

    def after_hello(self) -> list[dict[str, Any]]:
        return []


class OldReceiver(FakeReceiver):
    """A receiver of the version before prune requests, as its channel behaves: its hello lists
    the requests it knows, and any other is answered as unknown."""

    def __init__(self) -> None:
        super().__init__(f"no such request ({', '.join(control.OPS)} are known)", control.OPS)


async def test_an_older_receiver_leaves_the_command_to_prune_by_itself(clean_env: Path) -> None:
    await fill(clean_env)
    claim = await asyncio.to_thread(instance.claim, clean_env)
    old = OldReceiver()
    server = ControlServer(claim.socket_path, old)
    try:
        await server.start()
        claim.publish(
            instance.InstanceRecord(
                pid=os.getpid(), kind="listen", url=None, started_at_ms=now_ms(), version="0.9"
            )
        )
        status, out, err = await finished(await prune_command())
    finally:
        await server.stop()
        claim.withdraw()
        claim.release()
    assert old.asked == ["prune"]  # asked, answered "no such request", pruned here
    assert (status, out, err) == (0, f"Removed {OLD} attempt(s) {SEVEN_DAYS}.\n", "")
    assert await left_before(clean_env, now_ms()) == 0
    assert counts_agree(clean_env / "deliveries.sqlite3")


async def test_a_cutoff_of_a_century_or_a_retention_of_36500_days_is_taken_beside_a_receiver(
    clean_env: Path,
) -> None:
    """A cutoff before 1970 is asked of the receiver as 1970: nothing was received before it."""
    await fill(clean_env)
    async with receiver(clean_env) as runtime:
        status, out, err = await finished(await prune_command("--older-than", "36500d", "--yes"))
        assert (status, err) == (0, "")
        assert out.startswith("Removed 0 attempt(s) older than ")
        asked = runtime.store.pruning
        assert asked is not None and asked.cutoff_ms == 0  # the receiver's writer took it
        (clean_env / "config.toml").write_text("retention_days = 36500\n")
        status, out, err = await finished(await prune_command("--yes"))
        assert (status, out, err) == (0, "Removed 0 attempt(s) older than 36500 days.\n", "")
        assert await runtime.store.count() == OLD


async def test_a_cutoff_in_the_future_is_said_as_the_now_the_receiver_pruned_before(
    clean_env: Path,
) -> None:
    await fill(clean_env)
    later = format_ms(now_ms() + 40_000)
    async with receiver(clean_env) as runtime:
        status, out, err = await finished(await prune_command("--older-than", later, "--yes"))
        job = runtime.store.pruning
        assert job is not None and job.cutoff_ms <= now_ms()
    assert (status, err) == (0, "")
    assert out == f"Removed {OLD} attempt(s) received before {format_ms(job.cutoff_ms)}.\n"


@contextlib.asynccontextmanager
async def fake_receiver(home: Path, fake: FakeReceiver) -> AsyncIterator[None]:
    claim = await asyncio.to_thread(instance.claim, home)
    server = ControlServer(claim.socket_path, fake)
    try:
        await server.start()
        claim.publish(
            instance.InstanceRecord(
                pid=os.getpid(), kind="listen", url=None, started_at_ms=now_ms(), version="1"
            )
        )
        yield
    finally:
        await server.stop()
        claim.withdraw()
        claim.release()


async def test_a_receivers_refusal_reaches_the_terminal_escaped(clean_env: Path) -> None:
    await fill(clean_env)
    hostile = "[bold red]HACKED[/] \x1b[2J\x1b]0;pwned\x07 \u202eevil " + "A" * 500
    async with fake_receiver(clean_env, FakeReceiver(hostile)):
        status, out, err = await finished(await prune_command())
    assert (status, out) == (1, "")
    assert err.startswith("walletpass-tui: error: [bold red]HACKED[/] \\x1b[2J\\x1b]0;pwned")
    assert not any(ch in err for ch in "\x1b\x07\u202e")  # shown as escapes, never sent
    assert len(err) < 400  # cut to the bound
    assert await left_before(clean_env, now_ms()) == OLD  # refused: nothing pruned


async def test_a_receiver_that_goes_silent_mid_prune_is_said_and_ctrl_c_ends_the_command(
    clean_env: Path,
) -> None:
    """A receiver suspended (Ctrl-Z in its terminal) while it prunes: the command says so after
    a bounded silence, exit 1; Ctrl-C meanwhile ends it after a bounded wait, exit 130."""
    await fill(clean_env)
    fake = FakeReceiver(None)
    async with fake_receiver(clean_env, fake):
        status, out, err = await finished(await prune_command())
        assert (status, out) == (1, "")
        assert err.startswith(
            "walletpass-tui: error: The receiver on this home stopped answering while it pruned "
            "(it said nothing for 15 s; 0 attempt(s) removed so far): it is suspended"
        )
        command = await prune_command()
        await until(lambda: fake.asked == ["prune", "prune"])
        command.send_signal(signal.SIGINT)
        async with asyncio.timeout(14):  # well within the silence: Ctrl-C, not the silence
            status, out, err = await finished(command)
    assert status == 130
    assert err.startswith("The receiver on this home did not answer (it did not end its prune")
    assert out.startswith("Stopped: removed 0 attempt(s) older than 168 h;")
    assert await left_before(clean_env, now_ms()) == OLD
