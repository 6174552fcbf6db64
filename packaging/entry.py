"""The bundle program's entry point: the `workbench` command (packaging/workbench.spec)."""

from workbench.cli import main

raise SystemExit(main())
