"""Experiment pipelines: offline comparison, ECPO comparison, sim-to-real, reference scores, the quality-cost frontier."""
