"""The `workbench` command line: one module per sub-command, all calling the core services.

Each sub-command module defines `register(subparsers)`, which adds its parser and sets
`func=run`, where `run(args) -> int` returns the exit code. `workbench [PATH]` with no
sub-command opens the window.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench import __version__
from workbench.errors import WorkbenchError
from workbench.frozen import restore_library_path, run_child_module

#: Sub-command name -> module under workbench.cli.
COMMANDS = {
    "doctor": "doctor",
    "check": "check",
    "build": "build",
    "run": "run",
    "gui": "gui",
    "sessions": "sessions",
    "ceilings": "ceilings",
    "tune": "tune",
    "sweep": "sweep",
    "hosts": "hosts",
    "new": "new",
    "trust": "trust",
    "ir": "ir",
    "fmt": "fmt",
    "lint": "lint",
    "test": "test",
    "debug": "debug",
}

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CommandParser(argparse.ArgumentParser):
    """A sub-command's parser that takes its options and positionals in any order, as the usage
    lines say: `workbench new vadd --template saxpy DIR` put DIR among "unrecognized arguments"
    (Python 3.11's argparse matches an optional positional, `nargs="?"`, to nothing once an
    option has come between it and the positional before it). A parser with sub-commands of
    its own (`sessions`, `hosts`, `ir`) parses as argparse does; its sub-commands are these."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        except TypeError:  # a feature intermixed parsing refuses (argparse says which): as argparse does
            return super().parse_known_args(args, namespace)
        finally:
            self._intermixing = False


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that sub-command's module is imported (fast start-up)."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Edit, build, run, verify and time one Rust GPU kernel on every backend.",
        epilog="`workbench [PATH]` opens the window on a kernel project (default: the saxpy example).",
    )
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="check this installation (window, example builds and runs); --self-test --json for machines",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            subparsers.add_parser(name)
            continue
        try:
            mod = importlib.import_module(f"workbench.cli.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"workbench.cli.{module}":
                raise
            continue  # a sub-command not installed in this build
        mod.register(subparsers)
    return parser


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of sub-command `command` (the top-level parser when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    child = run_child_module(argv)  # a bundle starting its own worker (workbench.frozen)
    if child is not None:
        return child
    restore_library_path()  # compilers started from a bundle must not see its libraries
    if "--self-test" in argv and argv[0] not in COMMANDS:  # `--json --self-test` too
        from workbench.cli.selftest import main as self_test

        return self_test([arg for arg in argv if arg != "--self-test"])
    # `workbench [PATH]` (no sub-command) opens the window.
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["gui", *argv]
    parser = build_parser(only=argv[0] if argv[0] in COMMANDS else None)
    args, extras = parser.parse_known_args(argv)
    if extras:
        # Said by the sub-command's parser: its usage line, not `workbench [-h] ... COMMAND ...`.
        command = _command_parser(parser, getattr(args, "command", None))
        command.error(f"unrecognized arguments: {' '.join(extras)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:  # ManifestError included: it names file, line and key
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
