"""The naga validator's child process (see `workbench.build.shader_check`).

    python -m workbench.build.naga_child serve              # the persistent validator
    python -m workbench.build.naga_child wgsl|spirv FILE    # one shader, one JSON line

A module of its own, imported by nothing in the build package, so `-m` (and the bundle's child
dispatch, `workbench.frozen.python_command`) runs it cleanly.
"""

from __future__ import annotations

import sys

from workbench.build.shader_check import main, serve

if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["serve"] else main(sys.argv[1:]))
