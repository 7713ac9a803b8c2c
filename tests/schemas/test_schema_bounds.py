"""Hostile bodies: deep, wide, long, large. Each is learned within the bounds, in memory bounded by
its size, and never raises into the caller.

Memory is a generous bound, never time: tracemalloc for bodies of few values; for those of a
million values (where tracemalloc itself would take minutes) the peak resident size of a child
process that learns the body, over what it held before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from schema_helpers import delivery

from walletpass_tui.schemas.catalog import Catalog
from walletpass_tui.schemas.model import GroupKey, GroupSchema
from walletpass_tui.schemas.paths import MAX_DEPTH, MAX_PATHS

ACTIVATED = GroupKey.of_topic("pass.activated")
MIB = 1024 * 1024


def peak_while(work: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


_CHILD = """
import json, resource, sys
from walletpass_tui.schemas.catalog import Catalog, Delivery
from walletpass_tui.schemas.model import GroupKey
body = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
catalog = Catalog()
catalog.learn(Delivery(1, "msg_1", 1, "pass.activated", "verified", body))
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
group = catalog.groups[GroupKey.of_topic("pass.activated")]
print(json.dumps({
    "grown_kib": grown, "samples": group.samples, "paths": sorted(group.paths),
    "untracked": group.untracked_count, "more": group.untracked_more,
    "types": {p: s.types for p, s in group.paths.items()},
    "open": sorted(p for p, s in group.paths.items() if s.open),
    "depths": sorted(s.depth for s in group.paths.values()),
    "open_depths": sorted(s.depth for s in group.paths.values() if s.open),
}))
"""


def learn_in_child(body: bytes, tmp_path: Path) -> dict[str, Any]:
    """Learn ``body`` in a child process; what it learned and how much its peak memory grew."""
    file = tmp_path / "body.json"
    file.write_bytes(body)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(file)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    grown = found["grown_kib"] * 1024
    assert grown < 4 * len(body) + 32 * MIB, (
        f"grew {grown / MIB:.1f} MiB for {len(body) / MIB:.1f} MiB"
    )
    return found


def learn_one(body: bytes) -> GroupSchema:
    catalog = Catalog()
    _, peak = peak_while(lambda: catalog.learn(delivery(1, body)))
    # Generous: the body, its text, and a stack of one small entry per open container.
    assert peak < 12 * len(body) + 16 * MIB, (
        f"peak {peak / MIB:.1f} MiB for {len(body) / MIB:.1f} MiB"
    )
    return catalog.groups[ACTIVATED]


@pytest.mark.parametrize("opening", [b"[", b'{"a":'])
def test_a_body_nested_100000_deep_is_learned_to_64_levels(opening: bytes, tmp_path: Path) -> None:
    closing = b"]" if opening == b"[" else b"}"
    found = learn_in_child(opening * 100_000 + b"1" + closing * 100_000, tmp_path)
    assert found["samples"] == 1
    assert found["depths"] == list(range(MAX_DEPTH + 1))  # one path per level, down to 64
    assert found["open_depths"] == [MAX_DEPTH]  # the deepest's children were not learned


def test_a_deep_body_that_is_broken_below_64_levels_is_not_json() -> None:
    catalog = Catalog()
    catalog.learn(delivery(1, b"[" * 100_000 + b"]" * 99_999))
    assert catalog.groups[ACTIVATED].not_json == 1


@pytest.mark.slow
def test_a_million_keys_fold_into_a_map_or_stop_at_2000_paths(tmp_path: Path) -> None:
    ids = b",".join(b'"pass_%07d":%d' % (n, n) for n in range(500_000))
    words = b",".join(
        b'"%s":true' % bytes(97 + (n // 26**k) % 26 for k in range(5)) for n in range(500_000)
    )
    found = learn_in_child(b'{"balances":{' + ids + b'},"words":{' + words + b"}}", tmp_path)
    assert found["samples"] == 1
    assert {"balances{*}", "words"} <= set(found["paths"])
    # The body reached 2,000 paths; folding its first 51 id-like keys then freed 50 of them.
    assert MAX_PATHS - 50 <= len(found["paths"]) <= MAX_PATHS
    assert found["untracked"] > 0 and found["more"]
    assert "words" in found["open"]
    assert found["types"]["balances{*}"] == {"integer": 500_000}


def test_a_1_mib_body_of_small_values_is_learned(tmp_path: Path) -> None:
    items = b",".join(b'{"n":%d,"s":"v"}' % n for n in range(70_000))
    body = b'{"data":[' + items + b"]}"
    assert len(body) > MIB
    found = learn_in_child(body, tmp_path)
    assert found["types"]["data[].n"] == {"integer": 70_000}
    assert found["types"]["data[].s"] == {"string": 70_000}


def test_a_1_mib_string_and_an_over_long_key() -> None:
    group = learn_one(b'{"big":"' + b"x" * MIB + b'","' + b"k" * 10_000 + b'":1}')
    assert group.paths["big"].example == "x" * 80
    assert group.paths["$"].open  # the 10,000-character key is not learned
    assert set(group.paths) == {"$", "big"}
    assert group.untracked_count == 1


def test_paths_beyond_2000_are_counted_not_tracked() -> None:
    keys = b",".join(
        b'"field_%s":1' % bytes(97 + (n // 26**k) % 26 for k in range(3)) for n in range(3000)
    )
    group = learn_one(b"{" + keys + b"}")
    assert len(group.paths) == MAX_PATHS
    assert group.untracked_count == 3000 - (MAX_PATHS - 1)
    assert not group.untracked_more
