"""Building: `perfbot triton build`."""

from __future__ import annotations

from pathlib import Path

import click

from ..measuring import triton_build
from .context import project_config, project_option


@click.group("triton")
def triton_group() -> None:
    """Triton builds for CI and bisection.

    Example:

        perfbot triton build --commit 7c56a5e40f7fd928dfd5c72902d5def0097db73a
    """


@triton_group.command("build")
@click.option("--commit", default=None, help="Commit to build. Default: [tool.perfbot] triton-commit of the project.")
@click.option(
    "--source",
    default=triton_build.DEFAULT_SOURCE,
    show_default=True,
    help="Triton repository: a local path or a git URL.",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Wheel cache, one folder per commit. Default: ~/.cache/perfbot/triton-wheels.",
)
@click.option(
    "--no-build-isolation",
    is_flag=True,
    help="Build with the build tools already installed (pip's --no-build-isolation) instead of fresh ones.",
)
@project_option
def triton_build_command(
    commit: str | None, source: str, cache: Path | None, no_build_isolation: bool, project: Path | None
) -> None:
    """Build a Triton wheel at a commit, or take it from the cache; prints the wheel's path.

    A cached wheel is used only if its digest matches the record written when it was built.

    Exits 3 if the build fails, with the end of its log.

    Example:

        perfbot triton build --commit 7c56a5e4 --source ~/src/triton --cache /ci/wheels
    """
    commit = commit or project_config(project).triton_commit
    wheel, built = triton_build.build(
        commit,
        source,
        cache,
        build_isolation=not no_build_isolation,
        on_note=lambda note: click.echo(f"perfbot: note: {note}", err=True),
    )
    click.echo(f"{'built' if built else 'cache hit'}: {wheel}", err=True)
    click.echo(str(wheel))
