"""The smallest complete domain: tasks "add a and b", one tool, a checker that verifies only the parity of the
answer and a grader that verifies its value (so ``a + b + 2`` passes CHECK and fails SUBMIT: a support ceiling).

Files, one role each (the layout every domain in ``harness_gym/domains`` follows):

- ``tasks.jsonl``, ``corpus.jsonl``, ``profile.json``: the data (tasks in the shared task-file format, the
  retrieval corpus, the simulated worker's profile);
- ``tools.py``: the tool specs and what each tool does;
- ``checker.py``: what CHECK verifies; ``grader.py``: the hidden quality;
- ``domain.py``: the :class:`~harness_gym.core.domain.Domain` that ties them together, and its cached loader;
- ``env.py``: the Gymnasium env class (the docstring sections Gymnasium envs carry).

Register it with one line (docs/extending.md, "A new domain")::

    gymnasium.register(id="HarnessToy-v1", entry_point="examples.toy_domain.env:HarnessToyEnv",
                       max_episode_steps=100)
"""
