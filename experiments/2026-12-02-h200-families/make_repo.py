"""Build the README's two-kernel adoption repository (tests/test_readme_adoption.py's, filled in
as its test fills it) at DIR, with the README's commands run verbatim, and commit it.
    python experiments/2026-12-02-h200-families/make_repo.py DIR"""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.test_init import SHA, _fill  # noqa: E402
from tests.test_readme_adoption import FILLED, GEGLU, RMSNORM, SUITES, _readme_commands  # noqa: E402

root = Path(sys.argv[1])
ops = root / "src" / "mypkg" / "ops"
ops.mkdir(parents=True)
(root / "pyproject.toml").write_text('[project]\nname = "mypkg"\nversion = "0.1"\n')
(root / "src" / "mypkg" / "__init__.py").write_text("")
(ops / "__init__.py").write_text("")
(ops / "geglu.py").write_text(GEGLU)
(ops / "rmsnorm.py").write_text(RMSNORM)
git = ["git", "-c", "user.name=perfbot", "-c", "user.email=perfbot@localhost"]
subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
subprocess.run([*git, "add", "-A"], cwd=root, check=True)
subprocess.run([*git, "commit", "-qm", "kernels"], cwd=root, check=True)
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
