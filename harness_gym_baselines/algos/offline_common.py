"""What the offline trainers (:mod:`harness_gym_baselines.algos.bc`, :mod:`harness_gym_baselines.algos.awr`,
:mod:`harness_gym_baselines.algos.iql`, :mod:`harness_gym_baselines.algos.cql`) share: seeding, minibatches, the
(weighted) likelihood fit of the logged actions, the TensorBoard run (mirrored to Weights & Biases with
``wandb=True`` when wandb is installed), the progress bar, and the final save and evaluation.

Run names are ``{env_id}__{algo}[-{variant}]__{seed}__{time}`` (``algo`` names the estimator, e.g. ``awr-q``;
``variant`` is the config's label, e.g. ``ablation``). The returned controller's ``report`` holds the run
folder, the last value of every ``losses/`` scalar and the final evaluation summary; ``harness-gym train``
prints them.

A trainer is one module with a flat config dataclass, ``train(cfg, data=None)`` and ``load(path)``, named in
:data:`harness_gym_baselines.common.trainer_registry.TRAINERS`; the command line builds its flags from the
dataclass. ``cfg`` below is an offline trainer's config (``BCConfig``, ``AWRConfig``, ``IQLConfig``,
``CQLConfig``: ``dataset_id``, ``out``, ``seed``, ``batch_size``, ``hidden_sizes``, the evaluation and logging
fields). Seeding is :mod:`harness_gym_baselines.algos.seeding`, shared with the online trainers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from typing import Any, TypeVar

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from harness_gym.datasets import Transitions, load_transitions
from harness_gym_baselines.algos.seeding import seed_everything
from harness_gym_baselines.evaluate import evaluate
from harness_gym_baselines.policies.learned import MLP, LearnedPolicy, action_log_prob, save_model, trained_on_data


def as_tensors(data: Transitions) -> dict[str, torch.Tensor]:
    """The transitions as torch tensors: observations, actions, action masks, returns and, where the data has
    them, the one-step columns ``rewards``, ``next_obs``, ``terminals`` (float, 1.0 where terminal) and
    ``next_masks``."""
    t = {"obs": torch.as_tensor(data.observations), "actions": torch.as_tensor(data.actions),
         "masks": torch.as_tensor(data.action_masks), "returns": torch.as_tensor(data.returns)}
    one_step = {"rewards": data.rewards, "next_obs": data.next_observations, "terminals": data.terminals}
    t.update({key: torch.as_tensor(column, dtype=torch.float32) for key, column in one_step.items()
              if column is not None})
    if data.next_action_masks is not None:
        t["next_masks"] = torch.as_tensor(data.next_action_masks)
    return t


def require_columns(t: dict[str, torch.Tensor], keys: Iterable[str], algo: str) -> None:
    """Raise ``ValueError`` naming the one-step columns (:func:`as_tensors`) that ``algo`` needs and the data lacks.

    :param t: the transitions' tensors
    :param keys: the columns needed, e.g. ``("rewards", "next_obs", "terminals")``
    :param algo: the trainer, for the message
    """
    missing = [key for key in keys if key not in t]
    if missing:
        raise ValueError(f"{algo} learns from one-step transitions, and the data has no {', '.join(missing)}: load "
                         "the dataset with harness_gym.datasets.load_transitions or give Transitions those columns")


def polyak_update(nets: Iterable[torch.nn.Module], targets: Iterable[torch.nn.Module], rate: float) -> None:
    """Move each target network's parameters a fraction ``rate`` towards its online network's."""
    with torch.no_grad():
        for net, target in zip(nets, targets):
            for p, p_target in zip(net.parameters(), target.parameters()):
                p_target.lerp_(p, rate)


def taken(q_values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Q(s, a) of the logged actions from the (N, A) action values."""
    return q_values.gather(1, actions.unsqueeze(1)).squeeze(1)


