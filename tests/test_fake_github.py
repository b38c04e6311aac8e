"""The GitHub fake, proven with the real github3.py: if github3 works against it, perfbot's client
can be tested on it."""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import github3
import pytest
import requests

from tests.fake_github import FakeGitHub

TOKEN = "t0ken-s3cret"
REPO = "octo/perfbot"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN) as server:
        yield server


def client(fake: FakeGitHub, token: str = TOKEN) -> github3.GitHub:
    gh = github3.GitHub(token=token)
    gh.session.base_url = fake.url
    gh.session.trust_env = False  # a proxy from the environment must not sit between the client and loopback
    return gh


@pytest.fixture
def gh(fake: FakeGitHub) -> github3.GitHub:
    return client(fake)


def raw(fake: FakeGitHub, method: str, path: str, body: dict | None = None) -> requests.Response:
    """A plain request, for what github3 hides: headers, raw bodies, exact status codes."""
    return requests.request(
        method,
        fake.url + path,
        json=body,
        headers={"Authorization": f"token {TOKEN}"},
        timeout=5,
        proxies={"http": "", "https": ""},
    )


def urls(value: Any) -> Iterator[str]:
    """Every absolute URL in a JSON document."""
    if isinstance(value, dict):
        for item in value.values():
            yield from urls(item)
    elif isinstance(value, list):
        for item in value:
            yield from urls(item)
    elif isinstance(value, str) and re.match(r"\w+://", value):
        yield value


def test_issue_and_all_comments_through_pagination(fake: FakeGitHub, gh: github3.GitHub) -> None:
    for i in range(35):
        fake.add_comment(REPO, 7, f"comment {i}")
    issue = gh.issue("octo", "perfbot", 7)
    assert (issue.number, issue.state, issue.comments_count) == (7, "open", 35)
    assert issue.pull_request_urls["url"] == f"{fake.url}/repos/{REPO}/pulls/7"
    assert [c.body for c in issue.comments()] == [f"comment {i}" for i in range(35)]  # github3 asks per_page=100
    # Smaller pages make github3 follow the Link headers: 4 pages of 10, 10, 10, 5.
    pages = issue.comments()
    pages.params["per_page"] = 10
    before = len(fake.requests)
    comments = list(pages)
    assert [c.body for c in comments] == [f"comment {i}" for i in range(35)]
    assert len({c.id for c in comments}) == 35
    assert [r.path for r in fake.requests[before:]] == [f"/repos/{REPO}/issues/7/comments?per_page=10"] + [
        f"/repos/{REPO}/issues/7/comments?per_page=10&page={p}" for p in (2, 3, 4)
    ]
    assert comments[0].user.login == "someone" and comments[0].user.type == "User"


def test_link_header_with_the_default_page_size(fake: FakeGitHub) -> None:
    for i in range(35):
        fake.add_comment(REPO, 7, f"comment {i}")
    first = raw(fake, "GET", f"/repos/{REPO}/issues/7/comments")
    assert len(first.json()) == 30
    assert first.links["next"]["url"] == f"{fake.url}/repos/{REPO}/issues/7/comments?page=2"
    assert first.links["last"]["url"] == f"{fake.url}/repos/{REPO}/issues/7/comments?page=2"
    second = requests.get(
        first.links["next"]["url"], headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5, proxies={"http": ""}
    )
    assert len(second.json()) == 5 and "next" not in second.links and second.links["first"]["url"].endswith("page=1")
    assert "Link" not in raw(fake, "GET", f"/repos/{REPO}/issues/8/comments").headers


