"""Multi-tool domain: chains of calculator, unit, date, currency and lookup calls (``HarnessMultiTool-v1``)."""
