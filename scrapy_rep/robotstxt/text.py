"""Text from robots.txt files made safe to print, log and store as UTF-8."""

from __future__ import annotations

from collections.abc import Sequence

#: The longest audit record and log line, in characters: the longest robots.txt line read
#: (16,663 octets, Google's cut) quoted twice fits, as a decision quotes its rule twice
MAX_RECORD = 64 * 1024
#: How many items a summarised list names before "and M more"
SHOWN_ITEMS = 10
#: The longest one item of a summarised list, or one quoted source, is shown (characters)
ITEM_TEXT = 1024


def printable(text: str, keep_tab: bool = True) -> str:
    """``text`` with every non-printable character but TAB (unless not ``keep_tab``)
    escaped as Python writes it: printed raw, a site's ESC sequences, NEL or bidi
    overrides recolour the terminal, split a log line or hide what it says. An invalid
    UTF-8 octet (a lone surrogate to the parser) is shown as the octet."""
    if text.isprintable():
        return text
    tab = "\t" if keep_tab else ""
    return "".join(ch if ch.isprintable() or ch == tab else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if "\udc80" <= ch <= "\udcff":  # surrogateescape: the invalid octet it stands for
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return repr(ch)[1:-1]


def clip(text: str, limit: int = ITEM_TEXT) -> str:
    """``text`` if it is at most ``limit`` characters long, else its start and how much more."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def summarise(
    items: Sequence[str], sep: str = "; ", shown: int = SHOWN_ITEMS, limit: int = ITEM_TEXT
) -> str:
    """The first ``shown`` items (each clipped to ``limit``) joined by ``sep``, "and M more":
    a list a site can make as long as its file, in a record or a log line."""
    if len(items) <= shown and all(len(item) <= limit for item in items):
        return sep.join(items)
    text = sep.join(clip(item, limit) for item in items[:shown])
    more = len(items) - shown
    return f"{text}{sep}and {more} more" if more > 0 else text


def summarise_label(label: str) -> str:
    """A group label summarised: 25,000 ``User-agent: *`` groups make a label of a few
    KiB instead of 700 KiB. Short labels (nearly all) cost a length check."""
    if len(label) <= ITEM_TEXT:
        return label
    # every request of the group asks: its summary is made once (a str caches its hash)
    key = (hash(label), len(label))
    summary = _LABELS.get(key)
    if summary is None:
        if len(_LABELS) >= _LABELS_KEPT:
            del _LABELS[next(iter(_LABELS))]
        summary = _LABELS[key] = summarise(label.split("; "))
    return summary


#: (hash, length) of a long label -> its summary, for the labels summarised last
_LABELS: dict[tuple[int, int], str] = {}
_LABELS_KEPT = 256
