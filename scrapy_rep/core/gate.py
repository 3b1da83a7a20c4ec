"""Every "hold this request" question of an origin, as pure state (no Scrapy, no I/O).

A request of an origin whose policy is fresh and not paused is judged at once; otherwise
it waits a little in the downloader (``pending_wait``), then is parked here, outside
Scrapy's queues, so a slow or failing origin never takes concurrency from a healthy one.
Whatever holds it (its robots.txt, or a page's pause: :mod:`~scrapy_rep.core.pushback`),
the gate answers and says what a new policy or a pause's end releases; the caller
(:mod:`~scrapy_rep.crawl.holding`) carries that out. The clock is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from scrapy_rep.core.parking import Held, Parked, ParkingLot
from scrapy_rep.core.pause import ORIGIN_PAUSED, PauseState, longest
from scrapy_rep.core.policy import Policy, PolicyConfig, Status, given_up_at
from scrapy_rep.core.pushback import REASONS as PUSHBACK_REASONS
from scrapy_rep.core.pushback import Pushback
from scrapy_rep.core.waiting_room import WaitingRoom

T = TypeVar("T")

#: what :meth:`OriginGate.admit` answers
JUDGE, WAIT, PARK = "judge", "wait", "park"
#: the reason of a request held for its robots.txt's fetch (a paused one's is the pause's cause)
ORIGIN_PENDING = "origin-pending"
#: why a request is held, in words, when no page's pause says more
HELD_DETAIL = {
    ORIGIN_PAUSED: "the origin is paused: its robots.txt could not be read",
    ORIGIN_PENDING: "its robots.txt did not arrive within REP_PENDING_WAIT",
}
#: why a request held for a page's pause is held once that pause ended
SLOW_START_DETAIL = "its origin's pause ended; it starts slowly: one request in flight, then more"

#: an origin's states: no policy yet; judged; held; given up (judged, and dropped, till a refetch)
PENDING, OPEN, PAUSED, UNRESOLVED = "pending", "open", "paused", "unresolved"
#: what a new policy does to held requests: stay; go back to be judged; go back, resumed
STAY, RELEASE, RESUME = "stay", "release", "resume"

_TO_OPEN = {
    status: (OPEN, RELEASE) for status in (Status.OK, Status.UNAVAILABLE, Status.UNREACHABLE)
}
_FROM_HELD = {status: (OPEN, RESUME) for status in _TO_OPEN}
_ALWAYS = {Status.PAUSED: (PAUSED, STAY), Status.UNRESOLVED: (UNRESOLVED, RELEASE)}

#: state -> new policy's status -> (next state, held requests' fate); the docs draw it
TRANSITIONS: Mapping[str, Mapping[Status, tuple[str, str]]] = {
    PENDING: {**_TO_OPEN, **_ALWAYS},
    OPEN: {**_TO_OPEN, **_ALWAYS},
    PAUSED: {**_FROM_HELD, **_ALWAYS},
    UNRESOLVED: {**_FROM_HELD, **_ALWAYS},
}


@dataclass(frozen=True, slots=True)
class Admission:
    """What to do with a request now: ``judge``, ``wait`` (``budget`` s) or ``park``."""

    action: str
    reason: str = ""
    budget: float = 0.0


_JUDGE = Admission(JUDGE)


@dataclass(frozen=True, slots=True)
class Release:
    """How many held requests may go now (None: all), and when to ask again (0: not)."""

    count: int | None
    wait: float = 0.0


_NONE = Release(0)


@dataclass(frozen=True, slots=True)
class Wake:
    """What an origin's one timer finds due: a refetch, the page's part, and when again."""

    refetch: bool
    page: bool
    again: float | None


@dataclass(frozen=True, slots=True)
class Waiting:
    """Held requests keeping an idle crawl open: how many, whose (most first), given up by."""

    held: int
    origins: tuple[str, ...]
    given_up_by: float


@dataclass
class Effects(Generic[T]):
    """What a new policy means for an origin's held requests; the caller carries it out."""

    release: list[Held[T]] = field(default_factory=list)
    #: when to refetch the origin's robots.txt
    wake_at: float | None = None
    paused: bool = False
    resumed: bool = False


