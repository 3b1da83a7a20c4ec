"""The three answers for one request, kept apart, and what to do with it.

1. the origin's *policy* (what its robots.txt fetch gave),
2. the *rep decision* for this token and URL (allow, disallow, unresolved),
3. the *collection decision* of the application's own scope hook.

A request is downloaded only when 2 is ``allow`` and 3 is ``approved`` —
and, with ``REP_USE_ACTION = "drop"``, when robots.txt refuses none of the
uses the crawl declares (``uses``: see :mod:`scrapy_rep.core.uses`).
:func:`judge_record` is pure: it takes the policy and the parsed file, never fetches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from scrapy_rep.core.policy import Policy, Status
from scrapy_rep.core.uses import (
    NO_USES,
    NOTHING_DECLARED,
    Declared,
    UseAnswer,
    refusal,
    robots_record,
)
from scrapy_rep.core.uses import silent as _silent
from scrapy_rep.robotstxt import RobotsTxt
from scrapy_rep.robotstxt.text import ITEM_TEXT, printable, summarise_label

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's from Python 3.11

DOWNLOAD, DROP, PARK = "download", "drop", "park"
#: the final answers of a held request handed over at close rather than decided here:
#: pushed back into a shared scrapy-redis queue, or kept in the JOBDIR for the resumed crawl
REQUEUE, KEEP = "requeue", "keep"
#: the reason of a request dropped because robots.txt refuses a declared use
USE_REFUSED = "use-refused"
APPROVED, REJECTED, UNRESOLVED = "approved", "rejected", "unresolved"
#: what a collection hook (REP_COLLECTION_POLICY) may answer
COLLECTION_ANSWERS = (APPROVED, REJECTED, UNRESOLVED)

#: ``policy_status`` of an answer given before any policy (its robots.txt not in yet)
PENDING = "pending"
#: a status's value, looked up (``Enum.value`` is a property: slower, on the hot path)
_STATUS_VALUE = {status: status.value for status in Status}

#: policy status -> (rep decision, reason) when no rule needs looking up
_BY_STATUS = {
    Status.UNAVAILABLE: ("allow", "robots-unavailable"),
    Status.UNREACHABLE: ("disallow", "robots-unreachable"),
    Status.PAUSED: ("unresolved", "origin-paused"),
    Status.UNRESOLVED: ("unresolved", "policy-unresolved"),
}


class DecisionRecord(TypedDict):
    """One request's answer, as the plain, picklable dict it is at run time (in
    ``meta["rep_decision"]``, on ``RepIgnoreRequest``, in the audit log), built only by
    :func:`decision_record`. The ``#:`` comment above each field is its entry in the
    reference's table."""

    #: ``scheme://host:port``, the robots.txt scope (RFC 9309 §2.3)
    origin: str
    #: the token matched against ``User-agent`` lines
    product_token: str
    #: the request URL
    url: str
    #: the policy's status (``ok``, ``unavailable``, ``unreachable``, ``paused``,
    #: ``unresolved``; ``pending``, ``page``, ``excluded`` and ``wall`` in records no rule gave)
    policy_status: str
    #: the robots.txt HTTP status (never the target's)
    policy_http_status: int | None
    #: epoch seconds of that fetch
    policy_fetched_at: float | None
    #: sha256 (first 32 hex) of the body the rules come from: the policy's version, and
    #: its file name in ``REP_POLICY_ARCHIVE``
    policy_digest: str | None
    #: where robots.txt was asked for
    policy_url: str | None
    #: where its redirects ended
    policy_final_url: str | None
    #: the group(s) selected, e.g. ``user-agent: demobot (line 2); user-agent: demobot (line 8)``
    group: str | None
    #: the deciding rule, e.g. ``disallow: /private/`` (or a page's directive and where)
    matched_rule: str | None
    #: the deciding rule's line
    matched_line: int | None
    #: ``allow``, ``disallow`` or ``unresolved``
    rep_decision: str
    #: ``approved``, ``rejected`` or ``unresolved`` (from ``REP_COLLECTION_POLICY``)
    collection_decision: str
    #: ``download``, ``drop``, ``park``; for a request held at close, ``requeue`` (into a
    #: shared scrapy-redis queue) or ``keep`` (in the JOBDIR)
    action: str
    #: one word (``disallow-rule``, ``origin-paused``, ...): the reasons are listed below
    reason: str
    #: a sentence for people: the rule and group, or the policy's reason
    detail: str
    #: use -> {"answer": allowed | refused | unknown, "source": ...} (see core/uses.uses_field)
    uses: dict[str, dict[str, str]]
    #: the robots.txt was larger than 500 KiB and cut at 512,000 bytes (RFC 9309 §2.5):
    #: the decision rests on its first part only
    policy_truncated: bool
    #: only in a browser sub-request's record, with ``REP_USES``: what the page that
    #: asked for it says about each use (``answer``, ``source``)
    page_use: NotRequired[dict[str, dict[str, str]]]


