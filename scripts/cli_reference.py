"""Writes docs/cli.md, the command-line reference, from the --help of every perfbot command:

    .venv/bin/python scripts/cli_reference.py            # writes docs/cli.md
    .venv/bin/python scripts/cli_reference.py --check    # exit 1 if docs/cli.md is not current

tests/test_cli_reference.py runs the check. A command without help or without an example, or an
option without help, is refused (exit 2): the reference is where a user reads them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli.md"
# Columns of the help text: what click prints on any terminal 80 wide or wider (80, less its margin).
WIDTH = 78

HEADER = """\
# Command-line reference

Every perfbot command's `--help`, as the command prints it. Written by
`python scripts/cli_reference.py` from the commands themselves; `tests/test_cli_reference.py` fails
when this page is not current. How options are named: [CONTRIBUTING.md](../CONTRIBUTING.md#naming-options).
"""


def walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `group`, by the names that call it, in alphabetical order."""
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None:
            continue
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from walk(command, (*path, name))


def problems(root: click.Group) -> list[str]:
    """What a user would miss: a command without help or an example, an option without help."""
    found = []
    for path, command in walk(root):
        where = " ".join(("perfbot", *path))
        if not (command.help or "").strip():
            found.append(f"{where}: no help")
        elif "Example:" not in command.help:
            found.append(f"{where}: no example (a line `Example:` in its help)")
        for param in command.params:
            if isinstance(param, click.Option) and not (param.help or "").strip():
                found.append(f"{where} {param.opts[0]}: no help")
    return found


def help_text(root: click.Group, path: tuple[str, ...]) -> str:
    """The command's --help, as `perfbot PATH --help` prints it WIDTH columns wide."""
    # make_context, as a call does: each command's context settings apply (-h for help); nothing is
    # required of a context made only to say its help.
    context = root.make_context("perfbot", [], resilient_parsing=True, terminal_width=WIDTH, max_content_width=WIDTH)
    command: click.Command = root
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(context, name)
        assert found is not None, name
        command, context = found, found.make_context(name, [], parent=context, resilient_parsing=True)
    return command.get_help(context)


def renamed(root: click.Group) -> list[tuple[str, str, str]]:
    """(command, old spelling, new name) of every option renamed (commands/options.py's `old`)."""
    rows = []
    for path, command in walk(root):
        for param in command.params:
            for old in getattr(param, "old", ()):
                rows.append((" ".join(("perfbot", *path)), old, param.opts[0]))
    return rows


def anchor(title: str) -> str:
    return title.lower().replace(" ", "-")


def render(root: click.Group) -> str:
    """The reference page. ValueError where a command or option has no help or no example."""
    missing = problems(root)
    if missing:
        raise ValueError("; ".join(missing))
    paths = [path for path, _ in walk(root)]
    titles = ["perfbot", *(" ".join(("perfbot", *path)) for path in paths)]
    parts = [HEADER, "## Commands\n", *(f"- [{title}](#{anchor(title)})" for title in titles), ""]
    rows = renamed(root)
    if rows:
        parts += [
            "## Renamed options\n",
            "These old spellings still work for one release, each with a warning on stderr that names",
            "the new one.\n",
            "| command | old | new |",
            "|---|---|---|",
            *(f"| `{command}` | `{old}` | `{new}` |" for command, old, new in rows),
            "",
        ]
    for title, path in zip(titles, [(), *paths], strict=True):
        parts += [f"## {title}\n", "```text", help_text(root, path).rstrip(), "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=REFERENCE, help="the page (default: docs/cli.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not current; write nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from perfbot.cli import perfbot

    try:
        text = render(perfbot)
    except ValueError as error:
        print(f"cli_reference: {error}", file=sys.stderr)
        return 2
    if args.check:
        current = args.path.read_text() if args.path.is_file() else ""
        if current != text:
            print(f"cli_reference: {args.path} is not current; run: python scripts/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text)
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
