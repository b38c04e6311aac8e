"""`perfbot history ack`: accept a step, so that it is never reported again and later checks
measure from its level."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import click

from ..errors import BadInput
from ..records.schema import MAX_NAME, clean
from .context import existing_store
from .options import project_option, store_option


@click.command("ack")
@store_option
@click.option(
    "--step",
    "step",
    required=True,
    help="The step's id, SERIES@STORED, as `perfbot history --check` and `perfbot history --store DIR` print it.",
)
@click.option(
    "--reason",
    required=True,
    help="Why the step is accepted, in one line (shown on the site at the step).",
)
@click.option(
    "--by",
    default=None,
    help="Who accepts it. Default: git's user.name, else $USER.",
)
@project_option
def ack_command(store: Path | None, step: str, reason: str, by: str | None, project: Path | None) -> None:
    """Acknowledge a step: it is never reported again, even if the check's reported-steps.json is
    lost, and the step search restarts at its run, so a later step is measured from its level.
    The site shows it at the step, with the reason. A step already acknowledged is refused (exit 2).
    The acknowledgement is kept in the store, as STORE/acknowledged-steps.json.

    Example:

    \b
        perfbot history --store .perfbot/store --check
        perfbot history ack --store .perfbot/store --step 3f2a9c0d1e2b4a5f@20261130T051500.000000Z \\
            --reason 'the new epilogue trades 3% here for 10% on decode shapes (#123)'
    """
    from ..history import acknowledgements, steps
    from ..history import series as history

    store_dir = existing_store(store, project, writes=True)
    identity, stored = acknowledgements.parse_step_id(step)
    text = acknowledgements.check_reason(reason)
    who = _checked_name(by) if by is not None else _default_name()
    read = history.read(store_dir)
    found = steps.to_acknowledge(read, identity, stored)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = found.acknowledgement(text, who, now)
    path = acknowledgements.save(store_dir, [*read.acknowledged, record])
    click.echo(
        f"acknowledged: {found.series.gpu} · {found.series.label}: {found.series.watched_label} "
        f"{found.step.change_percent:+.2f}% from run {found.after.index + 1} (stored {found.after.stored})"
    )
    if found.after.stored != stored:
        click.echo(f"  (its first run is now estimated at run {found.after.index + 1}: that run is recorded)")
    click.echo(f"  recorded in {path}; later checks measure this benchmark from its level")


def _checked_name(by: str) -> str:
    name = by.strip()
    if not name or len(name) > MAX_NAME or clean(name) != name:
        raise BadInput(f"--by: give a name of one line, at most {MAX_NAME} characters")
    return name


def _default_name() -> str | None:
    """git's user.name, else $USER; None when neither says (the record then names no one)."""
    from .. import git

    try:
        done = git.run(None, "config", "user.name", timeout=10)
        name = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        name = ""
    name = clean(name or os.environ.get("USER", ""), MAX_NAME).strip()
    return name or None