def check_ranges(config: object, ranges: dict[str, tuple[bool, str]]) -> None:
    """Raise ``ValueError`` naming the first field of ``config`` whose range check failed.

    :param config: the trainer's config dataclass
    :param ranges: field name -> (whether its value is in range, the range in words)
    """
    for name, (ok, expected) in ranges.items():
        if not ok:
            raise ValueError(f"{type(config).__name__}.{name} must be {expected}, got {getattr(config, name)!r}")


def minibatches(rng: np.random.Generator, n: int, batch_size: int) -> list[torch.Tensor]:
    """One epoch of shuffled minibatch indices (about ``batch_size`` each)."""
    return [torch.as_tensor(i) for i in np.array_split(rng.permutation(n), max(1, n // batch_size))]


ItemT = TypeVar("ItemT")


def progress_bar(items: Iterable[ItemT], cfg: Any, what: str) -> Iterator[ItemT]:
    """``items`` with a tqdm bar (on stderr) named ``what`` when ``cfg.progress`` is set.

    :param items: the epochs
    :param cfg: the trainer's config (``progress``)
    :param what: what the epochs fit (``policy``, ``value``)
    """
    return iter(tqdm(items, desc=what, unit="epoch", leave=False, disable=not getattr(cfg, "progress", False)))


class RunWriter(SummaryWriter):
    """A TensorBoard ``SummaryWriter`` that remembers the last value of every scalar (for the final report)
    and finishes the W&B run, if one was started, when it closes.

    :param log_dir: the run's folder
    :param wandb_run: the W&B run mirroring this TensorBoard run, or ``None``
    """

    def __init__(self, log_dir: str, wandb_run: Any = None) -> None:
        super().__init__(log_dir)
        self.last_scalars: dict[str, float] = {}
        self.wandb_run = wandb_run

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, **kwargs: Any) -> None:
        self.last_scalars[tag] = float(scalar_value)
        super().add_scalar(tag, scalar_value, global_step, **kwargs)

    def close(self) -> None:
        super().close()
        if self.wandb_run is not None:
            self.wandb_run.finish()
            self.wandb_run = None


def run_name(cfg: Any, algo: str, env_id: str) -> str:
    """``{env_id}__{algo}[-{variant}]__{seed}__{time}``: the TensorBoard (and W&B) run name.

    :param cfg: the trainer's config (``seed`` and, if set, ``variant``)
    :param algo: the trainer with its estimator, e.g. ``awr-q``
    :param env_id: the env the dataset was collected on
    """
    variant = getattr(cfg, "variant", "")
    return f"{env_id}__{algo}{'-' + variant if variant else ''}__{cfg.seed}__{int(time.time())}"


def start_wandb(cfg: Any, name: str) -> Any:
    """Start a W&B run mirroring the TensorBoard scalars (``sync_tensorboard``), or say how to get wandb.

    :param cfg: the trainer's config (``wandb_project``)
    :param name: the run name
    """
    try:
        import wandb
    except ImportError as exc:
        raise ModuleNotFoundError("--wandb needs the wandb package (pip install wandb); without --wandb the run "
                                  "is logged to TensorBoard only", name="wandb") from exc
    return wandb.init(project=getattr(cfg, "wandb_project", "harness_gym"), name=name, config=asdict(cfg),
                      sync_tensorboard=True)


def start_run(cfg: Any, algo: str,
              data: Transitions | None) -> tuple[Transitions, RunWriter, dict[str, torch.Tensor]]:
    """Seed everything, load ``cfg.dataset_id`` unless ``data`` is given, open the TensorBoard run
    :func:`run_name` under ``cfg.log_dir`` (and the W&B run when ``cfg.wandb``); returns the data, the writer
    and the tensors.

    :param cfg: the trainer's config
    :param algo: the trainer with its estimator, e.g. ``awr-q``
    :param data: the transitions, or ``None`` to load ``cfg.dataset_id``
    """
    seed_everything(cfg.seed, cfg.torch_threads)
    data = data if data is not None else load_transitions(cfg.dataset_id)
    name = run_name(cfg, algo, data.env_id)
    wandb_run = start_wandb(cfg, name) if getattr(cfg, "wandb", False) else None
    writer = RunWriter(f"{cfg.log_dir}/{name}", wandb_run)
    writer.add_text("config", str(cfg))
    return data, writer, as_tensors(data)


def fit_policy(net: MLP, t: dict[str, torch.Tensor], weights: torch.Tensor | None, *, epochs: int,
               batch_size: int, learning_rate: float, seed: int, writer: SummaryWriter,
               progress: bool = False) -> int:
    """(Weighted) maximum likelihood of the logged actions: minimise ``-E[w * log pi(a|s)]`` with Adam over
    shuffled minibatches; ``weights=None`` is behaviour cloning (w = 1). Returns the number of steps.

    :param net: the policy network, trained in place
    :param t: the transitions (:func:`as_tensors`)
    :param weights: one weight per transition, or ``None``
    :param epochs: passes over the transitions
    :param batch_size: transitions per step
    :param learning_rate: Adam learning rate
    :param seed: seed of the minibatch order
    :param writer: TensorBoard writer (``losses/policy_loss``, ``charts/epoch``, ``charts/SPS``)
    :param progress: show a progress bar over the epochs with the latest loss
    """
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    order_rng = np.random.default_rng(seed)
    step, start = 0, time.time()
    bar = tqdm(range(epochs), desc="policy", unit="epoch", leave=False, disable=not progress)
    for epoch in bar:
        for idx in minibatches(order_rng, len(t["actions"]), batch_size):
            log_prob = action_log_prob(net(t["obs"][idx]), t["masks"][idx], t["actions"][idx])
            loss = -(log_prob if weights is None else weights[idx] * log_prob).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        writer.add_scalar("losses/policy_loss", loss.item(), step)
        bar.set_postfix(loss=f"{loss.item():.4f}")
        writer.add_scalar("charts/epoch", epoch, step)
        writer.add_scalar("charts/SPS", int(step * batch_size / (time.time() - start)), step)
    return step


def finish(cfg: Any, algo: str, net: MLP, data: Transitions, writer: SummaryWriter, step: int) -> LearnedPolicy:
    """Save the model file to ``cfg.out``, run the final evaluation (``cfg.eval_episodes`` on
    ``cfg.eval_split``) into ``eval/``, close the writer and return the controller, whose ``report`` holds the
    run folder, the final ``losses/`` values and the evaluation summary (``None`` without one)."""
    save_model(cfg.out, algo=algo, net=net, config=cfg, data=data, hidden_sizes=cfg.hidden_sizes)
    policy = LearnedPolicy(net, data.feature_names, name=algo, trained_on=trained_on_data(data))
    result = None
    if cfg.eval_episodes > 0:
        result = evaluate_and_log(writer, policy, data, episodes=cfg.eval_episodes, split=cfg.eval_split,
                                  seed=cfg.seed, step=step)
    last = writer.last_scalars if isinstance(writer, RunWriter) else {}
    policy.report = {"run_dir": writer.log_dir, "losses": {tag.removeprefix("losses/"): value
                                                              for tag, value in last.items()
                                                              if tag.startswith("losses/")},
                     "eval": result}
    writer.close()
    return policy


def evaluate_and_log(writer: SummaryWriter, policy: LearnedPolicy, data: Transitions, *, episodes: int,
                     split: str, seed: int, step: int) -> dict[str, Any]:
    """Evaluate ``policy`` on the dataset's env and log quality, success, HMS and patterns under ``eval/``."""
    result = evaluate(data.env_id, policy, episodes=episodes, split=split, seed=seed, env_kwargs=data.env_kwargs)
    writer.add_scalar("eval/quality", result["quality_mean"], step)
    writer.add_scalar("eval/success_rate", result["success_rate"], step)
    writer.add_scalar("eval/hms", result["hms_mean"], step)
    for name, rate in result["patterns"].items():
        writer.add_scalar(f"eval/{name}", rate, step)
    return result
