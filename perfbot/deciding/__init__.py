"""Deciding from timings: the statistics, the regression policy (thresholds.yaml), the paired
and unpaired verdicts, the comparison file, and the change points of a series."""
