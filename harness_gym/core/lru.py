"""A thread-safe least-recently-used map bounded by the total size of its entries in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ByteLRU(Generic[K, V]):
    """Keeps entries while their total size is at most ``max_bytes`` (and their count at most
    ``max_entries``), dropping the least recently used first; an entry larger than ``max_bytes`` is not kept.

    :param max_bytes: bound on the sum of ``size(key, value)`` over the entries
    :param size: the size of an entry in bytes (an estimate of what it holds: its texts' lengths)
    :param max_entries: bound on the number of entries (None: only the byte bound)
    """

    def __init__(self, max_bytes: int, size: Callable[[K, V], int], max_entries: int | None = None) -> None:
        if max_bytes < 0 or (max_entries is not None and max_entries < 0):
            raise ValueError(f"bounds must be >= 0, got max_bytes={max_bytes}, max_entries={max_entries}")
        self.max_bytes = int(max_bytes)
        self.max_entries = max_entries
        self._size = size
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        """The current total size of the entries."""

    def get(self, key: K) -> V | None:
        """The value stored under ``key`` (now the most recently used), or None."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return None
            self._data.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recently used entries beyond the bounds."""
        nbytes = int(self._size(key, value))
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if nbytes > self.max_bytes:
                return
            self._data[key] = (value, nbytes)
            self.bytes += nbytes
            while self.bytes > self.max_bytes or (self.max_entries is not None and len(self._data) > self.max_entries):
                _, (_, dropped) = self._data.popitem(last=False)
                self.bytes -= dropped

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data
