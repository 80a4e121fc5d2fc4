"""Data-analysis domain: pandas programs over messy CSV exports (``HarnessData-v1``)."""
