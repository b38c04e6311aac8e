"""The jobs that measure, decide and record together: one run of a kernels package (run.py), the
A/B of two revisions (ab.py; its sides made ready, ab_sides.py; each side's Triton, ab_tritons.py),
the bisect of a range (bisect.py; how it builds and measures a commit, bisect_probers.py; its
outcome file), what two revisions' kernels compile to (explain.py), the red-team selftest (its
cheats, exploits.py; their verdicts, red_team.py), and what follows a new step on main (a bisect
of each, an issue for each)."""
