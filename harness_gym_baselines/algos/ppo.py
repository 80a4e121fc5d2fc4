"""PPO baselines of a harness controller, online: MaskablePPO on the terminal quality (``ppo-sparse``) or on
hand-shaped step rewards (``ppo-dense``).

Schulman et al., 2017, https://arxiv.org/abs/1707.06347, as sb3-contrib's ``MaskablePPO`` (Huang & Ontañón,
2020, https://arxiv.org/abs/2006.14171) with the env's action masks. These are the first two baselines the
evidence-calibrated method (:mod:`harness_gym_baselines.algos.ecpo`, docs/ecpo.md) is compared with:

- ``reward="sparse"``: the env's own reward, the task quality Q paid on the last step (minus the cost term
  when the env was built with a ``cost_weight``);
- ``reward="dense"``: the same plus the hand-shaped step rewards of the usual kind (the seed blog's
  "small reward for an import that works, a little more for syntactically correct code"), fixed before any
  run and read only from what the controller sees (the observation and ``info["evidence"]``):

  | event | shaped reward |
  |---|---|
  | an OBSERVE / RETRIEVE that revealed something | +0.02 |
  | a TOOL call that returned without an error | +0.05 |
  | a TOOL call that returned an error | -0.1 |
  | a DRAFT / REVISE whose content agrees with the knowledge base (``knowledge`` = +1) | +0.1 |
  | the first CHECK of a draft version, when it passes | +0.1 |
  | an inapplicable action (a no-op) | -0.05 |

What the three online trainers share (settings, the vector env, the periodic evaluation on the validation
split, the model file) is defined here; :mod:`harness_gym_baselines.algos.ecpo` extends it. The model file is an SB3 zip that
``harness-gym eval ENV --policy FILE`` runs (:mod:`harness_gym_baselines.policies.sb3_zip`).

Run ``harness-gym train ppo-sparse --env ENV --steps N --seed S --out FILE`` (or ``ppo-dense``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.actions import Action
from harness_gym.core.prices import DEFAULT_PROFILE
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import Episode, episode_seed, play_episode
from harness_gym.running.sb3 import make_sb3_vec_env
from harness_gym_baselines.algos.training import seed_everything
from harness_gym_baselines.common.options import (
    budget_units_value,
    check_env_kwargs,
    parse_key_values,
    prices_name,
    refuse_config_keywords,
)
from harness_gym_baselines.policies.sb3_zip import SB3Policy, load_sb3_policy
from harness_gym_baselines.policies.trained_on import TrainedOn

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


@dataclass
class OnlineConfig:
    """The settings every online trainer has; each field is a flag of ``harness-gym train NAME``."""

    env_id: str = field(default="HarnessResearchQA-v1", metadata={"flags": ("--env",), "required": True})
    """the env id to train on (episodes are drawn from its train split)"""
    steps: int = 40_000
    """environment steps of training (summed over the parallel envs); the default was chosen on the val split,
    the same for every env (docs/online_rl.md)"""
    out: str = "models/ppo.zip"
    """where the model (an SB3 zip) is written"""
    seed: int = 0
    """seed of random, numpy, torch, the envs and the evaluation episodes"""
    cost_weight: float = 0.0
    """the env's ``cost_weight`` (the reward then includes the cost term)"""
    prices: str = field(default=DEFAULT_PROFILE, metadata={"type": prices_name, "metavar": "PROFILE"})
    """the env's price profile BASE[+OVERLAY...] (docs/cost.md), which the cost term and the budget are billed at"""
    budget_units: float | str | None = field(default="auto", metadata={"type": budget_units_value,
                                                                       "metavar": "auto|none|UNITS"})
    """the env's cost budget per episode in units of US$0.0001: auto (twice the largest episode cost of the
    reference controllers at the profile's prices; none in the public-benchmark adapters; docs/cost.md), none (the
    step budget alone) or a number"""
    env_kwargs: tuple[str, ...] = field(default=(), metadata={"flags": ("--env-kwarg",), "repeat": True,
                                                                    "metavar": "KEY=VALUE"})
    """more keywords of the training and evaluation envs, KEY=VALUE (VALUE read as JSON when it parses; the flag
    repeated, --env-kwarg budget=40 --env-kwarg data_dir=PATH, as on every command)"""
    n_envs: int = field(default=4, metadata={"flags": ("--num-envs",)})
    """envs stepped together (a rollout step sends one worker call per env)"""
    vec_env: Literal["dummy", "subproc"] = "dummy"
    """"dummy": the envs step one after another in this process (SB3's DummyVecEnv); "subproc": one process
    each (:func:`harness_gym.running.sb3.make_sb3_vec_env`), so a live LLM worker's calls and slow tools
    overlap. Both give the same training for the same seed."""
    n_steps: int = 128
    """steps per env per rollout (a PPO update uses n_envs * n_steps transitions)"""
    batch_size: int = 128
    """transitions per minibatch"""
    n_epochs: int = 10
    """passes over each rollout (chosen on the val split with n_steps and steps, docs/online_rl.md)"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_range: float = 0.2
    """PPO clipping parameter"""
    ent_coef: float = 0.01
    """entropy bonus coefficient"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """widths of the policy's and the value's hidden layers"""
    eval_every: int = 4
    """run an evaluation on the validation split every this many PPO updates (0: none)"""
    eval_episodes: int = 30
    """episodes of each evaluation during training (the current policy, sampling as in training)"""
    final_eval_episodes: int = 50
    """episodes of the final evaluation of the trained (deterministic) policy on eval_split, which harness-gym
    train prints (0: none)"""
    eval_split: Literal["train", "val", "test", "ood"] = "val"
    """task split of the final evaluation"""
    progress: bool = True
    """show a progress bar over the training steps (on stderr)"""
    log_dir: str = "runs"
    """TensorBoard log folder (run name {env_id}__{algo}__{seed}__{time})"""
    torch_threads: int = 1
    """CPU threads torch may use"""


@dataclass
class PPOConfig(OnlineConfig):
    """The online settings plus which reward PPO maximises."""

    reward: Literal["sparse", "dense"] = "sparse"
    """the env's reward (sparse) or that plus the hand-shaped step rewards of the module docstring (dense)"""


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


