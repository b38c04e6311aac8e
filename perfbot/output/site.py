"""The history site (`perfbot history --out-html DIR`): static pages, charts drawn as inline SVG, no
script and nothing fetched from elsewhere, so it works offline and from any static host.

    DIR/index.html              every GPU, its runs, and its benchmarks by suite and case
    DIR/b/<series>.html         one benchmark: its median per run with the run's 95% interval,
                                its ratio to the reference, the steps, the acknowledged steps
                                (`perfbot history ack`, with their reasons) and the environment changes

Each point of a chart links to the commit its run measured (and its pull request, when the
commit's subject names one, "(#123)", read from `--git`). Charts are drawn here rather than with
a plotting library: a chart of a thousand runs is one polyline and a thousand small linked
circles, a few hundred kilobytes, where a library's SVG or JavaScript bundle would be several
times that per page.
"""

from __future__ import annotations

import math
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from .. import git
from ..files import Inside, check_output, write_all
from ..history.acknowledgements import Acknowledgement
from ..history.series import History, Run, Series
from ..history.steps import Found, find_all

WIDTH, HEIGHT = 960, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 18, 28
SPARK_WIDTH, SPARK_HEIGHT, SPARK_POINTS = 160, 28, 200

_PAGES = jinja2.Environment(
    loader=jinja2.PackageLoader("perfbot.output", "templates/history"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


@dataclass(frozen=True)
class Links:
    """Where a run's commit and pull request live on the web."""

    repo_url: str | None  # https://github.com/OWNER/REPO
    pull_requests: dict[str, int]  # commit -> the PR its subject names

    def commit(self, sha: str | None) -> str | None:
        return f"{self.repo_url}/commit/{sha}" if self.repo_url and sha else None

    def pull_request(self, sha: str | None) -> tuple[int, str | None] | None:
        number = self.pull_requests.get(sha or "")
        if number is None:
            return None
        return number, (f"{self.repo_url}/pull/{number}" if self.repo_url else None)


def pull_requests_of(repo: Path | None) -> dict[str, int]:
    """Commit -> pull request number, from the subjects of a local clone's history: GitHub's
    squash merges end in "(#123)", its merge commits start "Merge pull request #123"."""
    if repo is None:
        return {}
    try:
        done = git.run(repo, "log", "--format=%H%x00%s", "--all", timeout=60)
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        sha, _, subject = line.partition("\0")
        match = re.search(r"\(#(\d+)\)\s*$", subject) or re.match(r"Merge pull request #(\d+)", subject)
        if match:
            found[sha] = int(match.group(1))
    return found


def build(history: History, out: Path, links: Links, *, overwrite: bool = False) -> int:
    """Write the site; returns the number of pages. Over an existing site only with `overwrite`
    (the output rule, files.py), every page checked before one is written."""
    steps: dict[int, list[Found]] = {}
    for found in find_all(history):
        steps.setdefault(id(found.series), []).append(found)
    pages = {
        out / "b" / f"{series.slug}.html": _series_page(
            series, history.runs[series.gpu], steps.get(id(series), []), links
        )
        for series in history.series
    }
    pages[out / "index.html"] = _index(history, steps)
    pages[out / ".nojekyll"] = ""  # GitHub Pages serves the files as they are
    inside = Inside(out, "the site's folder")  # through a symlink out, pages would be written, and removed, elsewhere
    inside.check(out / "b", follow=True)  # where stale pages are removed, even with no page to write there
    for page in pages:
        inside.check(page)
        check_output(page, overwrite=overwrite)
    write_all(pages, replace=overwrite, inside=inside)
    if overwrite:  # a benchmark no longer in the store loses its page: a site is rebuilt whole
        for stale in sorted(set((out / "b").glob("*.html")) - set(pages)):
            if _written_here(stale):
                stale.unlink()
    return len(pages) - 1


# In every page's head (base.html.j2): the pages a rebuild may remove are those that carry it.
GENERATOR = '<meta name="generator" content="perfbot history">'


def _written_here(path: Path) -> bool:
    """Whether `path` is a regular file (not a symlink) whose head says perfbot wrote it: no
    other file in the folder is ever removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # a symlink (ELOOP), gone meanwhile
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and GENERATOR.encode() in os.read(fd, 1024)
    finally:
        os.close(fd)


def _index(history: History, steps: dict[int, list[Found]]) -> str:
    gpus = []
    for gpu, runs in history.runs.items():
        rows = []
        for series in sorted((s for s in history.series if s.gpu == gpu), key=_order):
            found = steps.get(id(series), [])
            newest = series.points[-1]
            rows.append(
                {
                    "series": series,
                    "newest": newest,
                    "spark": _spark([v for _, v in series.watched] or [p.median_ms for p in series.points]),
                    "steps": found,
                    "acknowledged": _acknowledged(series.acknowledged),
                }
            )
        changes = [run for run in runs if run.changed]
        gpus.append({"name": gpu, "runs": runs, "rows": rows, "changes": changes})
    return _PAGES.get_template("index.html.j2").render(gpus=gpus)


def _order(series: Series) -> tuple:
    bench = series.bench
    # A benchmark's modes in the order runs time them: the forward, backward, forward+backward.
    mode = (bench.mode != "forward", bench.mode)
    return (bench.suite, bench.case, not series.under_test, bench.kernel, sorted(bench.variant.items()), mode)


def _series_page(series: Series, runs: Sequence[Run], found: list[Found], links: Links) -> str:
    medians = _chart(
        [Line(series.bench.kernel, [(p.run, p.median_ms, p.low_ms, p.high_ms) for p in series.points])],
        runs,
        found,
        links,
        linked=True,
        acknowledged=series.acknowledged,
    )
    others = dict.fromkeys(name for p in series.points for name, _ in p.ratios)
    ratios = None
    if others:
        lines = [
            Line(
                f"over {name}" + (" (watched)" if name == series.reference and series.watches_ratio else ""),
                [(p.run, value, value, value) for p in series.points for other, value in p.ratios if other == name],
            )
            for name in sorted(others, key=lambda name: name != series.reference)
        ]
        ratios = _chart(lines, runs, found, links, linked=False, acknowledged=series.acknowledged)
    return _PAGES.get_template("series.html.j2").render(
        series=series,
        runs=runs,
        medians=medians,
        ratios=ratios,
        found=found,
        acknowledged=_acknowledged(series.acknowledged),
        links=links,
    )


def _acknowledged(acknowledged: Sequence[tuple[int, Acknowledgement]]) -> list[dict]:
    """A series' acknowledged steps, for people: where, how large, why, who and when."""
    shown = []
    for at, record in acknowledged:
        change = f"{record.change_percent:+.1f}%"
        who = record.by or "someone"
        title = f"acknowledged step {change} from run {at + 1}: {record.reason} ({who}, {record.at})"
        shown.append(
            {"at": at, "change": change, "reason": record.reason, "by": who, "when": record.at, "title": title}
        )
    return shown


@dataclass(frozen=True)
class Line:
    name: str
    values: list[tuple[int, float, float, float]]  # run, value, interval low, interval high


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    lines: list[dict]  # name, points (the polyline's), colour
    dots: list[dict]  # of the first line: x, y, low_y, high_y, title, href
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    steps: list[dict]  # x, label, slower
    changes: list[dict]  # x, title
    acknowledged: list[dict]  # x, change, title (with the reason)


COLOURS = ("#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e", "#57606a")


def _chart(
    lines: list[Line],
    runs: Sequence[Run],
    found: list[Found],
    links: Links,
    *,
    linked: bool,
    acknowledged: Sequence[tuple[int, Acknowledgement]] = (),
) -> Chart:
    """A chart over the runs of one GPU: a line per series, dots (with their intervals, titles and
    links) on the first, the steps, the acknowledged steps and the environment changes as
    vertical marks."""
    values = [v for line in lines for v in line.values]
    low = min(v[2] for v in values)
    high = max(v[3] for v in values)
    pad = (high - low) * 0.08 or abs(high) * 0.01 or 1.0
    low, high = low - pad, high + pad
    count = len(runs)

    def x(run: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (run / max(count - 1, 1))

    def y(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (value - low) / (high - low))

    dots = []
    for run_index, value, v_low, v_high in lines[0].values:
        run = runs[run_index]
        title = f"run {run_index + 1} · stored {run.stored} · {value:.4g}"
        if v_low != v_high:
            title += f" [{v_low:.4g}, {v_high:.4g}]"
        if run.commit:
            title += f" · commit {run.commit[:12]}"
        pull = links.pull_request(run.commit)
        if pull:
            title += f" · PR #{pull[0]}"
        href = (pull[1] if pull and pull[1] else links.commit(run.commit)) if linked else None
        dots.append(
            {"x": x(run_index), "y": y(value), "low_y": y(v_low), "high_y": y(v_high), "title": title, "href": href}
        )
    return Chart(
        WIDTH,
        HEIGHT,
        [
            {
                "name": line.name,
                "points": " ".join(f"{x(v[0]):.1f},{y(v[1]):.1f}" for v in line.values),
                "colour": COLOURS[index % len(COLOURS)],
            }
            for index, line in enumerate(lines)
        ],
        dots,
        [(y(tick), f"{tick:.4g}") for tick in _ticks(low, high)],
        [(x(run), str(run + 1)) for run in _run_ticks(count)],
        [
            {
                "x": (x(f.before.index) + x(f.after.index)) / 2,
                "label": f"{f.step.change_percent:+.1f}%",
                "slower": f.slower,
            }
            for f in found
        ],
        [{"x": x(run.index), "title": "; ".join(run.changed)} for run in runs if run.changed],
        [
            {**shown, "x": (x(max(shown["at"] - 1, 0)) + x(shown["at"])) / 2}  # where its step was drawn
            for shown in _acknowledged(acknowledged)
        ],
    )


def _ticks(low: float, high: float, wanted: int = 5) -> list[float]:
    span = high - low
    step = 10 ** math.floor(math.log10(span / wanted))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= wanted:
            step *= factor
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _run_ticks(count: int, wanted: int = 10) -> list[int]:
    step = max(1, math.ceil(count / wanted))
    return list(range(0, count, step))


def _spark(values: Sequence[float]) -> str:
    """A small polyline of the series (at most SPARK_POINTS points) for the index."""
    if len(values) > SPARK_POINTS:
        stride = len(values) / SPARK_POINTS
        values = [values[int(i * stride)] for i in range(SPARK_POINTS)] + [values[-1]]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return " ".join(
        f"{SPARK_WIDTH * i / max(len(values) - 1, 1):.1f},{2 + (SPARK_HEIGHT - 4) * (1 - (v - low) / span):.1f}"
        for i, v in enumerate(values)
    )
