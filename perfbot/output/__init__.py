"""What perfbot shows and posts: markdown made safe (markdown.py) and its templates; a run's tables
(run_tables.py), a comparison's verdicts (verdicts.py), a bisect's outcome (bisect_tables.py) and
what `perfbot explain` found (explain_table.py); the pull request comment (comment.py) and status
(github.py); the selftest's tables (selftest.py) and the history site (site.py)."""
