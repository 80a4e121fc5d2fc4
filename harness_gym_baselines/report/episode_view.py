"""Episodes as step-by-step HTML: the one renderer of ``harness-gym view`` and of the report's examples.

An *episode record* is a JSON-ready dict::

    {"env_id", "policy", "split", "seed", "task_id", "prompt", "quality", "success", "hms",
     "forced_submit", "cost", "source",
     "steps": [{"action", "invalid", "text", "draft", "reward", "cost", "budget_left"}, ...]}

``text`` is what the env reported for the step (its ``render()`` line: what a tool returned, the check's
feedback, the grade), ``draft`` the worker's draft after a DRAFT or REVISE, ``cost`` the step's cost units.
An episode an outer time limit cut short was never graded: its ``quality`` and ``hms`` are ``None``. Fields a
source does not hold are ``None`` (a Minari dataset stores actions, rewards and the per-step infos
it was collected with, not the worker's text) and are rendered as "not recorded".

Sources: :class:`EpisodeRecorder` (a wrapper that records every episode played through it; ``harness-gym
eval --save-episodes FILE`` writes them with :func:`save_episodes`), :func:`load_episodes` (such a file) and
:func:`dataset_episodes` (a Minari dataset id or path written by ``harness-gym collect``).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from harness_gym.core.actions import Action

EPISODES_FORMAT = "harness_gym.episodes/1"


class EpisodeRecorder(gym.Wrapper):
    """Records every episode played through it as an episode record (module docstring) in ``episodes``.
    Make the env with ``render_mode="ansi"`` to record the step texts (otherwise ``text`` is ``None``).

    :param env: a harness env
    :param policy: the controller's name, stored in each record
    """

    def __init__(self, env: gym.Env, policy: str = ""):
        super().__init__(env)
        self.policy = policy
        self.episodes: list[dict[str, Any]] = []
        self._current: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        henv = self.env.unwrapped
        self._current = {"env_id": self.env.spec.id if self.env.spec else type(henv).__name__,
                         "policy": self.policy, "split": info.get("split"), "seed": seed,
                         "task_id": info.get("task_id"), "prompt": henv.task.prompt, "source": "played",
                         "steps": []}
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        henv = self.env.unwrapped
        name = info["action_name"]
        draft = henv.context.draft
        wrote = (draft.content if name in ("DRAFT", "REVISE") and not info["invalid_action"] and draft is not None
                 else None)
        if self._current is not None:
            self._current["steps"].append({"action": name, "invalid": bool(info["invalid_action"]),
                                           "text": self.env.render(), "draft": wrote, "reward": float(reward),
                                           "cost": float(info["cost"]["units"]),
                                           "budget_left": int(info["budget_left"])})
            if terminated or truncated:
                graded = terminated  # cut by an outer time limit: the pending -1.0 is no score
                self._current.update(quality=float(info["quality"]) if graded else None,
                                     success=bool(info["success"]),
                                     hms=_num(info["hms"]) if graded else None,
                                     forced_submit=bool(info["forced_submit"]),
                                     cost=float(sum(s["cost"] for s in self._current["steps"])))
                self.episodes.append(self._current)
                self._current = None
        return obs, reward, terminated, truncated, info


def _num(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def save_episodes(path: str | Path, episodes: Sequence[dict[str, Any]], **meta: Any) -> Path:
    """Write episode records to a JSON file that :func:`load_episodes` and ``harness-gym view`` read.

    :param path: the file
    :param episodes: episode records
    :param meta: run settings stored beside them (env id, policy, split, seed, ...)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": EPISODES_FORMAT, **meta, "episodes": list(episodes)}, indent=1))
    return path


