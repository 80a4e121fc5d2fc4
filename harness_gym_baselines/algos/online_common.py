"""What the online trainers (:mod:`harness_gym_baselines.algos.ppo`, :mod:`harness_gym_baselines.algos.ecpo`) share:
the env keywords of their settings, the vector env they train on, the MaskablePPO learner, the TensorBoard run
name, a VecEnv wrapper that recomputes each step's reward, the periodic evaluation on the validation split, the
progress bar, the final evaluation and the model file (an SB3 zip with a ``harness_gym`` record, which
:mod:`harness_gym_baselines.policies.sb3_zip` loads).

``cfg`` below is an online trainer's config dataclass (``PPOConfig``, ``ECPOConfig``): ``env_id``, ``steps``,
``out``, ``seed``, ``cost_weight``, ``prices``, ``budget_units``, ``env_kwargs``, ``n_envs``, ``vec_env``, the PPO
settings, the evaluation settings, ``progress``, ``log_dir``, ``torch_threads``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.prices import DEFAULT_PROFILE
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import Episode, episode_seed, play_episode
from harness_gym.running.sb3 import make_sb3_vec_env
from harness_gym_baselines.common.options import check_env_kwargs, parse_key_values, refuse_config_keywords
from harness_gym_baselines.policies.sb3_zip import SB3Policy
from harness_gym_baselines.policies.trained_on import TrainedOn


def env_constructor_kwargs(env_id: str, cost_weight: float, env_kwargs: Sequence[str] = (), *,
                           prices: str = DEFAULT_PROFILE, budget_units: float | str | None = "auto"
                           ) -> dict[str, Any]:
    """Keyword arguments of ``gym.make(env_id, ...)``: ``cost_weight``, ``prices`` and ``budget_units`` (every
    harness env takes them) and the ``KEY=VALUE`` pairs of ``env_kwargs`` (checked against the env's keywords).

    :param env_id: a registered env id
    :param cost_weight: the weight of the cost term (0: none)
    :param env_kwargs: ``--env-kwarg`` pairs (e.g. ``worker=openai``, ``base_url=...``)
    :param prices: the price profile
    :param budget_units: the cost budget per episode (``"auto"``, ``None`` or a number of units)
    """
    gym.spec(env_id)  # a clear error for an unknown id
    extra = check_env_kwargs(env_id, parse_key_values(env_kwargs)) if env_kwargs else {}
    refuse_config_keywords(extra)
    return {"cost_weight": cost_weight, "prices": prices, "budget_units": budget_units, **extra}


def config_env_kwargs(cfg: Any) -> dict[str, Any]:
    """:func:`env_constructor_kwargs` of an online trainer's settings: the keywords of its training and
    evaluation envs.

    :param cfg: the trainer's settings
    """
    return env_constructor_kwargs(cfg.env_id, cfg.cost_weight, cfg.env_kwargs, prices=cfg.prices,
                                  budget_units=cfg.budget_units)


def make_training_env(cfg: Any) -> VecEnv:
    """The training env of ``cfg``: :func:`harness_gym.running.sb3.make_sb3_vec_env` with ``cfg.n_envs`` envs seeded from
    ``cfg.seed``, in this process (``vec_env="dummy"``) or one process each (``"subproc"``).

    :param cfg: the trainer's settings
    """
    kwargs = config_env_kwargs(cfg)
    return make_sb3_vec_env(cfg.env_id, cfg.n_envs, cfg.seed, kwargs, vec_env=cfg.vec_env)


def make_model(cfg: Any, venv: VecEnv) -> MaskablePPO:
    """The MaskablePPO learner with the settings of ``cfg``.

    :param cfg: the trainer's settings
    :param venv: the (wrapped) training env
    """
    arch = list(cfg.hidden_sizes)
    return MaskablePPO("MlpPolicy", venv, learning_rate=cfg.learning_rate, n_steps=cfg.n_steps,
                       batch_size=cfg.batch_size, n_epochs=cfg.n_epochs, gamma=cfg.gamma,
                       gae_lambda=cfg.gae_lambda, clip_range=cfg.clip_range, ent_coef=cfg.ent_coef,
                       policy_kwargs={"net_arch": {"pi": arch, "vf": arch}}, seed=cfg.seed, device="cpu",
                       verbose=0)


def run_name(cfg: Any, algo: str) -> str:
    """``{env_id}__{algo}__{seed}__{time}``, the TensorBoard run folder under ``cfg.log_dir``."""
    return f"{cfg.env_id}__{algo}__{cfg.seed}__{int(time.time())}"


def episode_return(episode: Episode) -> float:
    """The episode's task return: the sum of the env's rewards (Q minus the cost term)."""
    return float(sum(episode.rewards))


class TransitionRewardWrapper(VecEnvWrapper):
    """A VecEnv wrapper that recomputes each step's rewards from the whole transition (the observation the
    action was taken in, the action, what came back). Observations, dones and infos pass through untouched
    (the same objects the wrapped env returned); subclasses implement :meth:`transition_rewards`.

    :param venv: the training env
    """

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self._prev_obs: np.ndarray | None = None
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self._prev_obs = np.array(obs, copy=True)
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)
        self.venv.step_async(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, dones, infos = self.venv.step_wait()
        assert self._prev_obs is not None and self._actions is not None
        # DummyVecEnv hands rewards over as float32, SubprocVecEnv as float64: one dtype, one training
        rewards = np.asarray(rewards, dtype=np.float32)
        new_rewards = self.transition_rewards(self._prev_obs, self._actions, obs, rewards, dones, infos)
        self._prev_obs = np.array(obs, copy=True)
        return obs, new_rewards, dones, infos

    def transition_rewards(self, prev_obs: np.ndarray, actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray,
                           dones: np.ndarray, infos: list[dict]) -> np.ndarray:
        """The rewards the learner sees for one batch of steps.

        :param prev_obs: the observations the actions were taken in
        :param actions: the actions
        :param obs: the observations after the step (the next episode's first one where ``done``)
        :param rewards: the env's rewards
        :param dones: which envs ended an episode
        :param infos: the step infos
        """
        raise NotImplementedError


class ValidationEvalCallback(BaseCallback):
    """Every ``eval_every`` PPO updates (and once before training), plays ``episodes`` validation episodes
    with the current policy (sampling, as in training) and logs ``eval/val_success_rate``,
    ``eval/val_quality``, ``eval/val_return`` (the task return) and ``eval/val_hms``; the records are kept in
    :attr:`history`. Subclasses act on the episodes in :meth:`on_evaluation`.

    :param env_id: the env to evaluate on
    :param env_kwargs: its constructor keywords
    :param eval_every: PPO updates between evaluations (0: none)
    :param episodes: episodes per evaluation
    :param seed: the evaluation's seed (episode ``i`` resets with ``episode_seed(seed, i)``, the same tasks
        at every evaluation)
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], *, eval_every: int, episodes: int,
                 seed: int) -> None:
        super().__init__()
        self.env_id, self.env_kwargs = env_id, env_kwargs
        self.eval_every, self.episodes, self.seed = eval_every, episodes, seed
        self.history: list[dict[str, float]] = []
        self.updates = 0
        self.eval_seconds = 0.0
        self._env: gym.Env | None = None

    def _on_training_start(self) -> None:
        if self.eval_every > 0:
            self._evaluate()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        # called right before the PPO update of this rollout: the update count after it is updates + 1
        self.updates += 1
        if self.eval_every > 0 and self.updates % self.eval_every == 0:
            self._evaluate()

    def _on_training_end(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _evaluate(self) -> None:
        start = time.perf_counter()
        if self._env is None:
            self._env = gym.make(self.env_id, **self.env_kwargs)
        policy = SB3Policy(self.model, name="current", deterministic=False)
        episodes = [play_episode(self._env, policy, seed=episode_seed(self.seed, i), split="val")
                    for i in range(self.episodes)]
        finals = [e.final_info for e in episodes]
        hms = [f["hms"] for f in finals if not np.isnan(f["hms"])]
        record = {"timesteps": int(self.num_timesteps), "updates": self.updates,
                  "success_rate": float(np.mean([f["success"] for f in finals])),
                  "quality": float(np.mean([f["quality"] for f in finals])),
                  "return": float(np.mean([episode_return(e) for e in episodes])),
                  "hms": float(np.mean(hms)) if hms else float("nan")}
        self.on_evaluation(episodes, record)
        self.eval_seconds += time.perf_counter() - start
        record["eval_seconds"] = self.eval_seconds
        self.history.append(record)
        for key in ("success_rate", "quality", "return", "hms"):
            self.logger.record(f"eval/val_{key}", record[key])
        self.logger.dump(self.num_timesteps)

    def on_evaluation(self, episodes: list[Episode], record: dict[str, float]) -> None:
        """Hook for subclasses: act on an evaluation's episodes (``record`` may be extended).

        :param episodes: the validation episodes just played
        :param record: the evaluation's summary (added to :attr:`history`)
        """


class ProgressBarCallback(BaseCallback):
    """A tqdm bar (on stderr) over the training steps, like the offline trainers' bar over their epochs.

    :param total: the training steps
    """

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total
        self.bar: Any = None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, desc="training", unit="step", leave=False)

    def _on_step(self) -> bool:
        self.bar.update(self.num_timesteps - self.bar.n)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def learn_callbacks(cfg: Any, callback: BaseCallback) -> list[BaseCallback]:
    """``callback`` with the progress bar of ``cfg.progress`` beside it (``model.learn(callback=...)``)."""
    return [callback, ProgressBarCallback(cfg.steps)] if cfg.progress else [callback]


