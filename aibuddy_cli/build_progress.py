"""How far a long index build has come, for a front end to show (a service reports, never prints).

An index is built on the first command over a vault without one (or after `.aibuddy/` was
deleted): at 10,000 records that takes seconds, in which a person at a terminal would otherwise
see nothing. The builder passes its items through `steps`; a front end that wants to show progress
installs a listener with `listening`. Without a listener `steps` only yields the items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

Item = TypeVar("Item")
# what is being built ("memory index"), items done, items in all; done == total at the end
Listener = Callable[[str, int, int], None]
EVERY = 100  # items between two reports

_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Tell listener of every build while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def steps(what: str, items: Sequence[Item]) -> Iterable[Item]:
    """items, with a report to the listeners before the first, every EVERY items and after the last."""
    if not _listeners or not items:
        return items
    return _reported(what, items, list(_listeners))


def _reported(what: str, items: Sequence[Item], listeners: list[Listener]) -> Iterator[Item]:
    total = len(items)
    for done, item in enumerate(items):
        if done % EVERY == 0:
            for listener in listeners:
                listener(what, done, total)
        yield item
    for listener in listeners:
        listener(what, total, total)
