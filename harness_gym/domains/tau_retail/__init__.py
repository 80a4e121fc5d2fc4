"""τ-bench retail as a Harness MDP: the store (``store``), the retail tools (``tools``), drafts and the
benchmark reward (``plan``), the plan verifier (``rules``), wrong-plan candidates (``candidates``), the
loaders of both public layouts (``data``), the domain (``domain``), the env (``env``) and the synthetic-store
generator (``generate``)."""
