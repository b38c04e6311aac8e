"""GitHub, through github3.py: one PR comment kept up to date, a commit status, and an issue
opened once.

The comment is found again by the report's hidden marker (markdown.MARKER) on its last line and
by its author, the identity the token authenticates as: a PR carries one perfbot comment, edited
on every push, and no one else's comment is ever touched. Before posting for a commit, the PR's
head is checked: a report is posted only on the PR whose head is the commit it measured.

Transient failures -- 5xx answers, rate limits (403 or 429 with Retry-After, or with
X-RateLimit-Remaining: 0), dropped connections -- are retried with backoff, within a time
budget: a wait that would outlast it fails at once, so the job never dies on its timeout. The
whole find-then-edit-or-create step is retried, so a create whose answer was lost is found and
edited next time instead of posted twice. An issue is found again the same way, by a marker its
body ends with and its author, among the repository's issues open and closed: it is opened once.
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import BadInput, EnvironmentFailure
from .markdown import MARKER
from .pull_head import DEFAULT_API_URL, split_repo

# The `github` extra: only the commands that post need it (docs/github.md, "Which extra each job installs").
try:
    import github3
    import github3.exceptions

    HAS_GITHUB3 = True
except ModuleNotFoundError as missing:
    if missing.name != "github3":
        raise
    HAS_GITHUB3 = False
STATES = ("success", "failure", "error", "pending")
# Who the workflow's own GITHUB_TOKEN posts as. That token may not read GET /user (403).
ACTIONS_BOT = "github-actions[bot]"
# What a 403 says the token lacks, unless the call says otherwise.
_COMMENT_SCOPES = "pull-requests: write (and statuses: write for --status)"
T = TypeVar("T")


@dataclass(frozen=True)
class Posted:
    action: str  # "created" or "updated"
    url: str


@dataclass(frozen=True)
class HeadCheck:
    """Where the measured commit stands on the PR: its head ("current"), or an earlier commit of
    it ("stale": the PR moved on while the report was made)."""

    standing: str
    head_sha: str
    head_repository: str  # OWNER/NAME the PR's head branch lives in (a fork's, or the repository's own)


class _Retry(Exception):
    """A failure worth another attempt, after `wait` seconds."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


