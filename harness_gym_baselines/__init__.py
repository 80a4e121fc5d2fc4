"""Controllers, trainers, experiments and the ``harness-gym`` command for the harness_gym envs.

Rooms by role, each importing only from the rooms below it (``tests/test_architecture.py`` fails on an
upward import, also one inside a function)::

    cli/            the harness-gym command, one module per command group             (top)
    report/         reproduce, the report writer, statistics, the episode viewer
    experiments/    offline comparison, ECPO comparison, sim-to-real, reference scores, frontier,
                    the papers' claims (paper_claims.json)
    algos/          bc, awr, ppo (sparse, dense), ecpo and what they share
    evaluate.py     running a policy for N episodes and summarising it
    policies/       scripted, behaviour, learned model files, SB3 zips, the policy registry
    common/         option checks, dataclass-to-flags, the trainer registry             (bottom)

``evaluate`` is a layer of its own: every room above uses it (the trainers' final evaluation, the
experiments, the report's statistics, ``harness-gym eval``), and it resolves policy names through the policy
registry below it. A trainer's ``if __name__ == "__main__":`` block runs ``harness-gym train NAME`` as a program
through :func:`~harness_gym_baselines.common.trainer_registry.run_trainer`: no trainer imports the ``cli``, not even
there (the rule counts ``__main__`` blocks as well).
``harness_gym`` never imports this package.
"""
