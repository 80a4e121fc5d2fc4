"""The answer normalisation and the bounded JSON reader equal the definitions they replace."""

from __future__ import annotations

import json
import re
import string

import numpy as np
import pytest

from harness_gym.core.intake import InputLimitError, loads_json
from harness_gym.domains import fictional_world
from harness_gym.domains.fictional_world import normalize_answer

_ALPHABET = list(string.ascii_letters + string.digits + string.punctuation + " \t\n\u00e9\u00c9\u0130\u00df\u2019\u00a0"
                 ) + ["the", "The ", " an", "A", "a-", "THE,", "\u212a"]


def _normalize_by_definition(text: str) -> str:
    text = text.lower()
    text = "".join(" " if ch in string.punctuation else ch for ch in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _texts(n: int, max_parts: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(_ALPHABET, size=int(rng.integers(0, max_parts)))) for _ in range(n)]


def test_normalize_answer_equals_the_definition_short_and_long() -> None:
    limit = fictional_world.NORMALIZED_MEMO_CHARS
    texts = _texts(6000, 40, 1) + _texts(300, 3 * limit, 2) + ["", " ", "a", "The Ärmel, an apple."]
    assert any(len(t) > limit for t in texts) and any(len(t) <= limit for t in texts)
    for text in texts:
        want = _normalize_by_definition(text)
        assert normalize_answer(text) == want, text
        assert normalize_answer(text) == want, text  # a second call (memo hit for a short text)


def _loads_by_definition(text: str, max_int_digits: int = 4300) -> object:
    def bounded_int(digits: str) -> int:
        if len(digits) - digits.startswith("-") > max_int_digits:
            raise InputLimitError("too many digits")
        return int(digits)

    return json.loads(text, parse_int=bounded_int)


def _outcome(read, text: str) -> tuple[str, object]:
    try:
        return "value", read(text)
    except json.JSONDecodeError as err:
        return "json", (err.msg, err.pos)
    except InputLimitError:
        return "limit", None


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": [1.5, -2, "x"], "c": null}', '[1, 2', '\ufeff{"a": 1}', ' {"a": 1} x', '"\\ud800"',
    '-12345678', '12345678', '[' + '1, ' * 50 + '1]', '{"a": {"b": {"c": [true, false]}}}', '', 'NaN', '1e999',
])
def test_loads_json_equals_json_loads_with_a_bounded_int(text: str) -> None:
    assert _outcome(lambda t: loads_json(t, max_int_digits=6), text) == _outcome(
        lambda t: _loads_by_definition(t, 6), text)
    assert _outcome(loads_json, text) == _outcome(_loads_by_definition, text)


def test_loads_json_after_a_refused_integer_reads_the_next_text_whole() -> None:
    with pytest.raises(InputLimitError):
        loads_json('{"a": "x", "b": 1234567}', max_int_digits=6)
    assert loads_json('{"a": "x", "b": 123456}', max_int_digits=6) == {"a": "x", "b": 123456}
    texts = _texts(2000, 30, 3)
    for text in texts:
        assert _outcome(loads_json, text) == _outcome(_loads_by_definition, text)


def _knowledge_signal_by_definition(domain, ctx) -> float:
    from harness_gym.domains.knowledge.datamodel import parse_record

    rec = parse_record(ctx.draft.content)
    values, cites = (rec or {}).get("values"), (rec or {}).get("citations")
    if not isinstance(values, dict) or not isinstance(cites, dict):
        return -1.0
    seen = set(ctx.retrieved)
    for _, result in ctx.tool_history:
        if result.ok:
            seen.update(re.findall(r"kn-s[0-9]{4}", result.output))
    for field, value in values.items():
        if cites.get(field) not in seen or not domain.sources.states(cites.get(field), value):
            return -1.0
    return 1.0


def test_knowledge_draft_signal_equals_its_definition_on_random_episodes() -> None:
    import gymnasium as gym

    env = gym.make("HarnessKnowledge-v1")
    henv = env.unwrapped
    rng = np.random.default_rng(11)
    signals = []
    for episode in range(40):
        _, info = env.reset(seed=episode)
        done = False
        while not done:
            allowed = np.flatnonzero(info["action_mask"])
            _, _, terminated, truncated, info = env.step(int(allowed[int(rng.random() * len(allowed))]))
            ctx = henv._ctx
            if ctx.draft is not None:
                got = henv.domain.knowledge_signal(ctx.task, ctx)
                assert got == _knowledge_signal_by_definition(henv.domain, ctx)
                signals.append(got)
            done = terminated or truncated
    assert {-1.0, 1.0} <= set(signals)
    env.close()
