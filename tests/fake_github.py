"""A loopback fake of the few GitHub REST endpoints perfbot's GitHub client and the workflows'
scripts use: comments, commit statuses, pull requests, issues (listed and opened), a
collaborator's permission, and Pages deployments (with the Actions OIDC token they need).

It is a real HTTP server rather than a mock of `requests`, so the real github3.py runs against it
unmodified. github3's models read most JSON keys with `d["key"]` and follow URLs found in bodies,
so every object here carries the keys github3 reads and every URL points back at this server.
"""

from __future__ import annotations

import copy
import html
import json
import math
import re
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.client import responses as REASONS
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

STATUS_STATES = frozenset({"pending", "success", "error", "failure"})
ACTIONS_BOT = "github-actions[bot]"
RATE_LIMIT = 5000
CREATED = "2024-05-01T12:00:00Z"  # fixed timestamp of the repositories and pull requests


@dataclass(frozen=True)
class Request:
    """One request as the server received it, for tests to assert on what the client sent."""

    method: str
    path: str  # including the query string
    headers: dict[str, str]
    body: str


@dataclass(frozen=True)
class Identity:
    """Who a token authenticates as. The Actions token (and an App's) may not read GET /user."""

    login: str
    type: str = "User"
    reads_user: bool = True


@dataclass
class _Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _not_found() -> _Reply:
    return _Reply(404, {"message": "Not Found"})


