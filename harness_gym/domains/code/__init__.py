"""Python function and class tasks checked by visible tests and graded by hidden tests (``HarnessCode-v1``)."""