class GitHub:
    def __init__(
        self,
        token: str,
        api_url: str = DEFAULT_API_URL,
        *,
        attempts: int = 5,
        backoff_s: float = 2.0,
        budget_s: float = 180.0,
        sleep: Callable[[float], None] = time.sleep,
        needed_by: str = "perfbot",
    ):
        if not HAS_GITHUB3:
            raise EnvironmentFailure(f"{needed_by} needs github3.py: pip install 'perfbot[github]'")
        if not token:
            raise EnvironmentFailure("GITHUB_TOKEN is not set; the comment needs a token with pull-requests: write")
        self._token = token
        self._client = github3.GitHub(token=token)
        self._client.session.base_url = api_url.rstrip("/")
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._budget_s = budget_s
        self._sleep = sleep

    @classmethod
    def from_environment(cls, **kwargs: Any) -> GitHub:
        """Token from GITHUB_TOKEN; API root from GITHUB_API_URL (set by Actions, also on GHES)."""
        return cls(os.environ.get("GITHUB_TOKEN", ""), os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, **kwargs)

    def identity(self) -> str:
        """The login the token posts as: GET /user, or github-actions[bot] where the token may not
        read it (the Actions token gets 403 there). A GitHub App's installation token gets 403 too
        but posts as `<app>[bot]`: pass that login explicitly (`perfbot comment --author`)."""

        def attempt() -> str:
            try:
                return str(self._client.me().login)
            except github3.exceptions.ForbiddenError as error:
                if _is_rate_limited(error.response):
                    raise
                return ACTIONS_BOT

        return self._retrying("reading the token's identity (GET /user)", attempt)

    def check_head(self, repo: str, pr: int, sha: str) -> HeadCheck:
        """Whether `sha` is the head of PR `pr` (or an earlier commit of it). A PR that does not
        have the commit at all is refused: the report belongs to another pull request."""
        owner, name = split_repo(repo)

        def attempt() -> HeadCheck:
            pull = self._client.pull_request(owner, name, pr)
            if pull is None:
                raise BadInput(f"{repo}#{pr}: no such pull request, or the token cannot see it")
            head = str(pull.head.sha)
            origin = str(pull.head.repository.full_name) if pull.head.repository else ""
            if head == sha:
                return HeadCheck("current", head, origin)
            if any(commit.sha == sha for commit in pull.commits()):
                return HeadCheck("stale", head, origin)
            raise BadInput(
                f"{repo}#{pr} has head {head[:12]} and no commit {sha[:12]}: the report measured "
                "another pull request's code; nothing posted"
            )

        return self._retrying(
            f"reading {repo}#{pr}", attempt, not_found=f"{repo}#{pr}: no such pull request, or the token cannot see it"
        )

    def upsert_comment(self, repo: str, pr: int, body: str, author: str | None = None) -> Posted:
        """Edit perfbot's comment on the PR, or create it. Only a comment by `author` (default:
        the token's own identity) whose last line is the marker counts as perfbot's."""
        owner, name = split_repo(repo)
        login = author or self.identity()
        if MARKER not in body:
            body = body.rstrip("\n") + "\n" + MARKER + "\n"

        def attempt() -> Posted:
            issue = self._client.issue(owner, name, pr)
            if issue is None:
                raise BadInput(f"{repo}#{pr}: no such pull request, or the token cannot see it")
            ours = [c for c in issue.comments() if _is_ours(c, login)]
            if ours:
                comment = ours[-1]
                comment.edit(body)
                return Posted("updated", comment.html_url)
            created = issue.create_comment(body)
            return Posted("created", created.html_url)

        return self._retrying(
            f"posting the comment on {repo}#{pr}",
            attempt,
            not_found=f"{repo}#{pr}: no such pull request, or the token cannot see it",
        )

    def open_issue(
        self, repo: str, title: str, body: str, marker: str, since: str | None = None, author: str | None = None
    ) -> Posted:
        """Open an issue whose body ends with `marker`, unless the repository has one already, open
        or closed: Posted("found", ...) then. Only an issue by `author` (default: the token's own
        identity) counts, as for comments; `since` (ISO 8601, UTC) skips the issues not updated
        since then, which an issue opened later never is."""
        owner, name = split_repo(repo)
        login = author or self.identity()
        if not body.rstrip().endswith(marker):
            raise BadInput(f"the issue's body must end with its marker {marker}")

        def attempt() -> Posted:
            repository = self._client.repository(owner, name)
            if repository is None:
                raise BadInput(f"{repo}: no such repository, or the token cannot see it")
            for issue in repository.issues(state="all", since=since, sort="created", direction="desc"):
                if _is_ours(issue, login, marker):
                    return Posted("found", issue.html_url)
            # GitHub keeps at most 256 characters of a title.
            created = repository.create_issue(title[:256], body)
            return Posted("created", created.html_url)

        return self._retrying(
            f"opening an issue on {repo}",
            attempt,
            not_found=f"{repo}: no such repository, or the token cannot see it",
            needs="issues: write",
        )

    def set_status(
        self, repo: str, sha: str, state: str, description: str, context: str = "perfbot", target_url: str | None = None
    ) -> None:
        if state not in STATES:
            raise BadInput(f"status state must be one of {', '.join(STATES)}, got {state!r}")
        owner, name = split_repo(repo)

        def attempt() -> None:
            repository = self._client.repository(owner, name)
            if repository is None:
                raise BadInput(f"{repo}: no such repository, or the token cannot see it")
            # GitHub keeps at most 140 characters of a status description.
            repository.create_status(sha, state, target_url=target_url, description=description[:140], context=context)

        self._retrying(
            f"setting the status of {sha[:12]} on {repo}",
            attempt,
            not_found=f"{repo}: no such repository or commit {sha[:12]}, or the token cannot see them",
        )

    def _retrying(
        self, what: str, operation: Callable[[], T], not_found: str | None = None, needs: str = _COMMENT_SCOPES
    ) -> T:
        last = ""
        waited = 0.0
        for attempt in range(1, self._attempts + 1):
            try:
                return self._classified(operation, not_found, needs)
            except _Retry as retry:
                last = str(retry)
                if attempt == self._attempts:
                    break
                wait = max(retry.wait if retry.wait is not None else self._backoff_s * 2 ** (attempt - 1), 0.0)
                if waited + wait > self._budget_s:
                    raise EnvironmentFailure(
                        self._redact(
                            f"GitHub asks to wait {wait:.0f} s more ({last}), beyond the {self._budget_s:.0f} s "
                            f"perfbot waits; {what} gave up at {_utc_now()}"
                        )
                    ) from None
                self._sleep(wait)
                waited += wait
        raise EnvironmentFailure(
            self._redact(f"GitHub unreachable: {what} failed {self._attempts} times; last: {last}")
        )

    def _classified(self, operation: Callable[[], T], not_found: str | None, needs: str) -> T:
        """Run once; turn github3's failures into _Retry or a user-facing error."""
        try:
            return operation()
        except github3.exceptions.TransportError as error:
            raise _Retry(f"connection failed ({type(error.exception).__name__})") from None
        except github3.exceptions.IncompleteResponse as error:
            raise EnvironmentFailure(
                f"GitHub's answer lacks a field perfbot needs ({error.msg}); is GITHUB_API_URL a GitHub API?"
            ) from None
        except github3.exceptions.GitHubError as error:
            response = error.response
            message = self._redact(str(getattr(error, "msg", "") or "")) or response.reason
            if error.code >= 500:
                raise _Retry(f"{error.code} {message}") from None
            if error.code in (403, 429) and _is_rate_limited(response):
                raise _Retry(f"rate limited ({error.code} {message})", _rate_limit_wait(response.headers)) from None
            if error.code == 401:
                raise EnvironmentFailure(
                    f"GitHub rejected the token (401 {message}); check GITHUB_TOKEN and GITHUB_API_URL"
                ) from None
            if error.code == 404 and not_found is not None:
                raise BadInput(not_found) from None
            if error.code == 403:
                raise EnvironmentFailure(f"GitHub refused (403 {message}); the token needs {needs}") from None
            raise BadInput(f"GitHub did not accept the request ({error.code} {message})") from None

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _is_ours(comment: Any, login: str, marker: str = MARKER) -> bool:
    """A comment or an issue of perfbot's: by `login`, its body ending with the marker (so a marker
    quoted inside it, or anyone else's, does not count)."""
    body = (getattr(comment, "body", "") or "").rstrip()
    user = getattr(comment, "user", None)
    return body.endswith(marker) and user is not None and str(user.login).lower() == login.lower()


def _is_rate_limited(response: Any) -> bool:
    """A primary limit (no requests left), a secondary one (Retry-After), or GitHub saying so."""
    headers = response.headers
    if headers.get("Retry-After") or headers.get("X-RateLimit-Remaining") == "0":
        return True
    try:
        return "rate limit" in str(response.json().get("message", "")).lower()
    except (ValueError, AttributeError):
        return False


def _rate_limit_wait(headers: Any) -> float | None:
    for name, since_now in (("Retry-After", False), ("X-RateLimit-Reset", True)):
        value = headers.get(name)
        if value:
            try:
                return float(value) - (time.time() - 1 if since_now else 0)
            except ValueError:
                return None
    return None


def _utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%H:%M:%S UTC")
