"""scrapy-rep's Spidermon monitor suite (``REP_SPIDERMON``, the ``spidermon`` extra).

Run when the engine stops, after scrapy-rep has ended every held request and
flushed its stats (a spider-close suite would run before that). Each monitor
reads scrapy-rep's stats (and, for origins, its close report's counters) and
fails above its threshold, a key of ``REP_SPIDERMON``'s dict (default):

- no request let through that robots.txt did not allow
  (``rep/downloaded/not-allowed``; ``not_allowed``, 0);
- requests still held at close (``rep/dropped/spider-closed``, ``rep/requeued``,
  ``rep/held/saved``; ``held_at_close``, 0);
- origins whose robots.txt left them paused or unresolved at close, or that
  their pages blocked (401/403s, licence walls; ``blocked_origins``, 10);
- the share of judged requests refused for a declared use
  (``rep/use/<use>/refused``; ``uses_refused``, 50 %);
- the share of items dropped for a use their page refuses
  (``rep/page/items-dropped/use-refused``; ``items_dropped``, 50 %).

A failing monitor fails the suite: Spidermon's run says ``FAILED`` with the
monitor and the numbers, and its actions (e-mail, Slack, ...) run as for any
suite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from spidermon import MonitorSuite, monitors
from spidermon.contrib.scrapy.monitors.base import BaseScrapyMonitor

from scrapy_rep.core.pushback import BLOCKED
from scrapy_rep.crawl.telemetry import Telemetry
from scrapy_rep.runtime.settings import SPIDERMON_THRESHOLDS, RepSettings

F = TypeVar("F", bound=Callable[..., Any])


def _named(title: str) -> Callable[[F], F]:
    """Spidermon's ``monitors.name``, typed."""
    return cast("Callable[[F], F]", monitors.name(title))


def _some(origins: list[str]) -> str:
    return ", ".join(origins[:5]) + (" ..." if len(origins) > 5 else "")


#: origin statuses that hold or refuse an origin's requests
_BLOCKED = frozenset({"paused", "unresolved"})


class _RepMonitor(BaseScrapyMonitor):  # type: ignore[misc]
    @property
    def rep(self) -> RepSettings:
        return RepSettings.of(self.crawler)

    def most(self, threshold: str) -> int:
        """A threshold of ``REP_SPIDERMON`` (its dict, or the defaults)."""
        found = self.rep.spidermon or SPIDERMON_THRESHOLDS
        return found[threshold]

    def stat(self, key: str) -> float:
        return float(self.data.stats.get(key) or 0)

    def stats_starting(self, prefix: str) -> dict[str, Any]:
        return {k: v for k, v in self.data.stats.items() if k.startswith(prefix)}


@_named("scrapy-rep")
class RepMonitor(_RepMonitor):
    """What scrapy-rep obeyed, held and refused."""

    @_named("No request let through that robots.txt did not allow")
    def test_nothing_disallowed_fetched(self) -> None:
        found = self.stat("rep/downloaded/not-allowed")
        most = self.most("not_allowed")
        self.assertLessEqual(
            found,
            most,
            f"{found:g} requests downloaded without robots.txt's allow (at most {most})",
        )

    @_named("Requests held at close")
    def test_held_at_close(self) -> None:
        keys = ("rep/dropped/spider-closed", "rep/requeued", "rep/held/saved")
        found = sum(self.stat(key) for key in keys)
        most = self.most("held_at_close")
        self.assertLessEqual(
            found, most, f"{found:g} requests were still held at close (at most {most})"
        )

    @_named("Origins paused, unresolved or blocked")
    def test_blocked_origins(self) -> None:
        counts = Telemetry.of(self.crawler).counts
        origins = counts.origins.items()
        # robots.txt could not be read, or its pages stopped the crawl: 401/403s or walls
        paused = sorted(o for o, c in origins if c.status in _BLOCKED)
        blocked = sorted(o for o, c in origins if c.page_pauses.get(BLOCKED) and o not in paused)
        most = self.most("blocked_origins")
        found = len(paused) + len(blocked)
        self.assertLessEqual(
            found,
            most,
            f"{len(paused)} origins paused or unresolved ({_some(paused)}), {len(blocked)} "
            f"blocked by their pages ({_some(blocked)}) (at most {most} in all)",
        )

    @_named("Requests refused for a declared use")
    def test_uses_refused(self) -> None:
        declared = self.rep.uses
        judged = self.stat("rep/judgements")
        refused = sum(self.stat(f"rep/use/{use}/refused") for use in declared)
        share = 100 * refused / judged if judged else 0.0
        most = self.most("uses_refused")
        self.assertLessEqual(
            share,
            most,
            f"{refused:g} of {judged:g} judged requests refused for a declared use "
            f"({share:.0f}%; at most {most}%)",
        )

    @_named("Items dropped for a use their page refuses")
    def test_items_dropped(self) -> None:
        dropped = self.stat("rep/page/items-dropped/use-refused")
        scraped = self.stat("item_scraped_count")
        share = 100 * dropped / (dropped + scraped) if dropped + scraped else 0.0
        most = self.most("items_dropped")
        self.assertLessEqual(
            share,
            most,
            f"{dropped:g} items dropped for a refused use, {scraped:g} scraped "
            f"({share:.0f}%; at most {most}%)",
        )


class RepMonitorSuite(MonitorSuite):  # type: ignore[misc]
    """scrapy-rep's monitors, as one Spidermon suite (``REP_SPIDERMON = True``)."""

    monitors = [RepMonitor]  # noqa: RUF012 - Spidermon's own attribute


#: scrapy-rep's suite, by import path
SUITE = "scrapy_rep.integrations.monitors.RepMonitorSuite"


def enable(settings: Any) -> None:
    """Spidermon on (its extension where it runs in EXTENSIONS), scrapy-rep's suite run when
    the engine stops."""
    settings.set("SPIDERMON_ENABLED", True, priority="addon")
    put = settings.set_in_component_priority_dict
    put("EXTENSIONS", "spidermon.contrib.scrapy.extensions.Spidermon", 500)
    suites = list(settings.getlist("SPIDERMON_ENGINE_STOP_MONITORS"))
    if SUITE not in suites:
        settings.set("SPIDERMON_ENGINE_STOP_MONITORS", [*suites, SUITE], priority="addon")
