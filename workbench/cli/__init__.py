"""The `workbench` command line: one sub-command module each, sharing the core services."""
