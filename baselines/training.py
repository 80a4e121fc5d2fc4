"""What the offline trainers (:mod:`baselines.bc`, :mod:`baselines.awr`) share: seeding, minibatches, the
(weighted) likelihood fit of the logged actions, the TensorBoard run, and the final save and evaluation.

A trainer is one module with a dataclass ``Config`` and ``train(cfg, data=None)``, named in
:data:`baselines.trainers.TRAINERS`; the command line builds its flags from the dataclass.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from baselines.evaluate import evaluate
from baselines.learned import MLP, LearnedPolicy, action_log_prob, save_model
from harness_gym.datasets import Transitions, load_transitions


def seed_everything(seed: int, torch_threads: int) -> None:
    """Seed ``random``, ``numpy`` and ``torch`` and fix torch's CPU threads (results depend on them)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


def as_tensors(data: Transitions) -> dict[str, torch.Tensor]:
    """The transitions as torch tensors (observations, actions, action masks, returns)."""
    return {"obs": torch.as_tensor(data.observations), "actions": torch.as_tensor(data.actions),
            "masks": torch.as_tensor(data.action_masks), "returns": torch.as_tensor(data.returns)}


def minibatches(rng: np.random.Generator, n: int, batch_size: int) -> list[torch.Tensor]:
    """One epoch of shuffled minibatch indices (about ``batch_size`` each)."""
    return [torch.as_tensor(i) for i in np.array_split(rng.permutation(n), max(1, n // batch_size))]


def start_run(cfg: Any, algo: str,
              data: Transitions | None) -> tuple[Transitions, SummaryWriter, dict[str, torch.Tensor]]:
    """Seed everything, load ``cfg.dataset_id`` unless ``data`` is given, open the TensorBoard run
    ``{env_id}__{algo}__{seed}__{time}`` under ``cfg.log_dir``; returns the data, the writer and the tensors."""
    seed_everything(cfg.seed, cfg.torch_threads)
    data = data if data is not None else load_transitions(cfg.dataset_id)
    writer = SummaryWriter(f"{cfg.log_dir}/{data.env_id}__{algo}__{cfg.seed}__{int(time.time())}")
    writer.add_text("config", str(cfg))
    return data, writer, as_tensors(data)


def fit_policy(net: MLP, t: dict[str, torch.Tensor], weights: torch.Tensor | None, *, epochs: int,
               batch_size: int, learning_rate: float, seed: int, writer: SummaryWriter) -> int:
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
    """
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    order_rng = np.random.default_rng(seed)
    step, start = 0, time.time()
    for epoch in range(epochs):
        for idx in minibatches(order_rng, len(t["actions"]), batch_size):
            log_prob = action_log_prob(net(t["obs"][idx]), t["masks"][idx], t["actions"][idx])
            loss = -(log_prob if weights is None else weights[idx] * log_prob).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        writer.add_scalar("losses/policy_loss", loss.item(), step)
        writer.add_scalar("charts/epoch", epoch, step)
        writer.add_scalar("charts/SPS", int(step * batch_size / (time.time() - start)), step)
    return step


def finish(cfg: Any, algo: str, net: MLP, data: Transitions, writer: SummaryWriter, step: int) -> LearnedPolicy:
    """Save the model file to ``cfg.out``, run the final evaluation (``cfg.eval_episodes`` on
    ``cfg.eval_split``) into ``eval/``, close the writer and return the controller."""
    save_model(cfg.out, algo=algo, net=net, config=cfg, data=data, hidden_sizes=cfg.hidden_sizes)
    policy = LearnedPolicy(net, data.feature_names, name=algo)
    if cfg.eval_episodes > 0:
        evaluate_and_log(writer, policy, data, episodes=cfg.eval_episodes, split=cfg.eval_split, seed=cfg.seed,
                         step=step)
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
