"""AgentBench DB-Bench as a Harness MDP: SQL tasks on a live database, graded as the benchmark grades them."""
