"""Adopting perfbot in an existing repository: `perfbot init`."""

from __future__ import annotations

from pathlib import Path

import click

from ..adopting import kernel_source, scaffold

# What cannot be written for the user: perfbot's docs/github.md and SECURITY.md say how.
_BY_HAND = (
    "the GPU check needs what no file can hold (perfbot's docs/github.md and SECURITY.md): OWNER in "
    ".github/CODEOWNERS; the repository variables PERFBOT_SOURCE (perfbot pinned at a commit, "
    "git+https://github.com/ORG/perfbot@SHA) and PERFBOT_GPU_LABELS; a self-hosted GPU runner per label; "
    "the settings SECURITY.md lists"
)


@click.command("init")
@click.option(
    "--kernel",
    "kernel_spec",
    required=True,
    metavar="MODULE:FUNCTION",
    help="The function to measure, as its callers call it (it takes tensors and returns the output), in a "
    "package of the project: at its root or under src/, e.g. mypkg.ops.rmsnorm:rmsnorm. Or MODULE:CLASS: a "
    "torch.autograd.Function, called through .apply (mypkg.ops:Softmax, or mypkg.ops:Softmax.apply), or an "
    "nn.Module, built and then called (mypkg.layers:RMSNorm).",
)
@click.option(
    "--name",
    default=None,
    help="The kernel family's name, in every report, and its implementation's. Default: FUNCTION; a class's name "
    "in lower case, its words joined by '_' (SoftmaxAutoGrad: softmax_auto_grad).",
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the family's package goes, relative to the project: a folder of the kernels package. "
    "Default: perf/NAME (the first time), then KERNELS/NAME, where [tool.perfbot] kernels names KERNELS.",
)
@click.option(
    "--triton-commit",
    default=None,
    metavar="SHA",
    help="The Triton commit CI builds and measures with (40 hex digits). Default: the installed Triton's, "
    "where it can be found (PERFBOT_TRITON_COMMIT, a source build's version, a release perfbot knows).",
)
@click.option(
    "--workflows",
    is_flag=True,
    help="Also write the GitHub workflows (the pull-request GPU check, the baseline on main, bisect, a CPU "
    "check), the GPU setup action and CODEOWNERS into .github/.",
)
@click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="The repository to set up (its root). Default: the current directory.",
)
def init_command(
    kernel_spec: str,
    name: str | None,
    folder: Path | None,
    triton_commit: str | None,
    workflows: bool,
    project: Path,
) -> None:
    """Set perfbot up in an existing repository, for one of its kernels: a kernels package,
    perf/__init__.py, whose `subjects` lists the kernel families, and in it the family to fill in,
    perf/NAME/ (inputs, float64 reference, tolerance, suites; each place marked "# perfbot init: fill
    in"), a [tool.perfbot] table appended to pyproject.toml, with the Triton commit to pin, and
    perfbot's default thresholds.yaml. The function is read from its source, not imported. A
    torch.autograd.Function is called through its apply, with the arguments of its forward after
    ctx; an nn.Module is built (its constructor's arguments marked to fill in) and called with
    those of its forward after self.

    Run again for another kernel, where the table stands: it writes only the new family's folder
    beside the first, and prints the two lines that add it to the kernels package's __init__.py,
    which it leaves as it is, as it leaves the table and the policy.

    Writes over nothing: where any of these files stands already it exits 2 naming it and writes
    nothing. Nor outside the project: a symlink on the way to any of them that leads out of the
    project, or nowhere, is refused the same way; one to a folder inside is followed. Without
    --triton-commit and with no full commit to be found for the installed Triton, the first init
    exits 2 and writes nothing.

    Example:

    \b
        perfbot init --kernel mypkg.ops.rmsnorm:rmsnorm
        perfbot init --kernel mypkg.ops.softmax:softmax  # a second family, beside the first
        perfbot init --kernel mypkg.ops.softmax:SoftmaxFunction.apply --name softmax  # a torch.autograd.Function
        perfbot init --kernel mypkg.layers:LayerNorm  # an nn.Module: the family layer_norm
        perfbot init --kernel mypkg.ops.rmsnorm:rmsnorm --dir bench/rmsnorm --workflows
        perfbot init --kernel mypkg.ops:softmax --triton-commit 7c56a5e40f7fd928dfd5c72902d5def0097db73a
    """
    root = project.resolve()
    kernel = kernel_source.find_kernel(root, kernel_spec)
    kernels = scaffold.existing_kernels(root)
    pin = scaffold.triton_pin(triton_commit) if kernels is None else None
    name = name if name is not None else kernel.default_name
    folder = folder or Path(kernels or "perf") / name
    planned = scaffold.plan(root, kernel, pin, name=name, folder=folder, workflows=workflows, kernels=kernels)
    had_pyproject = planned.pyproject.exists()
    scaffold.write(planned)
    for path in sorted(planned.files):
        click.echo(f"wrote {path.relative_to(root)}")
    if pin is not None:
        added = "appended [tool.perfbot] to" if had_pyproject else "wrote [tool.perfbot] into a new"
        click.echo(f"{added} {planned.pyproject.relative_to(root)}")
        click.echo(f"Triton commit {pin.commit}: {pin.source}")
    if kernel.parameters is None:
        where = f"{kernel.path}'s source"
        click.echo(f"note: {kernel.signature}: its arguments are not in {where}; make_inputs guesses one")
    if workflows:
        click.echo(f"note: {_BY_HAND}")
    click.echo("Next:")
    step = 1
    if pin is None:
        click.echo(f"  {step}. add these two lines to {planned.kernels}/__init__.py, which lists the families:")
        for line in planned.lines_to_add():
            click.echo(f"         {line}")
        step += 1
    marked = f"{planned.family} .github/CODEOWNERS" if workflows else planned.family
    click.echo(f'  {step}. write the places marked "# {scaffold.MARK}": grep -rn "{scaffold.MARK}" {marked}')
    click.echo(f"  {step + 1}. perfbot check                  # no GPU needed: the quick suite against your reference")
    click.echo(
        f"  {step + 2}. perfbot run --out run.json     # on a GPU; then perfbot ab main, this checkout against main"
    )
