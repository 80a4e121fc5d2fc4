"""harness-gym reproduce and its report: the pipeline, the report writer, statistics and the episode viewer."""