def config_env_kwargs(cfg: OnlineConfig) -> dict[str, Any]:
    """:func:`env_constructor_kwargs` of an online trainer's settings: the keywords of its training and
    evaluation envs.

    :param cfg: the trainer's settings
    """
    return env_constructor_kwargs(cfg.env_id, cfg.cost_weight, cfg.env_kwargs, prices=cfg.prices,
                                  budget_units=cfg.budget_units)


def make_training_env(cfg: OnlineConfig) -> VecEnv:
    """The training env of ``cfg``: :func:`harness_gym.running.sb3.make_sb3_vec_env` with ``cfg.n_envs`` envs seeded from
    ``cfg.seed``, in this process (``vec_env="dummy"``) or one process each (``"subproc"``).

    :param cfg: the trainer's settings
    """
    kwargs = config_env_kwargs(cfg)
    return make_sb3_vec_env(cfg.env_id, cfg.n_envs, cfg.seed, kwargs, vec_env=cfg.vec_env)


def make_model(cfg: OnlineConfig, venv: VecEnv) -> MaskablePPO:
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


def run_name(cfg: OnlineConfig, algo: str) -> str:
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


class DenseShapingReward(TransitionRewardWrapper):
    """Adds the hand-shaped step rewards of the module docstring's table to the env's reward.

    Observations, dones and infos pass through untouched.

    :param venv: the training env
    """

    def transition_rewards(self, prev_obs: np.ndarray, actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray,
                           dones: np.ndarray, infos: list[dict]) -> np.ndarray:
        shaped = np.asarray(rewards, dtype=np.float32).copy()
        for i, info in enumerate(infos):
            shaped[i] += dense_step_reward(int(actions[i]), info, prev_obs[i], obs[i], bool(dones[i]))
        return shaped