def load_episodes(path: str | Path) -> list[dict[str, Any]]:
    """The episode records of a file written by :func:`save_episodes`; a clear error for any other JSON.

    :param path: the file
    """
    path = Path(path)
    try:
        blob = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(blob, dict) or blob.get("format") != EPISODES_FORMAT:
        raise ValueError(f"{path}: not an episodes file (expected a JSON object with \"format\": "
                         f"\"{EPISODES_FORMAT}\", as harness-gym eval --save-episodes writes)")
    episodes = blob.get("episodes")
    if not isinstance(episodes, list):
        raise ValueError(f"{path}: field \"episodes\" must be a list")
    for i, ep in enumerate(episodes):
        if not isinstance(ep, dict) or not isinstance(ep.get("steps"), list):
            raise ValueError(f"{path}: episodes[{i}] has no \"steps\" list")
    return episodes


def dataset_episodes(dataset: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Episode records of a Minari dataset written by ``harness-gym collect`` (an id, or the path of its
    folder); the worker's text is not stored in a dataset, so ``text`` and ``draft`` are ``None`` unless the
    dataset was collected with those info keys.

    :param dataset: a dataset id or folder
    :param limit: the first episodes only
    """
    import minari

    from harness_gym.datasets import episode_infos, episode_outcomes

    path = Path(dataset)
    ds = minari.load_dataset(str(path.resolve()) if path.is_dir() else dataset)
    env_id = ds.spec.env_spec.id if ds.spec.env_spec is not None else "?"
    out = []
    for k, (ep, outcome) in enumerate(zip(ds.iterate_episodes(), episode_outcomes(ds))):
        if limit is not None and k >= limit:
            break
        infos = episode_infos(ep.infos)
        steps = []
        for t, action in enumerate(ep.actions):
            info = infos[t + 1] if t + 1 < len(infos) else {}
            cost = info.get("cost")
            steps.append({"action": Action(int(action)).name, "invalid": bool(info.get("invalid_action", False)),
                          "text": None, "draft": None, "reward": float(ep.rewards[t]),
                          "cost": float(cost["units"]) if isinstance(cost, dict) and "units" in cost else None,
                          "budget_left": int(info["budget_left"]) if "budget_left" in info else None})
        costs = [s["cost"] for s in steps]
        out.append({"env_id": env_id, "policy": ds.storage.metadata.get("algorithm_name"), "split": outcome.get("split"),
                    "seed": None, "task_id": outcome.get("task_id"), "prompt": None,
                    "quality": float(outcome["quality"]), "success": bool(outcome["success"]),
                    "hms": _num(outcome["hms"]), "forced_submit": bool(outcome.get("forced_submit", False)),
                    "cost": None if any(c is None for c in costs) else float(sum(costs)),
                    "source": f"dataset {ds.spec.dataset_id}, episode {int(ep.id)}", "steps": steps})
    return out


def load_run(run: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Episode records of ``run``: an episodes JSON file (:func:`save_episodes`), or a Minari dataset id or
    folder; an error naming ``run`` when it is neither.

    :param run: what ``harness-gym view`` was given
    :param limit: at most this many episodes
    """
    path = Path(run)
    if path.is_file():
        episodes = load_episodes(path)
        return episodes[:limit] if limit is not None else episodes
    if not path.exists():
        from minari.storage.datasets_root_dir import get_dataset_path

        if not (get_dataset_path(run) / "data").exists():
            raise ValueError(f"{run}: no such file, and no local Minari dataset of that id (under "
                             f"{get_dataset_path()}); expected an episodes file (harness-gym eval --save-episodes) "
                             "or a dataset of harness-gym collect")
    try:
        return dataset_episodes(run, limit)
    except (FileNotFoundError, ValueError) as exc:
        raise ValueError(f"{run}: neither an episodes file (harness-gym eval --save-episodes) nor a Minari "
                         f"dataset id or folder ({exc})") from None


# ----- HTML -----------------------------------------------------------------------------------------------
STYLE = """
.episode{border:1px solid #ccc;border-radius:6px;margin:1em 0;padding:.6em 1em;background:#fff}
.episode h3{margin:.2em 0 .4em 0;font-size:1.05em}
.episode .meta{color:#444;font-size:.9em;margin-bottom:.5em}
.episode table.steps{border-collapse:collapse;width:100%;font-size:.88em}
.episode table.steps th,.episode table.steps td{border-top:1px solid #e3e3e3;padding:.25em .4em;
  vertical-align:top;text-align:left}
.episode td.act{font-weight:bold;white-space:nowrap}
.episode tr.invalid td.act{color:#a00}
.episode td.cost,.episode td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.episode pre{margin:.2em 0;white-space:pre-wrap;background:#f6f6f6;padding:.3em;max-height:14em;overflow:auto}
.episode .fail{color:#a00}.episode .pass{color:#070}.episode .missing{color:#888;font-style:italic}
"""


def _text_cell(text: str | None) -> str:
    if text is None:
        return '<span class="missing">not recorded</span>'
    css = ("fail" if text.startswith("CHECK: FAIL") or "-> ERROR" in text else
           "pass" if text.startswith("CHECK: pass") else "")
    return f'<span class="{css}">{html.escape(text)}</span>' if css else html.escape(text)


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def episode_html(ep: dict[str, Any], title: str | None = None) -> str:
    """One episode as an HTML fragment: a header with the outcome, then one table row per step (action,
    what the env reported: tool result, check feedback, grade; what the worker wrote; cost; reward).

    :param ep: an episode record (module docstring)
    :param title: the heading (default: policy on env, task)
    """
    heading = title or f"{ep.get('policy') or '?'} on {ep.get('env_id')} — task {ep.get('task_id')}"
    meta = (f"quality {_fmt(ep.get('quality'))} · success {ep.get('success')} · HMS {_fmt(ep.get('hms'))} · "
            f"forced submit {ep.get('forced_submit')} · cost {_fmt(ep.get('cost'), '.2f')} units · "
            f"{len(ep['steps'])} steps · split {ep.get('split')} · seed {ep.get('seed')} · {ep.get('source', '')}")
    rows = []
    for i, step in enumerate(ep["steps"], start=1):
        wrote = (f"<pre>{html.escape(step['draft'])}</pre>" if step.get("draft") else
                 '<span class="missing">not recorded</span>' if step.get("draft") is None and step.get("text") is None
                 else "")
        rows.append(f'<tr class="{"invalid" if step.get("invalid") else ""}"><td class="num">{i}</td>'
                    f'<td class="act">{html.escape(step["action"])}{" (no-op)" if step.get("invalid") else ""}</td>'
                    f'<td>{_text_cell(step.get("text"))}</td><td>{wrote}</td>'
                    f'<td class="cost">{_fmt(step.get("cost"), ".2f")}</td>'
                    f'<td class="num">{_fmt(step.get("reward"))}</td>'
                    f'<td class="num">{"" if step.get("budget_left") is None else step["budget_left"]}</td></tr>')
    prompt = (f"<details><summary>task prompt</summary><pre>{html.escape(ep['prompt'])}</pre></details>"
              if ep.get("prompt") else "")
    return (f'<div class="episode"><h3>{html.escape(heading)}</h3><div class="meta">{html.escape(meta)}</div>'
            f'{prompt}<table class="steps"><thead><tr><th>#</th><th>action</th><th>env feedback (tool result, '
            f'check, grade)</th><th>what the worker wrote</th><th>cost (units)</th><th>reward</th><th>budget left'
            f'</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def episodes_page(episodes: Sequence[dict[str, Any]], title: str) -> str:
    """A self-contained HTML page of episodes (``harness-gym view``).

    :param episodes: episode records
    :param title: the page title
    """
    body = "".join(episode_html(ep) for ep in episodes) or "<p>No episodes.</p>"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>body{{font-family:sans-serif;max-width:1200px;margin:1em auto;background:#fafafa}}{STYLE}'
            f'</style></head><body><h1>{html.escape(title)}</h1><p>{len(episodes)} episode(s).</p>{body}'
            "</body></html>")
