"""A pull request's head, read from GitHub's REST API with the standard library alone: what
`perfbot verify-head` asks on the GPU machine, where only the measuring dependencies are
installed (docs/github.md, "Which extra each job installs").

One GET of /repos/{owner}/{name}/pulls/{number}. Transient failures (5xx, 429, a dropped
connection) are tried again a few times; the token goes to GITHUB_API_URL only, never along a
redirect.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BadInput, EnvironmentFailure

DEFAULT_API_URL = "https://api.github.com"
_MOST_BYTES = 4 * 1024 * 1024  # a pull request's JSON is a few kilobytes
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class PullHead:
    sha: str
    repository: str  # OWNER/NAME the head branch lives in; "" where its fork was deleted


def read_head(
    repo: str,
    pr: int,
    token: str,
    api_url: str = DEFAULT_API_URL,
    *,
    attempts: int = 4,
    backoff_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> PullHead:
    """The head commit of `repo`#`pr` and the repository it comes from."""
    if not token:
        raise EnvironmentFailure("GITHUB_TOKEN is not set; verify-head needs a token with pull-requests: read")
    owner, name = split_repo(repo)
    if {owner, name} & {".", ".."}:
        raise BadInput(f"--repo must be OWNER/NAME, got {repo!r}")
    path = "/".join(urllib.parse.quote(part, safe="") for part in (owner, name))
    request = urllib.request.Request(f"{api_url.rstrip('/')}/repos/{path}/pulls/{pr}")
    request.add_header("Accept", "application/vnd.github+json")
    request.add_unredirected_header("Authorization", f"Bearer {token}")  # not sent along a redirect
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return _parsed(answer.read(_MOST_BYTES + 1), repo, pr)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise BadInput(f"{repo}#{pr}: no such pull request, or the token cannot see it") from None
            if error.code not in (429, 500, 502, 503, 504) or attempt == attempts - 1:
                raise EnvironmentFailure(f"reading {repo}#{pr}: GitHub answered {error.code} {error.reason}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            if attempt == attempts - 1:
                reason = getattr(error, "reason", error)
                raise EnvironmentFailure(f"reading {repo}#{pr}: GitHub is unreachable ({reason})") from None
        sleep(backoff_s * 2**attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _parsed(body: bytes, repo: str, pr: int) -> PullHead:
    if len(body) > _MOST_BYTES:
        raise EnvironmentFailure(f"reading {repo}#{pr}: GitHub's answer is over {_MOST_BYTES} bytes")
    try:
        pull = json.loads(body)
        head = pull["head"]
        sha, origin = head["sha"], (head.get("repo") or {}).get("full_name") or ""
    except (ValueError, TypeError, KeyError, AttributeError):
        raise EnvironmentFailure(f"reading {repo}#{pr}: GitHub's answer is not a pull request") from None
    if not isinstance(sha, str) or not _FULL_SHA.fullmatch(sha) or not isinstance(origin, str):
        raise EnvironmentFailure(f"reading {repo}#{pr}: GitHub's answer names no head commit")
    return PullHead(sha, origin[:200])


def split_repo(repo: str) -> tuple[str, str]:
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or any(c.isspace() for c in repo):
        raise BadInput(f"--repo must be OWNER/NAME, got {repo!r}")
    return parts[0], parts[1]
