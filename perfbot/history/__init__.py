"""Main's record over time: the series of each benchmark (series.py), the steps found in them
and whose they are, the steps already reported or acknowledged, and the steps file the baseline
workflow hands to its bisect and issue jobs."""
