"""Build the README's two-kernel adoption repository (tests/test_readme_adoption.py's, filled in
as its test fills it) at DIR, with the README's commands run verbatim, and commit it.
    python experiments/2026-12-02-h200-families/make_repo.py DIR"""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.test_init import SHA, _fill  # noqa: E402
from tests.test_readme_adoption import FILLED, SUITES, _readme_commands, existing_repository  # noqa: E402

root = existing_repository(Path(sys.argv[1]))
git = ["git", "-c", "user.name=perfbot", "-c", "user.email=perfbot@localhost"]
for line in _readme_commands():
    if line.startswith("#"):
        for family in ("geglu", "rmsnorm"):
            _fill(root / "perf" / family / "__init__.py", FILLED[family])
            _fill(root / "perf" / family / "suites.yaml", SUITES.get(family, {}))
        continue
    if line.startswith("perfbot check"):
        continue  # checked on the GPU by the script that follows
    print("$", line, flush=True)
    env = {"PERFBOT_TRITON_COMMIT": SHA}  # `perfbot` must be on PATH
    subprocess.run(line, shell=True, cwd=root, check=True, env={**__import__("os").environ, **env})
subprocess.run([*git, "add", "-A"], cwd=root, check=True)
subprocess.run([*git, "commit", "-qm", "perfbot: two kernel families"], cwd=root, check=True)
