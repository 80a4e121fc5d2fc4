"""``python -m harness_gym_baselines.cli ARGS``: the same as ``harness-gym ARGS``."""

import sys

from harness_gym_baselines.cli import main

sys.exit(main())
