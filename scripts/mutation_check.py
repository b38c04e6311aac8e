"""A small mutation check of the decision modules: does a test fail when a decision changes?

Each mutant changes one thing in one module: a comparison (`<` to `<=` or `>=`, `==` to `!=`),
`and` to `or`, `+` to `-` or `*` to `/`, a number by one unit (0.5 doubled, 0 to 1), a fallback
dropped (`x or ""` to `x`), a `not` removed or a condition negated, or a function that returns at
once. The mutated module is written into a copy of the tree (the real files are never touched),
the module's own tests run there with `pytest -x -q`, and the mutant is killed (a test failed),
survived (every test passed) or timed out (counted as detected, as Stryker counts it). A survivor
is a decision no test states, or an equivalent mutant (one no test can tell apart).
Text inside f-strings (messages, not decisions) and the annotations of function signatures are
left alone. docs/method.md, "Tests that pin the decisions", holds the last score.

    python scripts/mutation_check.py --sample 15 --jobs 2 --list-survivors
    python scripts/mutation_check.py --modules perfbot/deciding/stats.py --list
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW = (
    "tests/test_sequential.py::test_false_alarms_at_most_one_percent_and_half_percent_caught_in_95_under_repeated_looks"
)
# The golden files pin the exact numbers and words of a comparison.
GOLDEN = [
    "tests/test_report.py::test_pr_comment_golden",
    "tests/test_report.py::test_terminal_table_golden",
    "tests/test_report.py::test_ab_comment_golden",
    "tests/test_report.py::test_ab_terminal_table_golden",
]
# Each decision module and the tests that pin it: the fast ones (a long simulation left out).
TESTS = {
    "perfbot/deciding/stats.py": [
        "tests/test_stats.py",
        "tests/test_compare.py",
        "tests/test_sequential_interval.py",
        *GOLDEN,
    ],
    "perfbot/deciding/compare.py": ["tests/test_compare.py", "tests/test_sequential_interval.py", *GOLDEN],
    "perfbot/deciding/thresholds.py": ["tests/test_thresholds.py", "tests/test_compare.py"],
    "perfbot/deciding/standing.py": ["tests/test_headline.py", "tests/test_compare.py", *GOLDEN],
    "perfbot/deciding/comparison.py": ["tests/test_headline.py", "tests/test_compare.py", *GOLDEN],
    "perfbot/deciding/changepoints.py": [
        "tests/test_changepoints.py",
        "tests/test_history.py::test_change_points_on_plain_series",
        "tests/test_history.py::test_a_2_percent_step_at_run_25_is_reported_near_25_with_its_commits",
        "tests/test_history.py::test_the_same_stores_without_the_step_report_nothing",
        "tests/test_history_ack.py::test_known_breaks_split_the_search",
    ],
    "perfbot/deciding/compiled_change.py": ["tests/test_compiled_change.py", "tests/test_compiled_report.py"],
    "perfbot/compiling/occupancy.py": [
        "tests/test_compiling.py::test_occupancy_names_its_limit",
        "tests/test_compiling.py::test_each_gpu_of_the_table_has_its_own_limits",
        "tests/test_compiling.py::test_occupancy_of_an_unknown_gpu_is_not_guessed",
    ],
    "perfbot/compiling/sass.py": [
        "tests/test_compiling.py::test_sass_is_counted_by_class_with_local_bytes_by_width",
        "tests/test_compiling.py::test_a_listing_without_resource_usage_is_an_environment_failure",
        "tests/test_compiling.py::test_a_cubin_the_disassembler_cannot_read_is_an_environment_failure",
        "tests/test_compiling.py::test_spills_and_registers_are_what_ptxas_reports",
    ],
    "perfbot/measuring/sequential.py": [
        "tests/test_sequential.py",
        "tests/test_sequential_interval.py",
        f"--deselect={SLOW}[0.01]",
    ],
}
COPY_SKIPS = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*_cache", ".hypothesis")
COMPARISONS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
ARITHMETIC: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
}


@dataclass(frozen=True)
class Mutant:
    module: str  # its path under the root
    site: int  # which change, in the order Sites finds them
    line: int
    column: int
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}:{self.column + 1}: {self.before}  →  {self.after}"


@dataclass(frozen=True)
class Edit:
    """Source text from (line, byte column) to (line, byte column) replaced (lines from 1)."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