def judge_record(
    origin: str,
    token: str,
    url: str,
    policy: Policy,
    robots: RobotsTxt | None,
    *,
    collection: str = APPROVED,
    disallowed_action: str = DROP,
    unresolved_collection_action: str = DROP,
    declared: Declared = NOTHING_DECLARED,
    more_uses: Sequence[UseAnswer] = (),
) -> DecisionRecord:
    """Decide one request against its origin's policy (the hot path). ``declared``: what
    the crawl collects for; ``more_uses``: other request-time sources' answers (TDMRep)."""
    group = rule = line = None
    if policy.status is Status.OK and robots is not None:
        verdict = robots.decide(token, url)
        rep = "allow" if verdict.allowed else "disallow"
        reason, detail = verdict.reason, None
        if verdict.has_groups:
            group = verdict.group_label
            if len(group) > ITEM_TEXT:  # 25,000 groups: a label of 700 KiB, in every record
                group = summarise_label(group)
                if verdict.rule is not None:
                    verb = "allowed" if verdict.allowed else "disallowed"
                    detail = f"{verb} by {verdict.rule} in group {group}"
        if detail is None:
            detail = str(verdict)
        if verdict.rule is not None:
            rule = f"{verdict.rule.directive}: {printable(verdict.rule.pattern)}"
            line = verdict.rule.line
        if policy.stale_since is not None:
            detail += " (last good copy; the origin is unreachable)"
        # A file with no preference line and a crawl declaring nothing: no cost.
        if robots.preference_lines or declared.active or more_uses:
            uses = robots_record(robots, token, url, verdict.allowed, declared, more_uses)
        else:
            uses = NO_USES
    else:
        rep, reason = _BY_STATUS.get(policy.status, ("unresolved", "policy-unresolved"))
        detail = policy.reason
        uses = _silent(declared, more_uses)

    if rep == "allow":
        if collection == APPROVED:
            action = DOWNLOAD
            if uses and declared.drop:
                refused = refusal(uses, declared)
                if refused is not None:
                    action, reason = DROP, USE_REFUSED
                    detail = f"refused for {refused[0]} by {refused[1]}"
        else:
            reason = f"collection-{collection}"
            detail = f"the collection policy answered {collection!r}"
            action = unresolved_collection_action if collection == UNRESOLVED else DROP
    elif rep == "disallow":
        action = disallowed_action
    else:
        action = PARK if policy.status is Status.PAUSED else DROP
    return decision_record(
        origin,
        token,
        url,
        policy,
        rep,
        collection if rep == "allow" else UNRESOLVED,
        action,
        reason,
        detail,
        uses,
        group,
        rule,
        line,
    )


def decision_record(
    origin: str,
    token: str,
    url: str,
    policy: Policy | None,
    rep: str,
    collection: str,
    action: str,
    reason: str,
    detail: str,
    uses: dict[str, dict[str, str]] = NO_USES,
    group: str | None = None,
    rule: str | None = None,
    line: int | None = None,
    policy_status: str | None = None,
) -> DecisionRecord:
    """The one builder of a decision record, whoever answers. Positional on the hot path:
    keywords cost more. ``policy``: None when there was none yet (``pending``, unless
    ``policy_status`` says what the answer rests on instead)."""
    source: Policy | _NoPolicy
    if policy is None:
        source, status = _NO_POLICY, policy_status or PENDING
    else:
        source, status = policy, policy_status or _STATUS_VALUE[policy.status]
    return {
        "origin": origin,
        "product_token": token,
        "url": url,
        "policy_status": status,
        "policy_http_status": source.http_status,
        "policy_fetched_at": source.fetched_at,
        "policy_digest": source.digest,
        "policy_url": source.url,
        "policy_final_url": source.final_url,
        "group": group,
        "matched_rule": rule,
        "matched_line": line,
        "rep_decision": rep,
        "collection_decision": collection,
        "action": action,
        "reason": reason,
        "detail": detail,
        "uses": uses,
        "policy_truncated": source.truncated,
    }


class _NoPolicy:
    """The policy fields of an answer given before any policy: all unknown."""

    http_status: int | None = None
    fetched_at: float | None = None
    digest: str | None = None
    url: str | None = None
    final_url: str | None = None
    truncated = False


_NO_POLICY = _NoPolicy()


