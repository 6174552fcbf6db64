"""Debugging one invocation of a kernel body under gdb (issue 40): the debug build of cpu-sim
(`build.py`), the launcher process gdb runs (`launcher.py`), the gdb machine-interface session
that stops in the chosen invocation and reads its frame (`session.py`). Qt-free: `workbench
debug` and a window's dock drive the same session. docs/debugging.md says what a stop shows.
"""