def test_create_and_edit_comment(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.add_comment(REPO, 7, "earlier")
    comment = gh.issue("octo", "perfbot", 7).create_comment("## perfbot\nno regressions")
    assert comment.body == "## perfbot\nno regressions"
    assert (comment.user.login, comment.user.type) == ("github-actions[bot]", "Bot")
    assert comment.edit("## perfbot\n1 regression")
    assert comment.body == "## perfbot\n1 regression"
    stored = fake.comments[(REPO, 7)]
    assert [c["body"] for c in stored] == ["earlier", "## perfbot\n1 regression"]
    assert stored[1]["id"] == comment.id != stored[0]["id"]
    assert fake.requests[-1].method == "PATCH"
    assert fake.requests[-1].path == f"/repos/{REPO}/issues/comments/{comment.id}"
    assert json.loads(fake.requests[-1].body) == {"body": "## perfbot\n1 regression"}
    assert raw(fake, "PATCH", f"/repos/{REPO}/issues/comments/999", {"body": "x"}).status_code == 404


def test_repository_and_commit_status(fake: FakeGitHub, gh: github3.GitHub) -> None:
    repo = gh.repository("octo", "perfbot")
    assert (repo.full_name, repo.default_branch) == (REPO, "main")
    status = repo.create_status(
        SHA, "success", target_url=f"{fake.url}/runs/1", description="no regressions", context="perfbot"
    )
    assert (status.state, status.context, status.creator.login) == ("success", "perfbot", "github-actions[bot]")
    [stored] = fake.statuses[(REPO, SHA)]
    assert (stored["state"], stored["description"], stored["context"]) == ("success", "no regressions", "perfbot")
    with pytest.raises(github3.exceptions.UnprocessableEntity, match="Validation Failed"):
        repo.create_status(SHA, "passed")
    assert len(fake.statuses[(REPO, SHA)]) == 1


def test_unknown_repository_issue_and_path(fake: FakeGitHub, gh: github3.GitHub) -> None:
    with pytest.raises(github3.exceptions.NotFoundError):
        gh.repository("octo", "elsewhere")
    with pytest.raises(github3.exceptions.NotFoundError):
        gh.issue("octo", "elsewhere", 7)
    assert raw(fake, "GET", f"/repos/{REPO}/issues/0").status_code == 404
    assert raw(fake, "GET", "/nowhere").json() == {"message": "Not Found"}
    with pytest.raises(ValueError):
        fake.add_comment("octo/elsewhere", 7, "x")


def test_wrong_or_missing_token_is_refused_without_echoing_it(fake: FakeGitHub) -> None:
    with pytest.raises(github3.exceptions.AuthenticationFailed) as failure:
        client(fake, token="wr0ng-t0ken").issue("octo", "perfbot", 7)
    assert failure.value.msg == "Bad credentials"
    assert "wr0ng-t0ken" not in failure.value.response.text and TOKEN not in failure.value.response.text
    assert requests.get(f"{fake.url}/repos/{REPO}", timeout=5, proxies={"http": ""}).status_code == 401
    assert fake.requests[0].headers["Authorization"] == "token wr0ng-t0ken"


def test_fail_next_forces_the_next_replies_only(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.fail_next(502, count=2, headers={"X-Why": "forced"})
    for _ in range(2):
        with pytest.raises(github3.exceptions.ServerError) as failure:
            gh.repository("octo", "perfbot")
        assert failure.value.code == 502 and failure.value.response.headers["X-Why"] == "forced"
    assert gh.repository("octo", "perfbot").full_name == REPO
    fake.fail_next(500, body={"message": "boom"})
    with pytest.raises(github3.exceptions.ServerError, match="boom"):
        gh.issue("octo", "perfbot", 7)


def test_primary_rate_limit(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.rate_limit_next(reset_in=30)
    with pytest.raises(github3.exceptions.ForbiddenError, match="API rate limit exceeded") as failure:
        gh.issue("octo", "perfbot", 7)
    headers = failure.value.response.headers
    assert headers["X-RateLimit-Remaining"] == "0"
    assert 29 <= int(headers["X-RateLimit-Reset"]) - time.time() <= 31
    assert gh.issue("octo", "perfbot", 7).number == 7


def test_secondary_rate_limit_is_a_plain_client_error_in_github3(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.rate_limit_next(reset_in=1.5, secondary=True)
    with pytest.raises(github3.exceptions.ClientError, match="secondary rate limit") as failure:
        gh.repository("octo", "perfbot")
    assert failure.value.code == 429 and failure.value.response.headers["Retry-After"] == "2"


def test_user_and_rate_limit_endpoints(fake: FakeGitHub, gh: github3.GitHub) -> None:
    with pytest.raises(github3.exceptions.ForbiddenError, match="Resource not accessible by integration"):
        gh.me()
    limits = gh.rate_limit()
    assert limits["resources"]["core"]["limit"] == 5000 and limits["rate"]["remaining"] > 0


def test_a_personal_token_reads_its_user_and_posts_as_it(fake: FakeGitHub) -> None:
    fake.add_token("pat-of-a-bot-account", "perfbot-bot")
    gh = client(fake, token="pat-of-a-bot-account")
    assert (gh.me().login, gh.me().type) == ("perfbot-bot", "User")
    comment = gh.issue("octo", "perfbot", 7).create_comment("hello")
    assert comment.user.login == "perfbot-bot"


def test_pull_requests_and_their_commits(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.add_pull(REPO, 7, SHA, earlier=("e" * 40,), head_repo="fork/perfbot")
    pull = gh.pull_request("octo", "perfbot", 7)
    assert (pull.number, pull.head.sha, pull.head.repository.full_name) == (7, SHA, "fork/perfbot")
    assert pull.base.repository.full_name == REPO
    assert [c.sha for c in pull.commits()] == ["e" * 40, SHA]
    with pytest.raises(github3.exceptions.NotFoundError):
        gh.pull_request("octo", "perfbot", 8)


def test_every_url_points_back_at_the_fake(fake: FakeGitHub) -> None:
    fake.add_comment(REPO, 7, "seeded")
    fake.add_pull(REPO, 7, SHA)
    documents = [
        raw(fake, "GET", f"/repos/{REPO}").json(),
        raw(fake, "GET", f"/repos/{REPO}/issues/7").json(),
        raw(fake, "GET", f"/repos/{REPO}/issues/7/comments").json(),
        raw(fake, "POST", f"/repos/{REPO}/issues/7/comments", {"body": "hi"}).json(),
        raw(fake, "POST", f"/repos/{REPO}/statuses/{SHA}", {"state": "pending"}).json(),
        raw(fake, "GET", "/user").json(),
        raw(fake, "GET", f"/repos/{REPO}/pulls/7").json(),
        raw(fake, "GET", f"/repos/{REPO}/pulls/7/commits").json(),
    ]
    found = [url for document in documents for url in urls(document)]
    assert len(found) > 50
    assert {urlsplit(url).netloc for url in found} == {urlsplit(fake.url).netloc}


def test_responses_are_json_with_length_on_a_kept_alive_connection(fake: FakeGitHub) -> None:
    connection = http.client.HTTPConnection(urlsplit(fake.url).netloc, timeout=5)
    try:
        connection.request("GET", f"/repos/{REPO}/issues/7", headers={"Authorization": f"token {TOKEN}"})
        response = connection.getresponse()
        body = response.read()
        socket_before = connection.sock
        assert response.headers["Content-Type"] == "application/json; charset=utf-8"
        assert int(response.headers["Content-Length"]) == len(body)
        connection.request(
            "POST", f"/repos/{REPO}/issues/7/comments", body=b"{not json", headers={"Authorization": f"token {TOKEN}"}
        )
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (400, {"message": "Problems parsing JSON"})
        assert connection.sock is socket_before
    finally:
        connection.close()


def test_stopping_ends_kept_alive_connections() -> None:
    session = requests.Session()
    session.trust_env = False
    with FakeGitHub(token=TOKEN) as fake:
        assert session.get(f"{fake.url}/rate_limit", headers={"Authorization": f"token {TOKEN}"}).ok
    with pytest.raises(requests.ConnectionError):
        session.get(f"{fake.url}/rate_limit", headers={"Authorization": f"token {TOKEN}"}, timeout=5)


def test_issues_are_opened_and_listed_as_github_does(fake: FakeGitHub, gh: github3.GitHub) -> None:
    fake.add_pull(REPO, 7, SHA)  # issues and pull requests share their numbers
    repo = gh.repository("octo", "perfbot")
    opened = repo.create_issue("perfbot: a slowdown", "body\n<!-- marker -->\n")
    assert (opened.number, opened.state, opened.user.login) == (8, "open", "github-actions[bot]")
    assert opened.html_url == f"{fake.url}/{REPO}/issues/8" and gh.issue("octo", "perfbot", 8).body == opened.body
    closed = fake.add_issue(REPO, "fixed long ago", "old", state="closed")
    assert [i.number for i in repo.issues()] == [8]  # open ones, as GitHub lists by default
    assert [i.number for i in repo.issues(state="all")] == [closed["number"], 8]  # newest first
    assert [i.number for i in repo.issues(state="closed")] == [closed["number"]]
    fake.issues[REPO][0]["updated_at"] = "2020-01-01T00:00:00Z"
    assert [i.number for i in repo.issues(state="all", since="2021-01-01T00:00:00Z")] == [closed["number"]]
    for index in range(120):
        fake.add_issue(REPO, f"issue {index}", "x")
    assert len(list(repo.issues(state="all"))) == 122  # through pages of 100
    with pytest.raises(github3.exceptions.UnprocessableEntity, match="Validation Failed"):
        repo.create_issue("  ")
    assert raw(fake, "POST", f"/repos/{REPO}/issues", {"title": "t", "body": "x" * 65537}).status_code == 422
    found = list(urls(raw(fake, "GET", f"/repos/{REPO}/issues?state=all").json()))
    assert found and {urlsplit(url).netloc for url in found} == {urlsplit(fake.url).netloc}
