// Placeholder entry point: the admin CLI lands on merge.
