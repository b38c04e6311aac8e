"""What perfbot shows and posts: markdown and tables (report.py, its templates), the pull
request comment and status (github.py), and the history site (site.py)."""
