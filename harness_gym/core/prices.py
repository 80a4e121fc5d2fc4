"""Price tables: what each billable item of a deployed harness costs, from the sourced files of ``envs_data/prices``.

Each file is one named profile (docs/cost.md):

- a **base** profile (``cheap-hosted``, ``frontier-hosted``, ``self-hosted``) prices the model's tokens, names
  its default retrieval overlay (``"retrieval"``) and includes fragments (``"include"``);
- a **fragment** (``services``) prices what every base pays besides the model (sandbox, APIs, database) and
  holds the billing parameters (``"billing"``: billed seconds and GB of a sandbox job);
- a **retrieval overlay** (``local-index``, ``web-search``, ``self-hosted-index``; ``"overlay": true``) prices
  RETRIEVE and says how it is billed (``"retrieval_mode"``: ``"index"`` bills one ``index_query`` and the
  query's ``embedding_token``; ``"search"`` bills one ``search_query``).

A profile name is ``BASE[+OVERLAY...]``: the base (its includes first, then its own items), then its default
retrieval overlay unless the name gives a retrieval overlay of its own, then the named overlays in order, each
replacing the prices it lists. Every item keeps the source and the date its price was read. A dict of item ->
US$ is a set of prices over the default profile (``"profile": NAME`` in the dict picks another base).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness_gym.core.paths import data_path

UNIT_DOLLARS = 0.0001
"""US dollars per cost unit: ``info["cost"]["units"]`` is in hundredths of a cent."""
DEFAULT_PROFILE = "cheap-hosted"
"""The profile of ``prices=None``: a cheap hosted model (gpt-4o-mini) with a managed vector index."""

BASE_ITEMS: tuple[str, ...] = ("prompt_token", "completion_token", "embedding_token", "index_query", "search_query",
                               "sandbox_request", "sandbox_gb_second", "db_query")
"""Items every resolved profile prices; besides them a profile prices ``api_call:<api>`` items."""
API_PREFIX = "api_call:"
"""Prefix of the items that price one request of an API a tool stands for (``api_call:fx_rates``)."""
BILLING_KEYS: tuple[str, ...] = ("sandbox_seconds_per_job", "sandbox_gb")
"""Billing parameters (``services.json``, ``"billing"``): a sandbox job bills ``sandbox_request`` once and
``sandbox_seconds_per_job * sandbox_gb`` of ``sandbox_gb_second``."""
RETRIEVAL_MODES: tuple[str, ...] = ("index", "search")
"""How RETRIEVE is billed: an embedded query of a vector index, or one query of a search API."""
_ENTRY_FIELDS: tuple[str, ...] = ("usd", "per", "what", "source", "read")
MAX_USD_PER_UNIT = 1000.0
"""The most a price may be, in US$ per unit of its item (docs/cost.md): far above any listed price (the dearest
shipped one is US$0.008 a web search) and low enough that no bill of an episode reaches a float's range."""
MAX_BILLING: dict[str, float] = {"sandbox_seconds_per_job": 3600.0, "sandbox_gb": 1024.0}
"""The most each billing parameter may be (docs/cost.md): an hour per job, 1 TB per job."""


class PriceProfileError(ValueError):
    """A price file, profile name or price dict that is wrong; the message names the file or key and what."""