#: reasons a held request is given up without a rule deciding it
WITHHELD_DETAIL = {
    "park-overflow": "REP_PARK_MAX requests are parked already",
    "park-expired": "parked longer than REP_PARK_TIMEOUT",
    "spider-closed": "the spider closed while the request was held",
    "unserializable": "held at a stop with JOBDIR, but Scrapy cannot serialise it to keep it",
    # held for what a page said (core/pushback.py) when the spider closed or gave up on it
    "rate-limited": "held while its origin was paused after a 429 (rate limited) when the "
    "crawl ended",
    "service-unavailable": "held while its origin was paused after a 503 (unavailable) when "
    "the crawl ended",
    "pushback-gave-up": "its origin answered 429 or 503 to 5 pages in a row, each after the "
    "pause it asked for, with no healthy answer between: given up",
    "blocked": "its origin is blocked (401/403 to pages in a row after serving pages): not "
    "sent; stop and diagnose",
}


def withheld(
    origin: str, token: str, url: str, policy: Policy | None, reason: str
) -> DecisionRecord:
    """The record of a held request dropped for a reason of its own (see WITHHELD_DETAIL)."""
    return unjudged(origin, token, url, policy, DROP, reason, WITHHELD_DETAIL[reason])


#: the detail of a dead worker's held request requeued by a survivor (``%s``: the dead worker)
REQUEUED_FROM_DEAD_DETAIL = (
    "held by worker %s, whose lease expired: pushed back into the shared scrapy-redis "
    "queue by this worker"
)


def unjudged(
    origin: str,
    token: str,
    url: str,
    policy: Policy | None,
    action: str,
    reason: str,
    detail: str,
) -> DecisionRecord:
    """The record of an answer no rule gave: a request withheld, pending, or not judged."""
    rep = "allow" if action == DOWNLOAD else UNRESOLVED
    return decision_record(origin, token, url, policy, rep, UNRESOLVED, action, reason, detail)


#: ``policy_status`` of a decision that rests on the linking page, not on robots.txt
PAGE = "page"
#: the reason, and the ``policy_status``, of a request to a site on ``REP_EXCLUDE``
EXCLUDED_SITE, EXCLUDED = "excluded-site", "excluded"
#: ``policy_status`` of an answer that rests on a licence or payment wall, not on robots.txt
WALL = "wall"


def page_drop(
    origin: str, token: str, url: str, reason: str, said: str, detail: str
) -> DecisionRecord:
    """A request dropped for what the page that yielded it says (``said``: the directive
    and where, e.g. ``X-Robots-Tag: none``)."""
    return _drop(origin, token, url, "disallow", reason, detail, said, PAGE)


def excluded_site(
    origin: str, token: str, url: str, entry: str, line: int | None, where: str
) -> DecisionRecord:
    """A request to a site on ``REP_EXCLUDE`` (``entry``, at ``line`` of the list named by
    ``where``): dropped before any robots.txt is asked for."""
    detail = f"the site is excluded by the entry {entry!r} of REP_EXCLUDE ({where})"
    rule = f"exclude: {entry}"
    return _drop(origin, token, url, "disallow", EXCLUDED_SITE, detail, rule, EXCLUDED, line)


def licence_required(origin: str, token: str, url: str, said: str, detail: str) -> DecisionRecord:
    """A request refused for a licence or payment wall (``said``: what the wall asked,
    ``402 payment, crawler-price: USD 0.01``)."""
    return _drop(origin, token, url, UNRESOLVED, "licence-required", detail, said, WALL)


def _drop(
    origin: str,
    token: str,
    url: str,
    rep: str,
    reason: str,
    detail: str,
    rule: str,
    status: str,
    line: int | None = None,
) -> DecisionRecord:
    """A drop that rests on something other than robots.txt (``status``), its ``rule``
    kept in ``matched_rule``."""
    return decision_record(
        origin,
        token,
        url,
        None,
        rep,
        UNRESOLVED,
        DROP,
        reason,
        detail,
        rule=rule,
        line=line,
        policy_status=status,
    )


def identity_drop(
    judged: DecisionRecord | None, origin: str, token: str, url: str, reason: str, detail: str
) -> DecisionRecord:
    """A request stopped as it left for the network, for its identity (``token-missing``,
    ``identity-changed``: :mod:`scrapy_rep.core.identity`). ``judged``: its decision record,
    whose policy and rule are kept; None if it was not judged."""
    if judged is None:
        return unjudged(origin, token, url, None, DROP, reason, detail)
    return {
        **judged,
        "uses": dict(judged["uses"]),
        "action": DROP,
        "reason": reason,
        "detail": detail,
    }