def dense_step_reward(action: int, info: dict[str, Any], prev_obs: np.ndarray, obs: np.ndarray,
                      done: bool) -> float:
    """The hand-shaped reward of one step (the module docstring's table).

    :param action: the action taken
    :param info: the step's info
    :param prev_obs: the observation the action was taken in
    :param obs: the observation after the step (the next episode's first one when ``done``)
    :param done: the step ended the episode
    """
    if info["invalid_action"]:
        return -0.05
    act = Action(action)
    if act in (Action.OBSERVE, Action.RETRIEVE):
        return 0.02
    if act == Action.TOOL:
        return 0.05 if info["evidence"]["env"] >= 0 else -0.1
    if act in (Action.DRAFT, Action.REVISE):
        return 0.1 if info["evidence"]["knowledge"] > 0 else 0.0
    if act == Action.CHECK and not done and prev_obs[_F["checked_since_change"]] == 0:
        return 0.1 if obs[_F["last_check_result"]] > 0 else 0.0
    return 0.0


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


def learn_callbacks(cfg: OnlineConfig, callback: BaseCallback) -> list[BaseCallback]:
    """``callback`` with the progress bar of ``cfg.progress`` beside it (``model.learn(callback=...)``)."""
    return [callback, ProgressBarCallback(cfg.steps)] if cfg.progress else [callback]


def final_report(policy: SB3Policy, cfg: OnlineConfig, env_kwargs: dict[str, Any], log_dir: str) -> SB3Policy:
    """Set ``policy.report`` as the offline trainers do (:func:`harness_gym_baselines.algos.training.finish`):
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
    finally:
        settings_env.close()
    trained_on = TrainedOn(env_id=cfg.env_id, feature_names=FEATURE_NAMES,
                           observation_shape=tuple(model.observation_space.shape), settings=settings)
    model.harness_gym = {"algo": algo, **trained_on.record(), "config": asdict(cfg), **diagnostics}
    model.save(path)
    if path.suffix != ".zip":  # SB3 appends .zip to a path without it
        Path(f"{path}.zip").replace(path)
    return path


def train(cfg: PPOConfig, data: Any = None) -> SB3Policy:
    """Train MaskablePPO on the sparse or dense reward, save the zip to ``cfg.out`` and return the controller.

    :param cfg: the configuration
    :param data: must be ``None`` (an online trainer learns from the env, not from a dataset)
    """
    if data is not None:
        raise ValueError("ppo is an online trainer: it takes no dataset")
    algo = f"ppo-{cfg.reward}"
    seed_everything(cfg.seed, cfg.torch_threads)
    env_kwargs = config_env_kwargs(cfg)
    venv = make_training_env(cfg)
    if cfg.reward == "dense":
        venv = DenseShapingReward(venv)
    model = make_model(cfg, venv)
    log_dir = f"{cfg.log_dir}/{run_name(cfg, algo)}"
    model.set_logger(configure(log_dir, ["tensorboard"]))
    callback = ValidationEvalCallback(cfg.env_id, env_kwargs, eval_every=cfg.eval_every,
                                      episodes=cfg.eval_episodes, seed=cfg.seed)
    start = time.perf_counter()
    model.learn(total_timesteps=cfg.steps, callback=learn_callbacks(cfg, callback))
    train_seconds = time.perf_counter() - start
    venv.close()
    save_model(model, cfg, algo, eval_history=callback.history, train_seconds=train_seconds)
    return final_report(SB3Policy(model, name=algo), cfg, env_kwargs, log_dir)



def load(path: str | Path) -> SB3Policy:
    """The controller in a model file that :func:`train` wrote (:mod:`harness_gym_baselines.policies.sb3_zip`)."""
    return load_sb3_policy(path)
