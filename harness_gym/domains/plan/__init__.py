"""Planning domain: meeting scheduling with hard and soft constraints (``HarnessPlan-v1``)."""
