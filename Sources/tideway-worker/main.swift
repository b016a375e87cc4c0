// Placeholder entry point: the worker lands on merge.
