"""Waiting in the interop tests: one poll with a deadline, for state that gives no signal."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def eventually(
    predicate: Callable[[], T],
    timeout: float = 10.0,
    every: float = 0.1,
    what: str | Callable[[], str] = "the condition",
) -> T:
    """Calls `predicate` until it returns a truthy value, and returns that value; fails the test
    after `timeout` seconds, saying `what` (a string, or a function giving one, so it can show the
    last state seen).

    A poll in real time: only for state with no signal to wait on, such as what a separate herald
    process answers over HTTP, prints to its log or keeps in its store. Where a signal exists (a
    `threading.Condition` the test's own server notifies, a process's exit), wait on that instead.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what() if callable(what) else what}: not within {timeout} s")
        time.sleep(every)