class OriginGate(Generic[T]):
    """Paused origins, held requests and refetch times; one instance per crawler."""

    def __init__(
        self,
        pending_wait: float,
        park_max: int,
        park_timeout: float,
        max_waiting: int | None = None,
        pushback: Pushback | None = None,
    ) -> None:
        self.pending_wait = pending_wait
        self.park_timeout = park_timeout
        #: how long a request may wait in the downloader for its origin's fetch
        self.room = WaitingRoom(pending_wait, max_waiting)
        self._lot: ParkingLot[T] = ParkingLot(park_max)
        self._paused: set[str] = set()
        self._wakes: dict[str, float] = {}  # origin -> when its refetch is due
        self._closed = False
        #: what pages said (429, 503, 403s), if the crawl listens to them
        self.pushback = pushback

    def __len__(self) -> int:
        return len(self._lot)

    @property
    def watching(self) -> bool:
        """Whether requests entering the scheduler may have to be parked."""
        return bool(self._paused or len(self._lot))

    def page_hold(self, origin: str, now: float) -> str | None:
        """Why a page said to hold ``origin``'s requests now (paused, ramp full); None: not."""
        pushback = self.pushback
        if pushback is None or origin not in pushback:
            return None
        return pushback.hold_reason(origin, now)

    def pause(self, origin: str, now: float, policy: Policy | None = None) -> PauseState | None:
        """``origin``'s pause now, by a page or (given ``policy``) its robots.txt, the one
        ending last; a slow start or a pace after a pause is not one."""
        robots = None
        if policy is not None and (policy.fresh(now) or origin in self._wakes):
            robots = policy.pause()
        pushback = self.pushback
        return longest(robots, pushback.paused(origin, now) if pushback is not None else None)

    def held_by(self, origin: str, reason: str) -> PauseState | None:
        """The page's pause a request held for ``reason`` waits for; None: its robots.txt."""
        if self.pushback is None or reason not in PUSHBACK_REASONS:
            return None
        return self.pushback.said(origin)

    def detail(self, origin: str, reason: str, now: float) -> str:
        """Why a request held for ``reason`` is held, in words, for its decision record."""
        if self.pushback is None or reason not in PUSHBACK_REASONS:
            return HELD_DETAIL.get(reason, reason)
        state = self.pause(origin, now)
        return SLOW_START_DETAIL if state is None else state.describe()

    def holds(self, origin: str) -> bool:
        return origin in self._lot

    def first_held(self, origin: str) -> T | None:
        """The request an origin has held longest (a refetch is made on its behalf)."""
        return self._lot.first(origin)

    def waiting(
        self, policy_of: Callable[[str], Policy | None], config: PolicyConfig
    ) -> Waiting | None:
        """What the held requests wait for (None: none held): each origin's are given up when
        its back-off runs out or, at the latest, ``park_timeout`` after the last parked."""
        held = self._lot.by_origin()
        if not held:
            return None
        last = 0.0
        for origin, (_count, newest) in held.items():
            bound = newest + self.park_timeout
            policy = policy_of(origin)
            schedule = given_up_at(policy, config) if policy is not None else None
            last = max(last, bound if schedule is None else min(bound, schedule))
        return Waiting(len(self._lot), tuple(held), last)

    def admit(
        self, origin: str, policy: Policy | None, pending_since: float | None, now: float
    ) -> Admission:
        """For a request leaving for the downloader: judge, wait for a fetch, or park."""
        said = self.page_hold(origin, now)
        if said is not None:
            return Admission(PARK, said)
        if policy is not None:
            if self.pause(origin, now, policy) is not None:
                return Admission(PARK, ORIGIN_PAUSED)
            planned = origin in self._wakes  # a held origin's refetch is already planned
            if policy.fresh(now) or (planned and policy.status is Status.UNRESOLVED):
                return _JUDGE
        if pending_since is None:  # no fetch under way: the caller starts one and waits
            return Admission(WAIT, budget=self.pending_wait)
        budget = self.pending_wait - (now - pending_since)
        if budget <= 0:
            return Admission(PARK, ORIGIN_PENDING)
        return Admission(WAIT, budget=budget)

    def admit_fetched(self, policy: Policy | None) -> Admission:
        """For a request that waited for its origin's fetch: the policy it got answers it,
        even one already expired (``max-age=0``)."""
        if policy is None:
            return Admission(PARK, ORIGIN_PENDING)
        if policy.status is Status.PAUSED:
            return Admission(PARK, ORIGIN_PAUSED)
        return _JUDGE

    def hold_reason(
        self,
        origin: str,
        handed_back: str | None,
        policy: Policy | None,
        pending_since: float | None,
        now: float,
    ) -> str | None:
        """For a request entering the scheduler: the reason to park it, or None.

        ``handed_back``, the downloader's reason, stands unless it is a pause or a pending
        fetch: those are asked again, as the fetch may have ended meanwhile.
        """
        said = self.page_hold(origin, now)
        if said is not None:
            return said
        if handed_back in PUSHBACK_REASONS:
            handed_back = None
        if handed_back not in (None, ORIGIN_PAUSED, ORIGIN_PENDING):
            return handed_back
        if self.pause(origin, now, policy) is not None:
            return ORIGIN_PAUSED
        if pending_since is not None and (
            handed_back == ORIGIN_PENDING or now - pending_since >= self.pending_wait
        ):
            return ORIGIN_PENDING
        return None

    def sending(
        self, origin: str, now: float, *, turn: bool = False, others: Sequence[float] = ()
    ) -> str | None:
        """Right before a judged request's download: the reason to hold it after all (a
        page's pause, a full slow start, its pace), else None and it counts in flight.

        ``turn``: it waited for its reserved moment, so it is spaced already (``others``:
        how long before it the cluster's other workers sent since this one's last send)."""
        pushback = self.pushback
        if pushback is None or origin not in pushback:
            return None
        reason = pushback.hold_reason(origin, now, paced=not turn)
        if reason is None:
            pushback.sent(origin, now, others)
        return reason

    def ramp(self, origin: str, now: float) -> Release:
        """How many held requests go now after a page's pause: what its slow start has room
        for (one at a time once paced); none while paused."""
        pushback = self.pushback
        if pushback is None or self.pause(origin, now) is not None:
            return _NONE
        room = pushback.room(origin)
        if room == 0:
            return _NONE
        wait = pushback.wait(origin, now)
        if wait > 0:  # what it holds, or holds by then (a slow answer's wait), goes then
            return Release(0, wait)
        if not self.holds(origin):
            return _NONE
        return Release(1 if pushback.paced(origin) else room)

    def park(
        self, origin: str, item: T, since: float, reason: str, *, first: bool = False
    ) -> Parked[T]:
        """Hold ``item`` (``first``: before the origin's others); false when the lot is full
        or the gate closed (drop it then, and any item it displaced)."""
        if self._closed:
            return Parked(False)
        return self._lot.park(origin, item, since, reason, first=first)

    def wake_due(self, origin: str, policy: Policy | None, now: float) -> float | None:
        """When a held origin with no refetch planned should be refetched; None if planned."""
        if origin in self._wakes:
            return None
        when = policy.expires_at if policy is not None else now
        self._wakes[origin] = when
        return when

    def wake(self, origin: str, now: float) -> Wake:
        """``origin``'s one timer fired: what is due now, whatever it was set for."""
        refetch, page, again = False, False, self._wakes.get(origin)
        if again is not None and again <= now:
            del self._wakes[origin]
            refetch, again = not self._closed and origin in self._lot, None
        pushback = self.pushback
        if pushback is not None and origin in pushback and not self._closed:
            state = self.pause(origin, now)
            page = state is None
            if state is not None and (again is None or state.until < again):
                again = state.until
        return Wake(refetch, page, again)

    def on_policy(self, origin: str, old: Policy | None, new: Policy, now: float) -> Effects[T]:
        """A new policy for ``origin``: release or keep what it holds, plan the next fetch."""
        effects: Effects[T] = Effects()
        if self._closed:
            return effects  # close() hands everything back
        after, effect = TRANSITIONS[self.state(origin, old)][new.status]
        self._paused.discard(origin)
        self._wakes.pop(origin, None)
        if effect == STAY:
            self._paused.add(origin)
            self._wakes[origin] = new.expires_at
            return Effects(wake_at=new.expires_at, paused=after == PAUSED)
        if new.status is Status.UNREACHABLE or new.stale_since is not None:
            self._wakes[origin] = new.expires_at
            effects.wake_at = new.expires_at
        effects.resumed = effect == RESUME
        if self.page_hold(origin, now) is None:  # a page's pause keeps them
            effects.release = self._lot.take(origin)
        return effects

    def release_some(self, origin: str, count: int | None) -> list[Held[T]]:
        if self._closed:
            return []
        return self._lot.take(origin, count)

    def state(self, origin: str, policy: Policy | None) -> str:
        if origin in self._paused or (policy is not None and policy.status is Status.PAUSED):
            return PAUSED
        if policy is None:
            return PENDING
        return UNRESOLVED if policy.status is Status.UNRESOLVED else OPEN

    def expire(self, now: float) -> list[Held[T]]:
        """Requests parked longer than ``park_timeout``, removed."""
        return self._lot.expire(now - self.park_timeout)

    def next_expiry(self) -> float | None:
        """When the next held request will have been parked ``park_timeout`` s; None: none."""
        since = self._lot.oldest()
        return since + self.park_timeout if since is not None else None

    def held_origins(self) -> list[str]:
        return self._lot.origins()

    def origins_without_wake(self) -> list[str]:
        """Origins holding requests with no refetch planned (each needs one)."""
        return [origin for origin in self._lot.origins() if origin not in self._wakes]

    def close(self) -> list[Held[T]]:
        """Everything still held, removed; afterwards the gate holds and releases nothing."""
        self._closed = True
        self._paused.clear()
        self._wakes.clear()
        return list(self._lot.drain())
