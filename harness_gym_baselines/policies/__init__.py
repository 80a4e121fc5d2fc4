"""Controllers: the scripted harnesses, the behaviour mixture, learned model files, SB3 zips and the policy registry."""