def changes(node: ast.AST) -> Iterator[ast.AST]:
    """The mutated copies of one node (an expression or a statement)."""
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            for other in COMPARISONS[type(op)]:
                mutated = copy.deepcopy(node)
                mutated.ops[index] = other()
                yield mutated
    elif isinstance(node, ast.BoolOp):
        yield ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
        fallback = node.values[-1]
        if isinstance(node.op, ast.Or) and isinstance(fallback, ast.Constant | ast.List | ast.Dict | ast.Tuple):
            yield ast.BoolOp(node.op, node.values[:-1]) if len(node.values) > 2 else node.values[0]
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in ARITHMETIC:
        mutated = copy.copy(node)
        mutated.op = ARITHMETIC[type(node.op)]()
        yield mutated
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield ast.Constant(not node.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield ast.Constant(node.value + 1)
        if node.value >= 1:
            yield ast.Constant(node.value - 1)
    elif isinstance(node, ast.Constant) and isinstance(node.value, float):
        yield ast.Constant(2 * node.value if node.value else 1.0)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand


class Sites:
    """Walks a module in a fixed order and lists every mutation of it, each as a text edit."""

    def __init__(self, source: str):
        self.source = source
        self.found: list[tuple[ast.AST, Edit, str, str]] = []  # the node, the edit, before and after
        self.visit(ast.parse(source))

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.JoinedStr):  # messages, not decisions
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.returning_at_once(node)
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            self.negated(node.test)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            node.decorator_list = []  # @dataclass(frozen=True) and the like decide nothing
        if isinstance(node, ast.expr | ast.AugAssign):
            for mutated in changes(node):
                self.add(node, mutated)
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns") and not isinstance(node, ast.AnnAssign):
                continue  # a signature's types decide nothing; a class field's may (pydantic's limits)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.visit(child)

    def add(self, node: ast.AST, mutated: ast.AST) -> None:
        text = ast.unparse(mutated)
        if isinstance(node, ast.expr):
            text = f"({text})"  # the precedence it had where it stood
        edit = Edit((node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0), text)
        self.found.append((node, edit, ast.get_source_segment(self.source, node) or "", text))

    def negated(self, test: ast.expr) -> None:
        # Comparisons, and/or and not have mutations of their own.
        if not isinstance(test, ast.Compare | ast.BoolOp | ast.UnaryOp | ast.Constant):
            self.add(test, ast.UnaryOp(ast.Not(), test))

    def returning_at_once(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        kind = ast.unparse(function.returns) if function.returns else None
        values = {"None": ["return"], "bool": ["return True", "return False"]}.get(kind or "", [])
        body = function.body
        first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
        if first.lineno == function.lineno:  # def f(): return x, all on one line
            return
        for value in values:
            edit = Edit((first.lineno, 0), (first.lineno, 0), f"{' ' * first.col_offset}{value}\n")
            self.found.append((first, edit, f"def {function.name}: …", f"def {function.name}: {value}"))

    def mutants(self, module: str) -> list[Mutant]:
        return [
            Mutant(module, site, node.lineno, node.col_offset, _short(before), _short(after))
            for site, (node, _, before, after) in enumerate(self.found)
        ]

    def mutated(self, site: int) -> str:
        """The module's source with one mutation."""
        edit = self.found[site][1]
        lines = self.source.encode().splitlines(keepends=True)
        (first, start), (last, end) = edit.start, edit.end
        head, tail = lines[first - 1][:start], lines[last - 1][end:]
        return b"".join([*lines[: first - 1], head, edit.text.encode(), tail, *lines[last:]]).decode()


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass
class Runner:
    """Runs a module's tests in copies of the tree, one copy per job, a mutant at a time in each."""

    python: str
    copies: queue.Queue[Path]

    def run(self, module: str, text: str, tests: list[str], timeout: float) -> tuple[str, float]:
        """Whether the tests pass on `module` written as `text`: "survived", "killed" or "timeout"."""
        tree = self.copies.get()
        target = tree / module
        original = target.read_bytes()
        try:
            target.write_text(text)
            return _pytest(self.python, tree, tests, timeout)
        finally:
            target.write_bytes(original)
            self.copies.put(tree)


def _pytest(python: str, tree: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no stale bytecode of a mutant
    began = time.monotonic()
    # A session of its own, so that a timed-out pytest is ended with whatever it started.
    process = subprocess.Popen(
        command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return "timeout", time.monotonic() - began
    if code == 5:
        raise SystemExit(f"pytest collected no tests from {' '.join(tests)}")
    return ("survived" if code == 0 else "killed"), time.monotonic() - began


def check_module(runner: Runner, module: str, source: str, tests: list[str]) -> float:
    """The tests pass on the module as it is and fail on one that cannot be imported (so they
    import the copy); returns their time, from which a mutant's timeout is set."""
    outcome, seconds = runner.run(module, source, tests, timeout=600)
    if outcome != "survived":
        raise SystemExit(f"the tests of {module} do not pass unmutated: {' '.join(tests)}")
    canary = source + '\nraise RuntimeError("mutation check: the tests import this copy")\n'
    if runner.run(module, canary, tests, timeout=600)[0] != "killed":
        raise SystemExit(f"the tests of {module} pass when it cannot be imported: they do not test this copy")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to copy and test (default: this checkout)")
    parser.add_argument("--modules", nargs="+", default=list(TESTS), help="module paths under the root")
    parser.add_argument("--tests", nargs="+", help="pytest arguments for every module (default: each one's own)")
    parser.add_argument("--sample", type=int, help="run N mutants of each module, drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the draw (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at once (default 1)")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 3 times the clean run, plus 10)")
    parser.add_argument("--only", type=Path, help="run the mutants listed in this file (a run's survivors, say)")
    parser.add_argument("--list", action="store_true", help="list the mutants and run nothing")
    parser.add_argument("--list-survivors", action="store_true", help="list each surviving mutant")
    parser.add_argument("--fail-under", type=float, help="exit 1 when the score, in percent, is under this")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupted)
    root = args.root.resolve()
    for module in args.modules:
        if not (root / module).is_file():
            parser.error(f"no module {module} under {root}")
        if args.tests is None and module not in TESTS:
            parser.error(f"{module} has no tests of its own in TESTS: give --tests")

    sites = {module: Sites((root / module).read_text()) for module in args.modules}
    chosen = {module: site.mutants(module) for module, site in sites.items()}
    totals = {module: len(mutants) for module, mutants in chosen.items()}
    if args.only is not None:  # the lines --list and --list-survivors print
        listed = set(args.only.read_text().splitlines())
        chosen = {m: [mutant for mutant in ms if str(mutant) in listed] for m, ms in chosen.items()}
    if args.sample is not None:
        draw = random.Random(args.seed)
        chosen = {
            m: sorted(draw.sample(ms, min(args.sample, len(ms))), key=lambda x: x.site) for m, ms in chosen.items()
        }
    if args.list:
        for mutant in (mutant for mutants in chosen.values() for mutant in mutants):
            print(mutant)
        return 0

    with tempfile.TemporaryDirectory(prefix="mutation-check-") as work:
        copies: queue.Queue[Path] = queue.Queue()
        for job in range(args.jobs):
            copies.put(Path(shutil.copytree(root, Path(work) / f"tree{job}", ignore=COPY_SKIPS)))
        runner = Runner(args.python, copies)
        outcomes: dict[Mutant, str] = {}
        began = time.monotonic()
        for module, mutants in chosen.items():
            tests = args.tests or TESTS[module]
            clean = check_module(runner, module, sites[module].source, tests)
            timeout = args.timeout or 3 * clean + 10

            def run(mutant: Mutant, tests: list[str] = tests, timeout: float = timeout) -> tuple[str, float]:
                return runner.run(mutant.module, sites[mutant.module].mutated(mutant.site), tests, timeout)

            pool = ThreadPoolExecutor(args.jobs)
            try:
                for mutant, (outcome, seconds) in zip(mutants, pool.map(run, mutants), strict=True):
                    outcomes[mutant] = outcome
                    print(f"{outcome:8} {seconds:5.1f}s  {mutant}", file=sys.stderr, flush=True)
            finally:  # on Ctrl-C, start no more; the copies are removed once the running ones end
                pool.shutdown(cancel_futures=True)
        minutes = (time.monotonic() - began) / 60
    score = report(chosen, totals, outcomes, args.list_survivors)
    print(f"{len(outcomes)} mutants in {minutes:.1f} min, --sample {args.sample} --seed {args.seed}")
    return 1 if args.fail_under is not None and score < args.fail_under else 0


def report(
    chosen: dict[str, list[Mutant]], totals: dict[str, int], outcomes: dict[Mutant, str], survivors: bool
) -> float:
    """Prints a table per module (and the survivors); returns the score, in percent."""
    rows = [("module", "mutants", "run", "killed", "survived", "timeout", "score")]
    counts = {"killed": 0, "survived": 0, "timeout": 0}
    for module, mutants in chosen.items():
        mine = [outcomes[m] for m in mutants]
        row = {kind: mine.count(kind) for kind in counts}
        counts = {kind: counts[kind] + row[kind] for kind in counts}
        rows.append((module, str(totals[module]), str(len(mine)), *map(str, row.values()), _score(row)))
    rows.append(("all", str(sum(totals.values())), str(len(outcomes)), *map(str, counts.values()), _score(counts)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            " | ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
    lived = [m for m, outcome in outcomes.items() if outcome == "survived"]
    if survivors and lived:
        print("", "survived:", *lived, sep="\n")
    elif lived:
        print(f"{len(lived)} survived: --list-survivors lists them")
    detected = counts["killed"] + counts["timeout"]
    return 100.0 * detected / max(len(outcomes), 1)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # `kill` stops a run as Ctrl-C does, copies removed


def _score(counts: dict[str, int]) -> str:
    run = sum(counts.values())
    return f"{100 * (counts['killed'] + counts['timeout']) / run:.0f}%" if run else "-"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
