"""Running episodes of the harness envs: one at a time, many at once, and as Stable-Baselines3 vector envs.

- :mod:`~harness_gym.running.rollout`: what a controller is (:class:`~harness_gym.running.rollout.Policy`), the
  reset seed of episode ``i`` of a run (``episode_seed``) and the one episode loop (``play_episode``);
- :mod:`~harness_gym.running.episode_jobs`: what one job of a concurrent run is (the episode function, the spec a
  slot builds its env and controller from, the error a failed job raises);
- :mod:`~harness_gym.running.parallel`: many episodes in processes or threads (``map_episodes``), or on Ray;
- :mod:`~harness_gym.running.ray_backend`: the Ray actors of ``backend="ray"`` (imported only then);
- :mod:`~harness_gym.running.sb3`: Stable-Baselines3 vector envs of the harness envs (the online trainers').

This room sits above the env (:mod:`harness_gym.env`), which imports nothing of it.
"""
