"""The fingerprint of a reference-budget configuration: a stable hash of data by its values alone (tasks, corpus,
tools, worker profile, prompts, step budget, action costs), under which ``envs_data/budgets.json`` stores a budget
(:mod:`harness_gym.budget.rule`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from harness_gym.budget.rule import RULE_VERSION

_DATACLASS_LAYOUTS: dict[type, tuple[str, Callable[[Any], tuple[Any, ...]]]] = {}
"""dataclass -> (its tag: its name and compared fields, ``"Task(task_id,split,...)"``; a getter of their values)"""


def _dataclass_layout(cls: type) -> tuple[str, Callable[[Any], tuple[Any, ...]]]:
    layout = _DATACLASS_LAYOUTS.get(cls)
    if layout is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.compare)
        getter = attrgetter(*names) if len(names) > 1 else lambda obj: tuple(getattr(obj, n) for n in names)
        layout = _DATACLASS_LAYOUTS[cls] = (f"{cls.__name__}({','.join(names)})", getter)
    return layout


class _Canonical:
    """The canonical JSON text of data (:func:`fingerprint`), written by the C JSON encoder in one pass: JSON
    scalars, lists and tuples (one kind: a JSON array) and dicts with str keys as they are, keys sorted; the
    encoder's ``default`` hook writes everything else as JSON it then encodes:

    - a dataclass: ``[tag, [field values]]``, its compared fields only (not, e.g., a task's source file), the tag
      naming the class and those fields;
    - any other mapping: a dict; a set: ``["set", sorted strs]`` of str elements, else ``["set*", sorted JSON texts
      of the elements]``;
    - an object with a ``__dict__``: ``[class name, "#" + SHA-256 of the canonical JSON of its attributes]``
      without those its class names in ``CACHE_ATTRIBUTES`` (or only those it names in
      ``FINGERPRINT_ATTRIBUTES``, when it names them), hashed once per call (by identity: data such an object
      holds, e.g. a store shared by many tasks, costs one pass);
    - a dict whose keys are not all str (or cannot be sorted) makes the encoder fail: that part (the whole, or
      the attributes of one object) is written again from :meth:`plain`, where such keys are ``str(key)``.

    Equal data gives equal text whichever objects it shares (a namedtuple is a tuple: a list). Different data
    may share a text where the fingerprinted inputs never put both kinds in one place: a dataclass and the list
    of its tag and values, a set and the list ``["set", ...]``; a non-str key is written as the encoder writes it
    (``true``) where its dict encodes whole, as ``str(key)`` (``True``) where the dict goes through :meth:`plain`."""

    def __init__(self) -> None:
        # no check for cycles (data that holds itself is refused by the encoder's recursion limit instead)
        self.encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=self.default,
                                        check_circular=False)
        self.objects: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept so its id stays unique; its hash)

    def text(self, obj: Any) -> str:
        """The canonical JSON of ``obj``."""
        try:
            return self.encoder.encode(obj)
        except TypeError:  # keys that are not str; a type that cannot be fingerprinted raises from plain() too
            return self.encoder.encode(self.plain(obj))

    def default(self, obj: Any) -> Any:
        kind = type(obj)
        layout = _DATACLASS_LAYOUTS.get(kind)
        if layout is not None or (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
            tag, values = layout or _dataclass_layout(kind)
            return [tag, values(obj)]
        if isinstance(obj, Mapping):
            return dict(obj)
        if isinstance(obj, (set, frozenset)):
            if all(type(item) is str for item in obj):
                return ["set", sorted(obj)]
            return ["set*", sorted(self.text(item) for item in obj)]
        if hasattr(obj, "__dict__"):
            held = self.objects.get(id(obj))
            if held is None:
                attrs = vars(obj)
                named = getattr(kind, "FINGERPRINT_ATTRIBUTES", None)
                if named is not None:
                    state = {k: attrs[k] for k in named}
                else:
                    caches = getattr(kind, "CACHE_ATTRIBUTES", ())
                    state = {k: v for k, v in attrs.items() if k not in caches}
                held = self.objects[id(obj)] = (obj, "#" + hashlib.sha256(self.text(state).encode()).hexdigest())
            return [kind.__name__, held[1]]
        raise TypeError(f"cannot fingerprint a {kind.__name__}")

    def plain(self, obj: Any) -> Any:
        """``obj`` as JSON data the encoder takes whole: what :meth:`default` makes of each part, applied all the
        way down, with every dict's keys made str when they are not all str."""
        kind = type(obj)
        if kind in (str, int, float, bool) or obj is None:
            return obj
        if isinstance(obj, (list, tuple)):
            return [self.plain(item) for item in obj]
        if isinstance(obj, (str, int, float)):
            return obj
        if kind is not dict:
            obj = self.default(obj)
            if type(obj) is not dict:
                return self.plain(obj)
        if all(type(k) is str for k in obj):
            return {k: self.plain(v) for k, v in obj.items()}
        return {str(k): self.plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}


def fingerprint(*parts: Any) -> str:
    """A stable hash of ``parts`` (the same on every machine and Python hash seed): the SHA-256 of their canonical
    JSON (see :class:`_Canonical`: mappings by key, sets sorted, dataclass fields that take no part in comparison
    left out). An object's attributes that its class names in ``CACHE_ATTRIBUTES`` (results kept from its data,
    filled as it is used) are not part of it; a class whose data carries its own content hash, taken when the
    object is made and never changed, names in ``FINGERPRINT_ATTRIBUTES`` the attributes that determine all
    the others (the hash among them), and only those are part of it.

    :param parts: data (dataclasses, mappings, sequences, sets, scalars, objects)
    """
    text = _Canonical().text([RULE_VERSION, *parts])
    return hashlib.sha256(text.encode()).hexdigest()[:20]
