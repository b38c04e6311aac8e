"""GitHub, through github3.py: one PR comment kept up to date, and a commit status.

The comment is found again by the report's hidden marker (report.MARKER) on its last line, so a
PR carries one perfbot comment, edited on every push. Transient failures -- 5xx answers, rate
limits (403 with X-RateLimit-Remaining: 0, or 429), dropped connections -- are retried with
backoff; the whole find-then-edit-or-create step is retried, so a create whose answer was lost
is found and edited next time instead of posted twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import github3
import github3.exceptions

from .errors import BadInput, EnvironmentFailure
from .report import MARKER

DEFAULT_API_URL = "https://api.github.com"
STATES = ("success", "failure", "error", "pending")
T = TypeVar("T")


@dataclass(frozen=True)
class Posted:
    action: str  # "created" or "updated"
    url: str


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
        max_wait_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not token:
            raise EnvironmentFailure("GITHUB_TOKEN is not set; the comment needs a token with pull-requests: write")
        self._token = token
        self._client = github3.GitHub(token=token)
        self._client.session.base_url = api_url.rstrip("/")
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep

    @classmethod
    def from_environment(cls, **kwargs: object) -> GitHub:
        """Token from GITHUB_TOKEN; API root from GITHUB_API_URL (set by Actions, also on GHES)."""
        return cls(os.environ.get("GITHUB_TOKEN", ""), os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, **kwargs)

    def upsert_comment(self, repo: str, pr: int, body: str, author: str | None = None) -> Posted:
        """Edit perfbot's comment on the PR, or create it. `author`: the login whose comments may
        be edited; by default any bot account (as GITHUB_TOKEN's github-actions[bot] is)."""
        owner, name = split_repo(repo)
        if MARKER not in body:
            body = body.rstrip("\n") + "\n" + MARKER + "\n"

        def attempt() -> Posted:
            issue = self._client.issue(owner, name, pr)
            if issue is None:
                raise BadInput(f"{repo}#{pr}: not found, or the token cannot see it")
            ours = [c for c in issue.comments() if _is_ours(c, author)]
            if ours:
                comment = ours[-1]
                comment.edit(body)
                return Posted("updated", comment.html_url)
            created = issue.create_comment(body)
            return Posted("created", created.html_url)

        return self._retrying(f"posting the comment on {repo}#{pr}", attempt)

    def set_status(self, repo: str, sha: str, state: str, description: str, context: str = "perfbot",
                   target_url: str | None = None) -> None:
        if state not in STATES:
            raise BadInput(f"status state must be one of {', '.join(STATES)}, got {state!r}")
        owner, name = split_repo(repo)

        def attempt() -> None:
            repository = self._client.repository(owner, name)
            if repository is None:
                raise BadInput(f"{repo}: not found, or the token cannot see it")
            # GitHub keeps at most 140 characters of a status description.
            repository.create_status(sha, state, target_url=target_url, description=description[:140], context=context)

        self._retrying(f"setting the status of {sha[:12]} on {repo}", attempt)

    def _retrying(self, what: str, operation: Callable[[], T]) -> T:
        last = ""
        for attempt in range(1, self._attempts + 1):
            try:
                return self._classified(operation)
            except _Retry as retry:
                last = str(retry)
                if attempt == self._attempts:
                    break
                wait = retry.wait if retry.wait is not None else self._backoff_s * 2 ** (attempt - 1)
                self._sleep(min(max(wait, 0.0), self._max_wait_s))
        raise EnvironmentFailure(self._redact(f"GitHub unreachable: {what} failed {self._attempts} times; last: {last}"))

    def _classified(self, operation: Callable[[], T]) -> T:
        """Run once; turn github3's failures into _Retry or a user-facing error."""
        try:
            return operation()
        except github3.exceptions.TransportError as error:
            raise _Retry(f"connection failed ({type(error.exception).__name__})") from None
        except github3.exceptions.GitHubError as error:
            response = error.response
            message = self._redact(str(getattr(error, "msg", "") or "")) or response.reason
            headers = response.headers
            if error.code >= 500:
                raise _Retry(f"{error.code} {message}") from None
            if error.code == 429 or (error.code == 403 and (headers.get("X-RateLimit-Remaining") == "0"
                                                           or "rate limit" in message.lower())):
                raise _Retry(f"rate limited ({error.code} {message})", _rate_limit_wait(headers)) from None
            if error.code == 401:
                raise EnvironmentFailure(
                    f"GitHub rejected the token (401 {message}); check GITHUB_TOKEN and GITHUB_API_URL") from None
            if error.code in (403, 404):
                raise EnvironmentFailure(
                    f"GitHub refused ({error.code} {message}); the token needs pull-requests: write "
                    "(and statuses: write for --status)") from None
            raise BadInput(f"GitHub did not accept the request ({error.code} {message})") from None

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _is_ours(comment: object, author: str | None) -> bool:
    body = (getattr(comment, "body", "") or "").rstrip()
    user = getattr(comment, "user", None)
    if not body.endswith(MARKER) or user is None:
        return False
    return user.login == author if author else getattr(user, "type", "") == "Bot"


def _rate_limit_wait(headers: object) -> float | None:
    get = getattr(headers, "get")
    if get("Retry-After"):
        try:
            return float(get("Retry-After"))
        except ValueError:
            return None
    if get("X-RateLimit-Reset"):
        try:
            return float(get("X-RateLimit-Reset")) - time.time() + 1
        except ValueError:
            return None
    return None


def split_repo(repo: str) -> tuple[str, str]:
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or any(c.isspace() for c in repo):
        raise BadInput(f"--repo must be OWNER/NAME, got {repo!r}")
    return parts[0], parts[1]