def final_report(policy: SB3Policy, cfg: Any, env_kwargs: dict[str, Any], log_dir: str) -> SB3Policy:
    """Set ``policy.report`` as the offline trainers do (:func:`harness_gym_baselines.algos.offline_common.finish`):
    the run folder, the last validation record and the final evaluation of the deterministic policy
    (``cfg.final_eval_episodes`` on ``cfg.eval_split``; ``None`` without one), which ``harness-gym train`` prints.

    :param policy: the trained controller
    :param cfg: the trainer's settings
    :param env_kwargs: the evaluation env's keywords (those of training)
    :param log_dir: the TensorBoard run folder
    """
    from harness_gym_baselines.evaluate import evaluate

    result = None
    if cfg.final_eval_episodes > 0:
        result = evaluate(cfg.env_id, policy, episodes=cfg.final_eval_episodes, split=cfg.eval_split,
                          seed=cfg.seed, env_kwargs=env_kwargs)
    policy.report = {"run_dir": log_dir, "losses": {}, "eval": result}
    return policy


def save_model(model: MaskablePPO, cfg: Any, algo: str, **diagnostics: Any) -> Path:
    """Write the model zip to ``cfg.out`` with a ``harness_gym`` attribute (algo, the record of the env it was
    trained on (:mod:`harness_gym_baselines.policies.trained_on`), the config and ``diagnostics``) that :mod:`harness_gym_baselines.policies.sb3_zip` reads back.

    :param model: the trained model
    :param cfg: the trainer's settings (a dataclass)
    :param algo: the trainer's name
    :param diagnostics: JSON-compatible training records (evaluation history, weights, ...)
    """
    path = Path(cfg.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    settings_env = gym.make(cfg.env_id, **config_env_kwargs(cfg))
    try:
        settings = settings_env.unwrapped.settings
        # the env's own layout: a tiered env's observation extends FEATURE_NAMES (harness_gym.tiered)
        feature_names = tuple(getattr(settings_env.unwrapped, "feature_names", FEATURE_NAMES))
    finally:
        settings_env.close()
    trained_on = TrainedOn(env_id=cfg.env_id, feature_names=feature_names,
                           observation_shape=tuple(model.observation_space.shape), settings=settings)
    model.harness_gym = {"algo": algo, **trained_on.record(), "config": asdict(cfg), **diagnostics}
    model.save(path)
    if path.suffix != ".zip":  # SB3 appends .zip to a path without it
        Path(f"{path}.zip").replace(path)
    return path
