"""What a retail ticket names, read from its text alone: the ids, emails, zip codes and products a harness looks
for in what it gathers, and the changes the customer asks for (from which the checks CHECK will run on a plan
that makes them are estimated).

The change parser is exact on this project's synthetic tickets (one change per clause, each in a fixed
phrasing) and a heuristic on the public ones, whose tickets are free text; ``tests/test_tau_retail.py``
measures its agreement with the gold actions on the public data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_IDS = re.compile(r"#W\d+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b|\b(?:credit_card|gift_card|paypal)_\d+\b"
                  r"|\b[a-z]+_[a-z]+_\d{4}\b|\b\d{10}\b|\b\d{5}\b")
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|\s+and also\s+")
_CHANGE = re.compile(r"\b(?:cancel|exchange|return|modify|switch|swap|replace|update)\b|\bchange\b|\bchanged to\b"
                     r"|\bship to\b|\bdelivered to\b|\bpay for\b|\bpay with\b", re.IGNORECASE)
_NOT_A_CHANGE = re.compile(r"\bno (?:change|action)\b|\b(?:do|does|did) not want\b|\bdon't want\b|\bnot to\b",
                           re.IGNORECASE)
_PROFILE = re.compile(r"\b(?:default|profile|user|home) address\b", re.IGNORECASE)


@dataclass(frozen=True)
class Changes:
    """The changes a ticket asks for: how many, and how many of them are to an order (the others change the
    customer's profile)."""

    total: int
    on_orders: int

    @property
    def checks(self) -> int:
        """The checks CHECK runs on a plan that makes these changes and a reply: one per plan step, one for a
        non-empty reply, one per order change the reply must confirm (:mod:`~.checker`)."""
        return self.total + 1 + self.on_orders


def ticket_ids(ticket: str) -> list[str]:
    """Order, item, user and payment-method ids, emails and zip codes the ticket names, in order, lower-cased."""
    return list(dict.fromkeys(m.group(0).lower() for m in _IDS.finditer(ticket)))


def ticket_products(ticket: str, product_names: Iterable[str]) -> list[str]:
    """The catalogue's product names the ticket mentions (case-insensitive), lower-cased, in catalogue order."""
    text = ticket.lower()
    return [name for name, pattern in _product_patterns(tuple(product_names)) if name in text and pattern.search(text)]


@lru_cache(maxsize=16)
def _product_patterns(product_names: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each distinct lower-cased product name and its whole-word pattern, compiled once per catalogue."""
    names = dict.fromkeys(p.lower() for p in product_names)
    return tuple((name, re.compile(rf"\b{re.escape(name)}\b")) for name in names)


def ticket_changes(ticket: str) -> Changes:
    """The changes the ticket asks for: one per clause that names a change (cancel, return, exchange, modify,
    change, ship to, pay for, ...) and does not decline one."""
    total = on_orders = 0
    for clause in _CLAUSE.split(ticket):
        if _CHANGE.search(clause) and not _NOT_A_CHANGE.search(clause):
            total += 1
            on_orders += not _PROFILE.search(clause)
    return Changes(total, on_orders)
