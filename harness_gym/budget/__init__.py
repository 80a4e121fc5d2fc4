"""The cost budget of ``budget_units="auto"`` in one place: the rule, the reference runs it plays, the fingerprint
of what they depend on, and the command that precomputes them (docs/cost.md, "The cost budget").

- :mod:`~harness_gym.budget.rule`: the rule (its version, seed and factor) and the precomputed budgets of the
  shipped profiles (``envs_data/budgets.json``);
- :mod:`~harness_gym.budget.references`: the reference controllers (random, static, forced-check, thorough, the
  oracle) and the normalised score they define; the rule plays four of them;
- :mod:`~harness_gym.budget.fingerprint`: the stable hash of a configuration under which a budget is stored;
- :mod:`~harness_gym.budget.resolve`: the rule applied to one env (what :class:`~harness_gym.env.HarnessEnv`'s
  ``budget_units``, ``budget_rule``, ``settings`` and ``reference_*`` return);
- ``python -m harness_gym.budget`` (:mod:`harness_gym.budget.__main__`): writes or checks ``envs_data/budgets.json``.

Everything here but the command sits below the env (it imports ``core`` and ``workers``; the env imports it). The
command is a program above the env: it makes every registered env, and nothing imports it.
"""
