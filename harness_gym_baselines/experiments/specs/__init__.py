"""The experiments as data: one spec per experiment, the table(s) it writes, and the line each table ends with.

A spec is a frozen dataclass (the way CORL keeps a run's config as one flat dataclass and rl-baselines3-zoo keeps
hyperparameters as data beside the code that reads them): the grid of an experiment (envs, cost weights,
controllers, seeds) and its sizes, never code. The runner of every experiment is
:func:`harness_gym_baselines.experiments.engine.run_tasks`; the statistics are
:mod:`harness_gym_baselines.experiments.statistics`; the size dataclasses live in
:mod:`harness_gym_baselines.experiments.specs.sizes`.

:data:`SPECS` lists every experiment with the module that runs it, the spec (or config) that holds its settings
and the tables it writes; :func:`provenance_line` is the last line of each of those tables, naming the spec and
where the run's settings are.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment: its name, the module that runs it, where its settings are defined, what it writes."""

    name: str
    runner: str
    """``module:function`` that runs it"""
    settings: str
    """``module:name`` of the dataclass (or constants) that hold its grid and sizes"""
    tables: tuple[str, ...]
    """the tables it writes, relative to its ``--out``"""
    settings_file: str
    """the file under ``--out`` that records the settings of a run"""


SPECS: dict[str, ExperimentSpec] = {spec.name: spec for spec in (
    ExperimentSpec("reproduce", "harness_gym_baselines.report.reproduce:reproduce",
                   "harness_gym_baselines.experiments.specs.reproduce:REPRODUCE",
                   ("table_main.md", "table_harness.md", "table_aggregate.md", "table_ablation.md", "table_ecpo.md",
                    "table_corruption.md", "table_sim_to_real.md", "frontier/<env>/frontier.md"), "settings.json"),
    ExperimentSpec("learners_at_cost", "harness_gym_baselines.experiments.learners_at_cost:run_all",
                   "harness_gym_baselines.experiments.specs.sizes:LearnersAtCostSizes", ("table.md", "table.csv"),
                   "sizes.json"),
    ExperimentSpec("headroom", "harness_gym_baselines.experiments.headroom:headroom_to_file",
                   "harness_gym_baselines.experiments.headroom:HeadroomConfig", ("headroom_<env>.json",),
                   "headroom_<env>.json (settings)"),
    ExperimentSpec("ecpo_comparison", "harness_gym_baselines.experiments.ecpo_comparison:table",
                   "harness_gym_baselines.experiments.ecpo_comparison:TRAINED", ("table.md", "table_corruption.md"),
                   "the reproduce stage's settings.json"),
    ExperimentSpec("offline_comparison", "harness_gym_baselines.experiments.offline_comparison:run_env",
                   "harness_gym_baselines.experiments.offline_comparison:POLICIES",
                   ("results.csv", "per_seed.csv", "ablation.csv"), "the reproduce stage's settings.json"),
    ExperimentSpec("frontier", "harness_gym_baselines.experiments.frontier:write_frontier",
                   "harness_gym_baselines.experiments.frontier:FIXED_POLICIES", ("frontier.md", "frontier.json"),
                   "frontier.json (settings)"),
    ExperimentSpec("sim_to_real", "harness_gym_baselines.experiments.sim_to_real:sim_to_real",
                   "harness_gym_baselines.experiments.sim_to_real:FIXED", ("table_sim_to_real.md",),
                   "the recording's manifest"),
)}
"""every experiment, by name"""


def provenance_line(name: str) -> str:
    """The line a table of spec ``name`` ends with: the spec, where it is defined, where the run's settings are.

    :param name: a key of :data:`SPECS`
    """
    spec = SPECS[name]
    return (f"Written by spec `{spec.name}` ({spec.settings.split(':')[0].replace('.', '/')}.py, run by "
            f"`{spec.runner}`) with the settings in `{spec.settings_file}`.")
