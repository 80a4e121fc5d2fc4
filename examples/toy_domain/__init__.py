"""The smallest complete domain: tasks "add a and b", one tool, a checker that verifies only the parity of the
answer and a grader that verifies its value (so ``a + b + 2`` passes CHECK and fails SUBMIT: a support ceiling).

Files, one role each (the layout every domain in ``harness_gym/domains`` follows):

- ``tasks.jsonl``, ``corpus.jsonl``: the data (tasks in the shared task-file format, the retrieval corpus);
- ``profiles/toy.json``, ``prompts/toy.json``: the simulated worker's profile and the prompts, found through the
  domain's assets folder (:attr:`~harness_gym.core.domain.Domain.assets_dir`, this folder);
- ``tools.py``: the tool specs and what each tool does;
- ``checker.py``: what CHECK verifies; ``grader.py``: the hidden quality;
- ``domain.py``: the :class:`~harness_gym.core.domain.Domain` that ties them together, and its cached loader;
- ``env.py``: the Gymnasium env class (the docstring sections Gymnasium envs carry).

Register it with one line (docs/extending.md, "A new domain")::

    harness_gym.register_env("HarnessToy", "examples.toy_domain.env:HarnessToyEnv")
"""
