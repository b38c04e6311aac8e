"""Building: `perfbot triton build`."""

from __future__ import annotations

from pathlib import Path

import click

from ..measuring import triton_build
from .context import project_config
from .options import no_build_isolation_option, option, project_option, triton_cache_option, triton_source_option


@click.group("triton")
def triton_group() -> None:
    """Triton builds for CI and bisection.

    Example:

        perfbot triton build --triton-commit 7c56a5e40f7fd928dfd5c72902d5def0097db73a
    """


@triton_group.command("build")
@option(
    "--triton-commit",
    "commit",
    old=["--commit"],
    default=None,
    metavar="SHA",
    help="Triton commit to build. Default: [tool.perfbot] triton-commit of the project.",
)
@triton_source_option.was("--source")
@triton_cache_option.was("--cache")
@no_build_isolation_option
@project_option
def triton_build_command(
    commit: str | None,
    triton_source: str | None,
    triton_cache: Path | None,
    no_build_isolation: bool,
    project: Path | None,
) -> None:
    """Build a Triton wheel at a commit, or take it from the cache; prints the wheel's path.

    A cached wheel is used only if its digest matches the record written when it was built.

    Exits 3 if the build fails, with the end of its log.

    Example:

        perfbot triton build --triton-commit 7c56a5e4 --triton-source ~/src/triton --triton-cache /ci/wheels
    """
    commit = commit or project_config(project).triton_commit
    wheel, built = triton_build.build(
        commit,
        triton_source or triton_build.DEFAULT_SOURCE,
        triton_cache,
        build_isolation=not no_build_isolation,
        on_note=lambda note: click.echo(f"perfbot: note: {note}", err=True),
    )
    click.echo(f"{'built' if built else 'cache hit'}: {wheel}", err=True)
    click.echo(str(wheel))
