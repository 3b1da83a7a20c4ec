"""The stored form of a :class:`~scrapy_rep.core.policy.Policy`, shared by every persistent store.

A policy becomes a flat mapping of field name to bytes (:func:`encode`): a
``None`` field is left out, the body is zlib-compressed, numbers are written
with ``repr`` so they read back exactly, and a ``schema`` field names the
layout. The Redis store keeps the mapping as a hash, the SQLite store as the
columns of one row. :func:`decode` refuses (:class:`StoreDataError`) an entry
of another schema, an unreadable one, or a body that does not match its
digest; the stores then treat it as missing.

This module needs nothing outside the standard library, so the SQLite store
works without the optional ``redis`` package.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

from scrapy_rep.core.pause import PauseState
from scrapy_rep.core.policy import Policy, Status, digest_of

#: bump when the stored fields change meaning; old entries are then ignored
SCHEMA = 1

_TEXT = ("status", "outcome", "url", "final_url", "reason")
_FLOAT = ("fetched_at", "expires_at")
_OPTIONAL_FLOAT = ("unreachable_since", "stale_since")
#: the last 200's validators (an entry written before they were kept has none)
_OPTIONAL_TEXT = ("etag", "last_modified")

#: every field :func:`encode` may write
FIELDS: tuple[str, ...] = (
    "schema",
    "saved_at",
    *_TEXT,
    *_FLOAT,
    *_OPTIONAL_FLOAT,
    "http_status",
    "body",
    "digest",
    "truncated",
    "failures",
    *_OPTIONAL_TEXT,
)


class StoreDataError(ValueError):
    """A stored entry that cannot be read back (treated as missing)."""


def encode(policy: Policy, saved_at: float) -> dict[str, bytes]:
    """The stored fields of a policy; a ``None`` field is left out."""
    fields: dict[str, bytes] = {
        "schema": str(SCHEMA).encode(),
        "saved_at": repr(float(saved_at)).encode(),
        "failures": str(policy.failures).encode(),
        "truncated": b"1" if policy.truncated else b"0",
    }
    fields["status"] = policy.status.value.encode()
    for name in _TEXT[1:]:
        fields[name] = str(getattr(policy, name)).encode("utf-8", "surrogatepass")
    for name in _FLOAT:
        fields[name] = repr(float(getattr(policy, name))).encode()
    for name in _OPTIONAL_FLOAT:
        value = getattr(policy, name)
        if value is not None:
            fields[name] = repr(float(value)).encode()
    if policy.http_status is not None:
        fields["http_status"] = str(policy.http_status).encode()
    if policy.body is not None:
        fields["body"] = zlib.compress(policy.body, 6)
    if policy.digest is not None:
        fields["digest"] = policy.digest.encode()
    for name in _OPTIONAL_TEXT:
        value = getattr(policy, name)
        if value is not None:
            fields[name] = value.encode("utf-8", "surrogatepass")
    return fields


def decode(raw: Mapping[bytes | str, bytes | str]) -> Policy:
    """A policy from its stored fields; :class:`StoreDataError` if they make no sense."""
    fields = {as_text(k): v if isinstance(v, bytes) else v.encode() for k, v in raw.items()}
    schema = fields.get("schema")
    if schema != str(SCHEMA).encode():
        raise StoreDataError(f"schema {schema!r}, expected {SCHEMA}")
    try:
        text = {name: fields[name].decode("utf-8", "surrogatepass") for name in _TEXT}
        numbers = {name: float(fields[name]) for name in _FLOAT}
        optional = {n: float(fields[n]) if n in fields else None for n in _OPTIONAL_FLOAT}
        body = zlib.decompress(fields["body"]) if "body" in fields else None
        digest = fields["digest"].decode("ascii") if "digest" in fields else None
        http_status = int(fields["http_status"]) if "http_status" in fields else None
        validators = {
            n: fields[n].decode("utf-8", "surrogatepass") if n in fields else None
            for n in _OPTIONAL_TEXT
        }
        policy = Policy(
            status=Status(text["status"]),
            outcome=text["outcome"],
            http_status=http_status,
            fetched_at=numbers["fetched_at"],
            expires_at=numbers["expires_at"],
            url=text["url"],
            final_url=text["final_url"],
            reason=text["reason"],
            body=body,
            digest=digest,
            truncated=fields.get("truncated") == b"1",
            failures=int(fields.get("failures", b"0")),
            unreachable_since=optional["unreachable_since"],
            stale_since=optional["stale_since"],
            etag=validators["etag"],
            last_modified=validators["last_modified"],
        )
    except (KeyError, ValueError, UnicodeDecodeError, zlib.error) as exc:
        raise StoreDataError(f"unreadable entry: {type(exc).__name__}: {exc}") from None
    if body is not None and digest is not None and digest_of(body) != digest:
        raise StoreDataError("the body does not match its digest")
    return policy


def readable(raw: Mapping[bytes | str, bytes | str]) -> dict[str, Any]:
    """Stored fields for people: the body decompressed to text, everything else as text."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = as_text(key)
        data = value if isinstance(value, bytes) else value.encode()
        if name == "body":
            try:
                body = zlib.decompress(data)
            except zlib.error:
                out["body"] = "<unreadable>"
                continue
            out["body_bytes"] = len(body)
            out["body"] = body.decode("utf-8", "replace")
        else:
            out[name] = data.decode("utf-8", "replace")
    return dict(sorted(out.items()))


def as_text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def inspected(raw: Mapping[bytes | str, bytes | str], now: float) -> dict[str, Any]:
    """What ``store show`` prints of one stored entry: its fields for people, and whether
    the policy they hold is fresh (or why they cannot be read)."""
    info: dict[str, Any] = {"fields": readable(raw)}
    try:
        policy = decode(raw)
    except StoreDataError as exc:
        info["error"] = str(exc)
    else:
        info["fresh"] = policy.fresh(now)
        info["expires_in_s"] = round(policy.expires_at - now, 3)
    return info


def encode_pause(state: PauseState) -> str:
    """The stored (and published) form of a page pause: JSON."""
    return json.dumps(state.to_dict())


def decode_pause(value: bytes | str) -> PauseState | None:
    """A stored or published page pause; None if it is not one."""
    try:
        data = json.loads(as_text(value))
    except ValueError:
        return None
    return PauseState.from_dict(data) if isinstance(data, dict) else None


def page_pause(text: str, now: float) -> dict[str, Any]:
    """A stored page pause as ``store show`` prints it: its fields and the seconds left."""
    try:
        data = json.loads(text)
    except ValueError:
        return {"error": "unreadable page pause"}
    if not isinstance(data, dict):
        return {"error": "unreadable page pause"}
    until = data.get("until")
    if isinstance(until, int | float):
        data["ends_in_s"] = round(until - now, 3)
    return data
