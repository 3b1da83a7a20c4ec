"""ParkingLot: bounded, per-origin, first in first out, and nothing leaves uncounted."""

from __future__ import annotations

from scrapy_rep.core.parking import ParkingLot


def test_capacity_is_a_total_over_origins() -> None:
    lot: ParkingLot[str] = ParkingLot(3)
    assert lot.park("a", "a1", 1.0, "origin-paused")
    assert lot.park("b", "b1", 2.0, "origin-paused")
    assert lot.park("c", "c1", 3.0, "origin-pending")
    assert len(lot) == 3
    assert not lot.park("d", "d1", 4.0, "origin-paused")
    assert not lot.park("a", "a2", 4.0, "origin-paused")
    assert len(lot) == 3
    assert "d" not in lot
    lot.take("b")
    assert lot.park("d", "d1", 5.0, "origin-paused")


def test_a_full_lot_is_shared_fairly_the_origin_holding_most_gives_way() -> None:
    lot: ParkingLot[str] = ParkingLot(4)
    for n in range(4):
        assert lot.park("a", f"a{n}", float(n), "rate-limited")
    # b holds nothing: it takes the place of a's newest, which the caller drops
    first = lot.park("b", "b0", 5.0, "rate-limited")
    assert first and first.displaced is not None and first.displaced.item == "a3"
    second = lot.park("b", "b1", 6.0, "rate-limited")
    assert second and second.displaced is not None and second.displaced.item == "a2"
    # two each: neither may take the other's place any more
    refused = lot.park("b", "b2", 7.0, "rate-limited")
    assert not refused and refused.displaced is None
    assert not lot.park("a", "a4", 7.0, "rate-limited")
    assert len(lot) == 4
    assert [h.item for h in lot.take("a")] == ["a0", "a1"]
    assert [h.item for h in lot.take("b")] == ["b0", "b1"]
    # after the lot emptied, the most held is counted afresh
    for n in range(3):
        assert lot.park("c", f"c{n}", 8.0, "r")
    assert lot.park("d", "d0", 8.0, "r")
    shared = lot.park("e", "e0", 9.0, "r")
    assert shared.displaced is not None and shared.displaced.origin == "c"
    assert [len(lot.take(o)) for o in ("c", "d", "e")] == [2, 1, 1]


def test_zero_capacity_holds_nothing() -> None:
    lot: ParkingLot[str] = ParkingLot(0)
    assert not lot.park("a", "a1", 1.0, "origin-paused")
    assert len(lot) == 0 and lot.origins() == []


def test_release_gives_the_origin_back_oldest_first() -> None:
    lot: ParkingLot[str] = ParkingLot(10)
    for i, item in enumerate(["a1", "b1", "a2", "a3", "b2"]):
        lot.park(item[0], item, float(i), f"reason-{i}")
    released = lot.take("a")
    assert [p.item for p in released] == ["a1", "a2", "a3"]
    assert [p.since for p in released] == [0.0, 2.0, 3.0]
    assert [p.reason for p in released] == ["reason-0", "reason-2", "reason-3"]
    assert all(p.origin == "a" for p in released)
    assert len(lot) == 2
    assert "a" not in lot and "b" in lot
    assert lot.origins() == ["b"]
    assert lot.take("a") == []
    assert lot.take("nowhere") == []
    assert len(lot) == 2


def test_expire_takes_what_was_parked_before_the_deadline() -> None:
    lot: ParkingLot[str] = ParkingLot(10)
    lot.park("a", "a1", 1.0, "r")
    lot.park("a", "a2", 5.0, "r")
    lot.park("b", "b1", 2.0, "r")
    lot.park("c", "c1", 9.0, "r")
    expired = lot.expire(5.0)  # strictly before
    assert sorted(p.item for p in expired) == ["a1", "b1"]
    assert len(lot) == 2
    assert "b" not in lot  # emptied origins go away
    assert sorted(lot.origins()) == ["a", "c"]
    assert lot.expire(0.0) == []
    assert [p.item for p in lot.expire(100.0)] == ["a2", "c1"]
    assert len(lot) == 0


def test_drain_empties_everything() -> None:
    lot: ParkingLot[int] = ParkingLot(100)
    for i in range(30):
        lot.park(f"o{i % 4}", i, float(i), "r")
    drained = [p.item for p in lot.drain()]
    assert sorted(drained) == list(range(30))
    assert len(lot) == 0 and lot.origins() == []
    assert list(lot.drain()) == []
    assert lot.park("o0", 99, 0.0, "r")  # usable again


def test_oldest_is_when_the_next_expire_takes_one() -> None:
    lot: ParkingLot[str] = ParkingLot(10)
    assert lot.oldest() is None
    lot.park("a", "a1", 4.0, "r")
    lot.park("b", "b1", 2.0, "r")
    assert lot.oldest() == 2.0
    lot.expire(3.0)
    assert lot.oldest() == 4.0