def _bad_json() -> _Reply:
    return _Reply(400, {"message": "Problems parsing JSON"})


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that stopping also ends keep-alive connections still held by clients."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name with getfqdn, which can stall on a machine without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def close_connections(self) -> None:
        with self.connections_lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # the client already closed it


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as requests' connection pool expects
    server_version = "GitHub.com"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def respond(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        request = Request(self.command, self.path, dict(self.headers.items()), body)
        reply, data = self.server.fake._handle(request)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = respond

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: test output should show the tests, not an access log."""


class FakeGitHub:
    """Use as a context manager: `with FakeGitHub(token="t0ken") as gh: ...` starts a ThreadingHTTPServer in a
    daemon thread and stops it on exit."""

    def __init__(
        self,
        token: str = "test-token",
        repos: tuple[str, ...] = ("octo/perfbot",),
        identity: Identity = Identity(ACTIONS_BOT, "Bot", reads_user=False),
    ) -> None:
        self.token = token
        self.tokens: dict[str, Identity] = {token: identity}
        self.repos = repos
        self.url = ""
        self.requests: list[Request] = []
        self.comments: dict[tuple[str, int], list[dict]] = {}
        self.statuses: dict[tuple[str, str], list[dict]] = {}
        self.pulls: dict[tuple[str, int], dict] = {}
        self.issues: dict[str, list[dict]] = {}  # repository -> its issues (not pull requests), oldest first
        self.roles: dict[tuple[str, str], str] = {}  # (repository, login) -> role: admin, maintain, write, ...
        self.forbidden: list[str] = []
        # Pages: the run's artifacts (id -> name), the deployments asked for, the statuses a
        # deployment reports in turn (the last one repeats), and the OIDC token a job may request.
        self.artifacts: dict[int, str] = {}
        self.pages_deployments: list[dict] = []
        self.pages_statuses: list[str] = ["deployment_in_progress", "succeed"]
        self.oidc_request_token = "oidc-request-token"
        self.tokens[self.oidc_request_token] = Identity("actions-id-token-request", "Bot", reads_user=False)
        self.oidc_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOm9jdG8vcGVyZmJvdCJ9.c2lnbmF0dXJl"
        self._pushes: list[tuple[str, str, str, int, str]] = []  # (method, path prefix, repo, PR, new head)
        self._forced: deque[Callable[[], _Reply]] = deque()
        self._lock = threading.Lock()
        self._next_id = 1_000_001  # comment and status ids, unique across the server like GitHub's
        self._user_ids: dict[str, int] = {}
        self._rate_reset = int(time.time()) + 3600
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> FakeGitHub:
        self._server = _Server(self)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        # A short poll interval: shutdown() waits for the serving loop to notice, 0.5 s per test by default.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-github", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._server.close_connections()
        self._thread.join()

    # --- test controls ---

    def add_comment(self, repo: str, number: int, body: str, login: str = "someone", user_type: str = "User") -> dict:
        """Seed a comment by another user, as if posted before the client ran; returns a copy of it."""
        if repo not in self.repos:
            raise ValueError(f"{repo!r} is not one of this fake's repositories {self.repos}")
        with self._lock:
            return copy.deepcopy(self._store_comment(repo, number, body, self._user(login, user_type)))

    def add_issue(
        self, repo: str, title: str, body: str, login: str = "someone", user_type: str = "User", state: str = "open"
    ) -> dict:
        """Seed an issue, as if opened before the client ran (and closed, with state="closed");
        returns a copy of it."""
        if repo not in self.repos:
            raise ValueError(f"{repo!r} is not one of this fake's repositories {self.repos}")
        with self._lock:
            issue = self._store_issue(repo, title, body, self._user(login, user_type))
            if state == "closed":
                issue.update(state="closed", closed_at=_now(), state_reason="completed")
            return copy.deepcopy(issue)

    def add_token(self, token: str, login: str, user_type: str = "User") -> None:
        """Accept another token, as a personal access token of `login` (it may read GET /user)."""
        self.tokens[token] = Identity(login, user_type, reads_user=True)

    def add_pull(
        self, repo: str, number: int, head_sha: str, earlier: tuple[str, ...] = (), head_repo: str | None = None
    ) -> None:
        """A pull request whose head is `head_sha`, after the `earlier` commits, from `head_repo`
        (a fork) or from this repository."""
        if repo not in self.repos:
            raise ValueError(f"{repo!r} is not one of this fake's repositories {self.repos}")
        with self._lock:
            self.pulls[(repo, number)] = {
                "head": head_sha,
                "commits": [*earlier, head_sha],
                "head_repo": head_repo or repo,
            }

    def add_artifact(self, artifact_id: int, name: str) -> None:
        """An artifact of the workflow run, as upload-artifact leaves one."""
        self.artifacts[artifact_id] = name

    def add_collaborator(self, repo: str, login: str, role: str) -> None:
        """`login` gets `role` (admin, maintain, write, triage, read) in `repo`."""
        self.roles[(repo, login.lower())] = role

    def push_after(self, method: str, path_prefix: str, repo: str, number: int, new_head: str) -> None:
        """Once a `method` request under `path_prefix` has been answered, PR `number` gets a new
        head commit, as when someone pushes while a client is mid-way."""
        self._pushes.append((method, path_prefix, repo, number, new_head))

    def forbid(self, path_prefix: str) -> None:
        """Answer every request under `path_prefix` with 403, as for a token lacking that permission."""
        self.forbidden.append(path_prefix)

    def fail_next(
        self, status: int, count: int = 1, headers: dict[str, str] | None = None, body: dict | None = None
    ) -> None:
        """Answer the next `count` requests, whatever they are, with `status` instead of handling them."""
        reply_body = body if body is not None else {"message": REASONS.get(status, "Forced failure")}
        with self._lock:
            self._forced.extend([lambda: _Reply(status, reply_body, dict(headers or {}))] * count)

    def rate_limit_next(self, count: int = 1, reset_in: float = 1.0, secondary: bool = False) -> None:
        """Answer the next `count` requests the way GitHub does when a rate limit is hit."""
        if secondary:

            def reply() -> _Reply:
                return _Reply(
                    429,
                    {
                        "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                        "try again. If you reach out to GitHub Support for help, please include the "
                        "request ID.",
                        "documentation_url": self._docs("rate-limits-for-the-rest-api"),
                    },
                    {"Retry-After": str(math.ceil(reset_in))},
                )
        else:

            def reply() -> _Reply:
                # The reset time is computed when the reply is sent, so it is always reset_in from that moment.
                reset = math.ceil(time.time() + reset_in)
                return _Reply(
                    403,
                    {
                        "message": "API rate limit exceeded for installation. If you reach out to GitHub Support for "
                        "help, please include the request ID.",
                        "documentation_url": self._docs("rate-limits-for-the-rest-api"),
                    },
                    {
                        "X-RateLimit-Limit": str(RATE_LIMIT),
                        "X-RateLimit-Remaining": "0",
                        "X-RateLimit-Used": str(RATE_LIMIT),
                        "X-RateLimit-Reset": str(reset),
                        "X-RateLimit-Resource": "core",
                    },
                )

        with self._lock:
            self._forced.extend([reply] * count)

    # --- request handling ---

    def _handle(self, request: Request) -> tuple[_Reply, bytes]:
        """Record, then answer: a queued forced reply, else 401 without the token, else the route."""
        with self._lock:
            self.requests.append(request)
            identity = self._identity(request.headers)
            if self._forced:
                reply = self._forced.popleft()()
            elif identity is None:
                reply = _Reply(401, {"message": "Bad credentials", "documentation_url": self._docs("")})
            elif any(urlsplit(request.path).path.startswith(prefix) for prefix in self.forbidden):
                reply = _Reply(
                    403, {"message": "Resource not accessible by integration", "documentation_url": self._docs("")}
                )
            else:
                reply = self._route(request, identity)
            reply.headers = {**self._rate_headers(), **reply.headers}
            for push in list(self._pushes):
                method, prefix, repo, number, head = push
                if request.method == method and urlsplit(request.path).path.startswith(prefix):
                    self._pushes.remove(push)
                    pull = self.pulls[(repo, number)]
                    pull["head"], pull["commits"] = head, [*pull["commits"], head]
            return reply, json.dumps(reply.body).encode()

    def _identity(self, headers: dict[str, str]) -> Identity | None:
        value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        scheme, _, credential = value.partition(" ")
        return self.tokens.get(credential.strip()) if scheme.lower() in ("token", "bearer") else None

    def _rate_headers(self) -> dict[str, str]:
        used = min(len(self.requests), RATE_LIMIT)
        return {
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": str(RATE_LIMIT - used),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Reset": str(self._rate_reset),
            "X-RateLimit-Resource": "core",
        }

    def _route(self, request: Request, identity: Identity) -> _Reply:
        parts = urlsplit(request.path)
        path, query = parts.path, parts.query
        if path == "/user" and request.method == "GET":
            if identity.reads_user:
                return _Reply(200, self._full_user(identity))
            return _Reply(
                403,
                {
                    "message": "Resource not accessible by integration",
                    "documentation_url": self._docs("users/users#get-the-authenticated-user"),
                },
            )
        if path == "/_actions/id-token" and request.method == "GET":
            # ACTIONS_ID_TOKEN_REQUEST_URL: answers only its own request token.
            if identity.login != "actions-id-token-request":
                return _Reply(401, {"message": "Bad credentials"})
            return _Reply(200, {"value": self.oidc_token})
        if path == "/rate_limit" and request.method == "GET":
            return _Reply(200, self._rate_limit_json())
        match = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        repo = match and self._known_repo(match[1], match[2])
        if not repo:
            return _not_found()
        rest = match[3] or ""
        if rest == "" and request.method == "GET":
            return _Reply(200, self._repo_json(repo))
        if rest == "/issues" and request.method == "GET":
            return self._list_issues(repo, path, query)
        if rest == "/issues" and request.method == "POST":
            return self._create_issue(repo, request.body, identity)
        if m := re.fullmatch(r"/issues/(\d+)(/comments)?", rest):
            number = int(m[1])
            if number <= 0:
                return _not_found()
            if not m[2] and request.method == "GET":
                opened = next((i for i in self.issues.get(repo, []) if i["number"] == number), None)
                return _Reply(200, opened or self._issue_json(repo, number))
            if m[2] and request.method == "GET":
                return self._list_comments(repo, number, path, query)
            if m[2] and request.method == "POST":
                return self._create_comment(repo, number, request.body, identity)
        if (m := re.fullmatch(r"/pulls/(\d+)(/commits)?", rest)) and request.method == "GET":
            pull = self.pulls.get((repo, int(m[1])))
            if pull is None:
                return _not_found()
            if m[2]:
                return _Reply(200, [self._commit_json(pull["head_repo"], sha) for sha in pull["commits"]])
            return _Reply(200, self._pull_json(repo, int(m[1]), pull))
        if (m := re.fullmatch(r"/issues/comments/(\d+)", rest)) and request.method in ("GET", "PATCH"):
            comment = self._find_comment(repo, int(m[1]))
            if comment is None:
                return _not_found()
            return self._edit_comment(comment, request.body) if request.method == "PATCH" else _Reply(200, comment)
        if (m := re.fullmatch(r"/statuses/([^/]+)", rest)) and request.method == "POST":
            return self._create_status(repo, m[1], request.body, identity)
        if rest == "/pages/deployments" and request.method == "POST":
            return self._create_pages_deployment(repo, request.body)
        if (m := re.fullmatch(r"/pages/deployments/([^/]+)(/cancel)?", rest)) and request.method in ("GET", "POST"):
            return self._pages_deployment(m[1], cancel=bool(m[2]) and request.method == "POST")
        if (m := re.fullmatch(r"/collaborators/([^/]+)/permission", rest)) and request.method == "GET":
            return self._permission(repo, m[1])
        return _not_found()

    def _create_pages_deployment(self, repo: str, body: str) -> _Reply:
        """POST /repos/{owner}/{repo}/pages/deployments: an artifact of the run, by its id, with the
        run's OIDC token."""
        if (data := self._json_object(body)) is None:
            return _bad_json()
        artifact = data.get("artifact_id")
        if not isinstance(artifact, int) or isinstance(artifact, bool) or not data.get("pages_build_version"):
            return self._validation_failed(
                "PagesDeployment", "artifact_id", "pages/pages#create-a-github-pages-deployment"
            )
        if data.get("oidc_token") != self.oidc_token:
            return _Reply(403, {"message": "Invalid OIDC token"})
        if artifact not in self.artifacts:
            return _Reply(404, {"message": "Artifact not found"})
        number = len(self.pages_deployments) + 1
        self.pages_deployments.append({"id": number, **data, "polled": 0, "cancelled": False})
        owner, name = repo.split("/")
        return _Reply(
            200,
            {
                "id": number,
                "status_url": f"{self.url}/repos/{repo}/pages/deployments/{number}",
                "page_url": f"https://{owner}.github.io/{name}/",
            },
        )

    def _pages_deployment(self, number: str, cancel: bool) -> _Reply:
        found = next((d for d in self.pages_deployments if str(d["id"]) == number), None)
        if found is None:
            return _not_found()
        if cancel:
            found["cancelled"] = True
            return _Reply(200, {})
        status = self.pages_statuses[min(found["polled"], len(self.pages_statuses) - 1)]
        found["polled"] += 1
        return _Reply(200, {"status": status})

    def _permission(self, repo: str, login: str) -> _Reply:
        """GET /repos/{owner}/{repo}/collaborators/{username}/permission: `permission` is the
        legacy level (maintain reads as write, triage as read), `role_name` the role itself; a
        user who is no collaborator has none (a public repository: read)."""
        if not re.fullmatch(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*", login):
            return _not_found()
        role = self.roles.get((repo, login.lower()), "none")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return _Reply(200, {"permission": legacy, "role_name": role, "user": self._user(login, "User")})

    def _known_repo(self, owner: str, name: str) -> str | None:
        """The configured spelling of owner/name; GitHub matches repository names case-insensitively."""
        wanted = f"{owner}/{name}".lower()
        return next((r for r in self.repos if r.lower() == wanted), None)

    @staticmethod
    def _json_object(body: str) -> dict | None:
        try:
            data = json.loads(body)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def _validation_failed(self, resource: str, field_name: str, doc: str) -> _Reply:
        return _Reply(
            422,
            {
                "message": "Validation Failed",
                "errors": [{"resource": resource, "field": field_name, "code": "invalid"}],
                "documentation_url": self._docs(doc),
            },
        )

    def _list_comments(self, repo: str, number: int, path: str, query: str) -> _Reply:
        return self._paged(self.comments.get((repo, number), []), path, dict(parse_qsl(query, keep_blank_values=True)))

    def _paged(self, items: list[dict], path: str, params: dict[str, str]) -> _Reply:
        """One page of `items`, with the Link header GitHub sends (github3 follows rel="next")."""
        per_page = min(max(_int(params.get("per_page"), 30), 1), 100)
        page = max(_int(params.get("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)
        rels = []
        if page > 1:
            rels.append(("prev", page - 1))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        links = ", ".join(f'<{self.url}{path}?{urlencode({**params, "page": p})}>; rel="{rel}"' for rel, p in rels)
        start = (page - 1) * per_page
        return _Reply(200, items[start : start + per_page], {"Link": links} if links else {})

    def _list_issues(self, repo: str, path: str, query: str) -> _Reply:
        """GET /repos/{owner}/{repo}/issues: open ones unless state says otherwise, updated at or
        after `since`, newest first unless direction=asc."""
        params = dict(parse_qsl(query, keep_blank_values=True))
        state = params.get("state", "open")
        if state not in ("open", "closed", "all"):
            return self._validation_failed("Issue", "state", "issues/issues#list-repository-issues")
        found = [i for i in self.issues.get(repo, []) if state in ("all", i["state"])]
        if "since" in params:
            found = [i for i in found if i["updated_at"] >= params["since"]]
        key = "updated_at" if params.get("sort") == "updated" else "created_at"
        found.sort(key=lambda i: (i[key], i["number"]), reverse=params.get("direction", "desc") != "asc")
        return self._paged(found, path, params)

    def _create_issue(self, repo: str, body: str, identity: Identity) -> _Reply:
        if (data := self._json_object(body)) is None:
            return _bad_json()
        title, text = data.get("title"), data.get("body") or ""
        if not isinstance(title, str) or not title.strip() or len(title) > 256:
            return self._validation_failed("Issue", "title", "issues/issues#create-an-issue")
        if not isinstance(text, str) or len(text) > 65536:
            return self._validation_failed("Issue", "body", "issues/issues#create-an-issue")
        return _Reply(201, self._store_issue(repo, title, text, self._user(identity.login, identity.type)))

    def _store_issue(self, repo: str, title: str, body: str, user: dict) -> dict:
        numbers = [n for r, n in self.pulls if r == repo] + [i["number"] for i in self.issues.get(repo, [])]
        number = max(numbers, default=0) + 1
        api = f"{self.url}/repos/{repo}"
        issue_id = self._new_id()
        now = _now()
        issue = {
            "url": f"{api}/issues/{number}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{number}/labels{{/name}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "events_url": f"{api}/issues/{number}/events",
            "html_url": f"{self.url}/{repo}/issues/{number}",
            "id": issue_id,
            "node_id": f"I_kwDO{issue_id}",
            "number": number,
            "title": title,
            "user": user,
            "labels": [],
            "state": "open",
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": 0,
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "closed_by": None,
            "author_association": "NONE",
            "active_lock_reason": None,
            "state_reason": None,
            **self._bodies(body),
        }
        self.issues.setdefault(repo, []).append(issue)
        return issue

    def _create_comment(self, repo: str, number: int, body: str, identity: Identity) -> _Reply:
        if (data := self._json_object(body)) is None:
            return _bad_json()
        if not isinstance(data.get("body"), str) or not data["body"]:
            return self._validation_failed("IssueComment", "body", "issues/comments#create-an-issue-comment")
        return _Reply(201, self._store_comment(repo, number, data["body"], self._user(identity.login, identity.type)))

    def _edit_comment(self, comment: dict, body: str) -> _Reply:
        if (data := self._json_object(body)) is None:
            return _bad_json()
        if not isinstance(data.get("body"), str) or not data["body"]:
            return self._validation_failed("IssueComment", "body", "issues/comments#update-an-issue-comment")
        comment.update(self._bodies(data["body"]), updated_at=_now())
        return _Reply(200, comment)

    def _create_status(self, repo: str, sha: str, body: str, identity: Identity) -> _Reply:
        if (data := self._json_object(body)) is None:
            return _bad_json()
        if data.get("state") not in STATUS_STATES:
            return self._validation_failed("Status", "state", "commits/statuses#create-a-commit-status")
        now = _now()
        status_id = self._new_id()
        status = {
            "url": f"{self.url}/repos/{repo}/statuses/{sha}",
            "avatar_url": self._avatar(identity.login),
            "id": status_id,
            "node_id": f"SC_kwDO{status_id}",
            "state": data["state"],
            "description": data.get("description"),
            "target_url": data.get("target_url"),
            "context": data.get("context") or "default",
            "created_at": now,
            "updated_at": now,
            "creator": self._user(identity.login, identity.type),
        }
        self.statuses.setdefault((repo, sha), []).append(status)
        return _Reply(201, status)

    def _find_comment(self, repo: str, comment_id: int) -> dict | None:
        return next(
            (c for (r, _), comments in self.comments.items() if r == repo for c in comments if c["id"] == comment_id),
            None,
        )

    # --- JSON documents, shaped like GitHub's with the `full` media type github3 asks for ---

    def _docs(self, page: str) -> str:
        return f"{self.url}/docs/rest/{page}"

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _avatar(self, login: str) -> str:
        return f"{self.url}/avatars/u/{self._user_id(login)}?v=4"

    def _user_id(self, login: str) -> int:
        return self._user_ids.setdefault(login, 5000 + len(self._user_ids))

    def _user(self, login: str, user_type: str) -> dict:
        api = f"{self.url}/users/{quote(login)}"
        return {
            "login": login,
            "id": self._user_id(login),
            "node_id": f"U_kgDO{self._user_id(login)}",
            "avatar_url": self._avatar(login),
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.url}/{quote(login)}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": user_type,
            "site_admin": False,
        }

    def _full_user(self, identity: Identity) -> dict:
        return {
            **self._user(identity.login, identity.type),
            "name": identity.login,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": 1,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": CREATED,
            "updated_at": CREATED,
            "private_gists": 0,
            "total_private_repos": 0,
            "owned_private_repos": 0,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": True,
            "plan": None,
        }

    def _commit_json(self, repo: str, sha: str) -> dict:
        api = f"{self.url}/repos/{repo}"
        person = {"name": "contributor", "email": "contributor@example.com", "date": CREATED}
        return {
            "url": f"{api}/commits/{sha}",
            "sha": sha,
            "node_id": f"C_kwDO{sha[:8]}",
            "html_url": f"{self.url}/{repo}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": "Speed up the fused kernel",
                "comment_count": 0,
                "tree": {"url": f"{api}/git/trees/{sha}", "sha": sha},
            },
            "author": self._user("contributor", "User"),
            "committer": self._user("contributor", "User"),
            "parents": [],
        }

    def _pull_json(self, repo: str, number: int, pull: dict) -> dict:
        api = f"{self.url}/repos/{repo}"
        page = f"{self.url}/{repo}/pull/{number}"
        issue = self._issue_json(repo, number)

        def end(which_repo: str, ref: str, sha: str) -> dict:
            owner = which_repo.split("/")[0]
            listed = which_repo if which_repo in self.repos else self.repos[0]
            return {
                "label": f"{owner}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": self._user(owner, "User"),
                "repo": {
                    **self._repo_json(listed),
                    "full_name": which_repo,
                    "name": which_repo.split("/")[1],
                    "owner": self._user(owner, "User"),
                },
            }

        return {
            **{
                k: issue[k]
                for k in (
                    "id",
                    "node_id",
                    "number",
                    "title",
                    "user",
                    "labels",
                    "state",
                    "locked",
                    "assignee",
                    "assignees",
                    "milestone",
                    "created_at",
                    "updated_at",
                    "closed_at",
                    "author_association",
                    "active_lock_reason",
                    "draft",
                    "body",
                    "body_text",
                    "body_html",
                )
            },
            "url": f"{api}/pulls/{number}",
            "html_url": page,
            "diff_url": f"{page}.diff",
            "patch_url": f"{page}.patch",
            "issue_url": f"{api}/issues/{number}",
            "commits_url": f"{api}/pulls/{number}/commits",
            "review_comments_url": f"{api}/pulls/{number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "statuses_url": f"{api}/statuses/{pull['head']}",
            "merged_at": None,
            "merge_commit_sha": None,
            "requested_reviewers": [],
            "requested_teams": [],
            "additions": 12,
            "deletions": 3,
            "changed_files": 1,
            "comments": len(self.comments.get((repo, number), [])),
            "review_comments": 0,
            "commits": len(pull["commits"]),
            "mergeable": True,
            "mergeable_state": "clean",
            "merged": False,
            "merged_by": None,
            "auto_merge": None,
            "maintainer_can_modify": False,
            "head": end(pull["head_repo"], "speed-up", pull["head"]),
            "base": end(repo, "main", "b" * 40),
            "_links": {"self": {"href": f"{api}/pulls/{number}"}, "html": {"href": page}},
        }

    @staticmethod
    def _bodies(body: str) -> dict[str, str]:
        return {"body": body, "body_text": body, "body_html": f"<p>{html.escape(body)}</p>"}

    def _store_comment(self, repo: str, number: int, body: str, user: dict) -> dict:
        comment_id = self._new_id()
        now = _now()
        comment = {
            "url": f"{self.url}/repos/{repo}/issues/comments/{comment_id}",
            "html_url": f"{self.url}/{repo}/pull/{number}#issuecomment-{comment_id}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "id": comment_id,
            "node_id": f"IC_kwDO{comment_id}",
            "user": user,
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
            **self._bodies(body),
            "performed_via_github_app": None,
        }
        self.comments.setdefault((repo, number), []).append(comment)
        return comment

    def _issue_json(self, repo: str, number: int) -> dict:
        api = f"{self.url}/repos/{repo}"
        page = f"{self.url}/{repo}/pull/{number}"
        issue_id = 2_000_000_000 + 1_000_000 * self.repos.index(repo) + number
        return {
            "url": f"{api}/issues/{number}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{number}/labels{{/name}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "events_url": f"{api}/issues/{number}/events",
            "html_url": page,
            "id": issue_id,
            "node_id": f"PR_kwDO{issue_id}",
            "number": number,
            "title": f"Speed up the fused kernel (#{number})",
            "user": self._user("contributor", "User"),
            "labels": [],
            "state": "open",
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": len(self.comments.get((repo, number), [])),
            "created_at": CREATED,
            "updated_at": CREATED,
            "closed_at": None,
            "closed_by": None,
            "author_association": "CONTRIBUTOR",
            "active_lock_reason": None,
            "draft": False,
            "state_reason": None,
            **self._bodies("Makes the kernel faster."),
            "pull_request": {
                "url": f"{api}/pulls/{number}",
                "html_url": page,
                "diff_url": f"{page}.diff",
                "patch_url": f"{page}.patch",
                "merged_at": None,
            },
        }

    def _repo_json(self, repo: str) -> dict:
        owner, name = repo.split("/")
        api = f"{self.url}/repos/{repo}"
        host = urlsplit(self.url).netloc
        return {
            "id": 700_000 + self.repos.index(repo),
            "node_id": f"R_kgDO{700_000 + self.repos.index(repo)}",
            "name": name,
            "full_name": repo,
            "private": False,
            "owner": self._user(owner, "Organization"),
            "html_url": f"{self.url}/{repo}",
            "description": "Continuous performance-regression bot",
            "fork": False,
            "url": api,
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{api}/assignees{{/user}}",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "comments_url": f"{api}/comments{{/number}}",
            "commits_url": f"{api}/commits{{/sha}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "contributors_url": f"{api}/contributors",
            "deployments_url": f"{api}/deployments",
            "downloads_url": f"{api}/downloads",
            "events_url": f"{api}/events",
            "forks_url": f"{api}/forks",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_url": f"git://{host}/{repo}.git",
            "hooks_url": f"{api}/hooks",
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "keys_url": f"{api}/keys{{/key_id}}",
            "labels_url": f"{api}/labels{{/name}}",
            "languages_url": f"{api}/languages",
            "merges_url": f"{api}/merges",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "releases_url": f"{api}/releases{{/id}}",
            "ssh_url": f"git@{urlsplit(self.url).hostname}:{repo}.git",
            "stargazers_url": f"{api}/stargazers",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "tags_url": f"{api}/tags",
            "teams_url": f"{api}/teams",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "clone_url": f"{self.url}/{repo}.git",
            "mirror_url": None,
            "svn_url": f"{self.url}/{repo}",
            "homepage": None,
            "language": "Python",
            "size": 512,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "subscribers_count": 1,
            "network_count": 0,
            "open_issues_count": 1,
            "default_branch": "main",
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "has_issues": True,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": False,
            "has_pages": False,
            "license": None,
            "created_at": CREATED,
            "updated_at": CREATED,
            "pushed_at": CREATED,
        }

    def _rate_limit_json(self) -> dict:
        used = min(len(self.requests), RATE_LIMIT)
        core = {"limit": RATE_LIMIT, "used": used, "remaining": RATE_LIMIT - used, "reset": self._rate_reset}
        search = {"limit": 30, "used": 0, "remaining": 30, "reset": int(time.time()) + 60}
        graphql = {"limit": RATE_LIMIT, "used": 0, "remaining": RATE_LIMIT, "reset": self._rate_reset}
        return {"resources": {"core": core, "search": search, "graphql": graphql}, "rate": core}


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