def closest(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` for the choices closest to ``word``, or ``""``."""
    near = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""


@dataclass(frozen=True)
class PriceEntry:
    """One priced item and where its price comes from.

    :param item: the billable item (``prompt_token``, ``api_call:fx_rates``, ...)
    :param usd: US$ per unit of the item
    :param per: what one unit is
    :param what: what the price stands for
    :param source: where the price was read (``"-"`` for an item that is free by construction)
    :param read: the date the source was read (ISO)
    :param profile: the profile file the entry comes from (``"(given)"`` for a caller's dict)
    """

    item: str
    usd: float
    per: str
    what: str
    source: str
    read: str
    profile: str


@dataclass(frozen=True)
class PriceTable:
    """A resolved price profile: US$ per billable item, the retrieval mode and the sandbox billing parameters.

    :param name: the profile as named (``"cheap-hosted"``, ``"cheap-hosted+web-search"``; a dict's prices are
        named ``BASE+{...}``)
    :param entries: item -> its :class:`PriceEntry`
    :param retrieval: the retrieval overlay in force (``"local-index"``, ...)
    :param retrieval_mode: ``"index"`` or ``"search"`` (:data:`RETRIEVAL_MODES`)
    :param sandbox_seconds_per_job: billed seconds of one sandbox job (a deterministic proxy, never wall time)
    :param sandbox_gb: billed memory of one sandbox job, in GB
    """

    name: str
    entries: Mapping[str, PriceEntry]
    retrieval: str
    retrieval_mode: str
    sandbox_seconds_per_job: float
    sandbox_gb: float
    usd: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "usd", {item: e.usd for item, e in self.entries.items()})

    def price(self, item: str) -> float:
        """US$ per unit of ``item``; an unknown item raises :class:`PriceProfileError` naming the closest ones.

        :param item: a billable item
        """
        try:
            return self.usd[item]
        except KeyError:
            raise PriceProfileError(f"price profile {self.name!r} has no item {item!r}{closest(item, self.usd)} "
                                    f"(items: {', '.join(sorted(self.usd))})") from None

    def check_items(self, items: Iterable[str], where: str) -> None:
        """Raise :class:`PriceProfileError` naming ``where`` unless every item is priced.

        :param items: billable items (e.g. a tool's declared bill)
        :param where: what declared them (for the message)
        """
        for item in items:
            if item not in self.usd:
                raise PriceProfileError(f"{where}: bills {item!r}, which price profile {self.name!r} does not "
                                        f"price{closest(item, self.usd)}; an api_call:<name> needs a sourced "
                                        "price in envs_data/prices/services.json")

    def units(self, bill: Mapping[str, float]) -> float:
        """The cost of ``bill`` (item -> quantity) in units of US$0.0001.

        :param bill: billed quantities
        """
        usd = self.usd
        return sum(quantity * (usd[item] if item in usd else self.price(item))
                   for item, quantity in bill.items() if quantity) / UNIT_DOLLARS

    def sandbox_bill(self, jobs: int) -> dict[str, float]:
        """What ``jobs`` sandbox jobs bill: ``sandbox_request`` per job and their GB-seconds.

        :param jobs: sandbox jobs run
        """
        return {"sandbox_request": float(jobs),
                "sandbox_gb_second": jobs * self.sandbox_seconds_per_job * self.sandbox_gb}

    def retrieval_bill(self, query_tokens: int) -> dict[str, float]:
        """What one RETRIEVE bills in this table's retrieval mode.

        :param query_tokens: estimated tokens of the query text (embedded in the ``index`` mode)
        """
        if self.retrieval_mode == "search":
            return {"search_query": 1.0}
        return {"index_query": 1.0, "embedding_token": float(query_tokens)}

    def as_dict(self) -> dict[str, Any]:
        """The table as plain data (run metadata): name, retrieval, billing parameters and US$ per item."""
        return {"name": self.name, "retrieval": self.retrieval, "retrieval_mode": self.retrieval_mode,
                "sandbox_seconds_per_job": self.sandbox_seconds_per_job, "sandbox_gb": self.sandbox_gb,
                "usd": {item: self.usd[item] for item in sorted(self.usd)}}

    def digest(self) -> str:
        """A hash of what the table charges (not of its sources): equal digests price every bill the same."""
        return hashlib.sha256(json.dumps({k: v for k, v in self.as_dict().items() if k != "name"},
                                         sort_keys=True).encode()).hexdigest()[:16]


def _number(value: Any, where: str, most: float = MAX_USD_PER_UNIT) -> float:
    """``value`` as a float; :class:`PriceProfileError` naming ``where`` unless it is a number in [0, ``most``]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= most:
        raise PriceProfileError(f"{where}: must be a finite number >= 0 and at most {most:g}, got {value!r:.40}")
    return float(value)


class PriceBook:
    """The price profiles of one folder (``envs_data/prices``), validated when loaded.

    :param folder: the folder of ``<profile>.json`` files
    :raises PriceProfileError: naming the file and field of anything malformed
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._raw: dict[str, dict[str, Any]] = {}
        for path in sorted(self.folder.glob("*.json")):
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise PriceProfileError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from None
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # bytes, digits or nesting past limits
                raise PriceProfileError(f"{path}: not read: {type(exc).__name__}: {str(exc)[:200]}") from None
            if not isinstance(raw, dict) or raw.get("profile") != path.stem:
                raise PriceProfileError(f"{path}: field 'profile' must be the file's name {path.stem!r}")
            self._raw[path.stem] = raw
        if not self._raw:
            raise PriceProfileError(f"{self.folder}: no price profiles (*.json)")
        self._entries = {name: self._parse_items(name) for name in self._raw}
        self.bases = tuple(n for n, r in self._raw.items() if "retrieval" in r)
        self.overlays = tuple(n for n, r in self._raw.items() if r.get("overlay") is True)
        for name in self.overlays:
            if self._raw[name].get("retrieval_mode") not in RETRIEVAL_MODES:
                raise PriceProfileError(f"{self._path(name)}: field 'retrieval_mode' must be one of "
                                        f"{RETRIEVAL_MODES}, got {self._raw[name].get('retrieval_mode')!r}")
        for name in self.bases:
            self.table(name)  # every base resolves, prices every base item and has its billing parameters

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def _parse_items(self, name: str) -> dict[str, PriceEntry]:
        items = self._raw[name].get("items", {})
        if not isinstance(items, dict):
            raise PriceProfileError(f"{self._path(name)}: field 'items' must be an object")
        out = {}
        for item, entry in items.items():
            where = f"{self._path(name)}: items.{item}"
            if item not in BASE_ITEMS and not item.startswith(API_PREFIX):
                raise PriceProfileError(f"{where}: unknown billable item{closest(item, BASE_ITEMS)} "
                                        f"(items: {', '.join(BASE_ITEMS)}, {API_PREFIX}<api>)")
            if not isinstance(entry, dict):
                raise PriceProfileError(f"{where}: must be an object with {_ENTRY_FIELDS}, got {type(entry).__name__}")
            missing = [f for f in _ENTRY_FIELDS if f not in entry]
            if missing:
                raise PriceProfileError(f"{where}: missing field(s) {missing} (every entry has {_ENTRY_FIELDS})")
            out[item] = PriceEntry(item, _number(entry["usd"], f"{where}.usd"), str(entry["per"]),
                                   str(entry["what"]), str(entry["source"]), str(entry["read"]), name)
        return out

    def _with_includes(self, name: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, PriceEntry], dict[str, Any]]:
        """Items and billing parameters of ``name`` after its includes (recursively, cycles refused)."""
        if name in seen:
            raise PriceProfileError(f"{self._path(name)}: include cycle {' -> '.join((*seen, name))}")
        items: dict[str, PriceEntry] = {}
        billing: dict[str, Any] = {}
        includes = self._raw[name].get("include", [])
        if not isinstance(includes, list) or not all(isinstance(inc, str) for inc in includes):
            raise PriceProfileError(f"{self._path(name)}: field 'include' must be a list of profile names")
        own_billing = self._raw[name].get("billing", {})
        if not isinstance(own_billing, dict):
            raise PriceProfileError(f"{self._path(name)}: field 'billing' must be an object")
        for inc in includes:
            if inc not in self._raw:
                raise PriceProfileError(f"{self._path(name)}: include {inc!r} is not a profile"
                                        f"{closest(inc, self._raw)}")
            got, got_billing = self._with_includes(inc, (*seen, name))
            items.update(got)
            billing.update(got_billing)
        items.update(self._entries[name])
        billing.update(own_billing)
        return items, billing

    @property
    def names(self) -> tuple[str, ...]:
        """Every ``BASE+OVERLAY`` combination of this folder, each base's default first."""
        out = []
        for base in self.bases:
            default = self._raw[base]["retrieval"]
            out += [base] + [f"{base}+{o}" for o in self.overlays if o != default]
        return tuple(out)

    def table(self, spec: str | Mapping[str, Any] | PriceTable | None = None) -> PriceTable:
        """The :class:`PriceTable` of a profile name (``BASE[+OVERLAY...]``), a dict of item -> US$ over the
        default profile (or over ``dict["profile"]``; the keys of :data:`BILLING_KEYS` set the billing
        parameters), a table (returned as it is) or ``None`` (the default profile).

        :param spec: what ``prices=`` was given
        :raises PriceProfileError: naming the unknown profile, overlay or item and the closest known ones
        """
        if isinstance(spec, PriceTable):
            return spec
        if spec is None:
            return self.table(DEFAULT_PROFILE)
        if isinstance(spec, Mapping):
            return self._from_dict(spec)
        if not isinstance(spec, str):
            raise TypeError(f"prices must be a profile name, a dict or a PriceTable, got {type(spec).__name__}")
        return self._named(spec.strip())

    def _named(self, name: str) -> PriceTable:
        base, *overlays = name.split("+")
        if base not in self.bases:
            kind = "a retrieval overlay" if base in self.overlays else "a fragment" if base in self._raw else ""
            what = f"{base!r} is {kind}, not a base profile" if kind else f"unknown price profile {base!r}"
            raise PriceProfileError(f"{what}{closest(base, self.bases)}; a profile is BASE[+OVERLAY...] with BASE "
                                    f"one of {', '.join(self.bases)} and OVERLAY one of {', '.join(self.overlays)}")
        for overlay in overlays:
            if overlay not in self.overlays:
                raise PriceProfileError(f"price profile {name!r}: unknown overlay {overlay!r}"
                                        f"{closest(overlay, self.overlays)} (overlays: {', '.join(self.overlays)})")
        entries, billing = self._with_includes(base)
        retrieval = self._raw[base]["retrieval"]
        if retrieval not in self.overlays:
            raise PriceProfileError(f"{self._path(base)}: field 'retrieval' names {retrieval!r}, which is not an "
                                    f"overlay{closest(retrieval, self.overlays)}")
        retrieval = next((o for o in reversed(overlays) if "retrieval_mode" in self._raw[o]), retrieval)
        for overlay in [retrieval, *(o for o in overlays if o != retrieval)]:
            entries.update(self._entries[overlay])
        missing = [i for i in BASE_ITEMS if i not in entries]
        if missing:
            raise PriceProfileError(f"price profile {name!r} ({self._path(base)} with its includes and overlays) "
                                    f"prices no {missing}")
        params = {}
        for key in BILLING_KEYS:
            if key not in billing or not isinstance(billing[key], dict) or "value" not in billing[key]:
                raise PriceProfileError(f"price profile {name!r}: no billing.{key}.value in {self._path(base)} or "
                                        "its includes")
            params[key] = _number(billing[key]["value"], f"price profile {name!r}: billing.{key}.value", MAX_BILLING[key])
        return PriceTable(name, entries, retrieval, self._raw[retrieval]["retrieval_mode"], **params)

    def _from_dict(self, prices: Mapping[str, Any]) -> PriceTable:
        base = self._named(str(prices.get("profile", DEFAULT_PROFILE)))
        entries = dict(base.entries)
        params = {"sandbox_seconds_per_job": base.sandbox_seconds_per_job, "sandbox_gb": base.sandbox_gb}
        for key, value in prices.items():
            if key == "profile":
                continue
            if key in BILLING_KEYS:
                params[key] = _number(value, f"prices[{key!r}]", MAX_BILLING[key])
            elif key in entries:
                entries[key] = PriceEntry(key, _number(value, f"prices[{key!r}]"), entries[key].per,
                                          entries[key].what, "given by the caller", "", "(given)")
            else:
                raise PriceProfileError(f"prices: unknown item {key!r}{closest(key, [*entries, *BILLING_KEYS])} "
                                        f"(items of {base.name!r}: {', '.join(sorted(entries))}; billing: "
                                        f"{', '.join(BILLING_KEYS)}; or 'profile')")
        given = {k: v for k, v in prices.items() if k != "profile"}
        name = f"{base.name}+{json.dumps(given, sort_keys=True)}" if given else base.name
        return PriceTable(name, entries, base.retrieval, base.retrieval_mode, **params)


@lru_cache(maxsize=8)
def price_book(folder: str) -> PriceBook:
    """The :class:`PriceBook` of a folder, loaded once per process.

    :param folder: the folder of price files
    """
    return PriceBook(Path(folder))


def price_table(prices: str | Mapping[str, Any] | PriceTable | None) -> PriceTable:
    """The :class:`PriceTable` of a ``prices=`` value: a profile name (``BASE[+OVERLAY...]``), a dict of item ->
    US$ over the default profile, a table, or ``None`` (the default profile, ``cheap-hosted``), from the shipped
    files in ``envs_data/prices``.

    :param prices: what ``prices=`` was given
    :raises ValueError: naming an unknown profile, overlay or item and the closest known ones
    """
    return price_book(str(data_path("prices"))).table(prices)


def price_profiles() -> tuple[str, ...]:
    """Every shipped price profile: each base profile at its default retrieval, then with each other retrieval
    overlay (``cheap-hosted``, ``cheap-hosted+web-search``, ...)."""
    return price_book(str(data_path("prices"))).names
