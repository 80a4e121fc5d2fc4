"""Training algorithms, one file each that reads top to bottom (a flat config dataclass, the networks and
losses, ``train``, ``load``): offline ``bc``, ``awr``, ``iql``, ``cql``; online ``ppo`` (its presets ``ppo-sparse``
and ``ppo-dense``) and ``ecpo`` (its preset ``ecpo-pb``; the preference model in ``ecpo_preference``, the farming
analysis of stored models in ``ecpo_analysis``). What they share: ``offline_common`` (minibatches, the likelihood
fit, the run, the final save and evaluation), ``online_common`` (the vector env, the learner, the evaluation
callbacks, the SB3 model file) and ``seeding``.
"""
