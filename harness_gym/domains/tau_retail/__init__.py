"""τ-bench retail as a Harness MDP: the store (``store``), the retail tools (``tools``), drafts and the task data
they are judged against (``drafts``), what a ticket names (``ticket``), the plan checker (``checker``), the
benchmark reward (``grader``), wrong-plan candidates (``mutations``), the loaders of both public layouts
(``upstream``, ``v1_tasks``), the domain (``domain``), the env (``env``) and the synthetic-store generator
(``generate``)."""
