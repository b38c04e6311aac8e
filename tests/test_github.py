"""The GitHub client against a real HTTP server on loopback (tests/fake_github.py)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput, EnvironmentFailure
from perfbot.github import GitHub
from perfbot.report import MARKER
from tests.fake_github import FakeGitHub

TOKEN = "ghs_s3cr3tTOKENvalue"
REPO = "octo/perfbot"
SHA = "a" * 40


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as server:
        yield server


def client(fake: FakeGitHub, token: str = TOKEN, waits: list | None = None) -> GitHub:
    return GitHub(token, fake.url, attempts=4, backoff_s=0.5, sleep=(waits if waits is not None else []).append)


def test_first_call_creates_second_edits_the_same_comment(fake):
    gh = client(fake)
    first = gh.upsert_comment(REPO, 7, "**perfbot:** ✅ first\n" + MARKER + "\n")
    second = gh.upsert_comment(REPO, 7, "**perfbot:** ❌ second\n" + MARKER + "\n")
    assert (first.action, second.action) == ("created", "updated")
    comments = fake.comments[(REPO, 7)]
    assert len(comments) == 1 and comments[0]["body"].startswith("**perfbot:** ❌ second")
    assert first.url == second.url


def test_other_peoples_comments_are_left_alone(fake):
    fake.add_comment(REPO, 7, "LGTM, but is it fast?")
    fake.add_comment(REPO, 7, f"quoting the bot:\n{MARKER}\n", login="mallory", user_type="User")
    for _ in range(40):  # more than a page of comments
        fake.add_comment(REPO, 7, "chatter")
    gh = client(fake)
    assert gh.upsert_comment(REPO, 7, "report one").action == "created"
    assert gh.upsert_comment(REPO, 7, "report two").action == "updated"
    bodies = [c["body"] for c in fake.comments[(REPO, 7)]]
    assert bodies[0] == "LGTM, but is it fast?" and bodies[1] == f"quoting the bot:\n{MARKER}\n"
    assert bodies[-1] == f"report two\n{MARKER}\n"  # the marker is added when missing
    assert sum(MARKER in b for b in bodies) == 2


def test_a_5xx_is_retried_with_backoff(fake):
    waits = []
    fake.fail_next(502, count=2)
    assert client(fake, waits=waits).upsert_comment(REPO, 7, "body").action == "created"
    assert waits == [0.5, 1.0]
    assert len(fake.comments[(REPO, 7)]) == 1


def test_rate_limits_wait_as_github_says(fake):
    waits = []
    fake.rate_limit_next(reset_in=3.0)
    fake.rate_limit_next(reset_in=2.0, secondary=True)
    client(fake, waits=waits).set_status(REPO, SHA, "failure", "❌ 1 significant slowdown")
    assert 3.0 <= waits[0] <= 5.0 and waits[1] == 2.0  # reset (whole seconds) + 1 s margin; Retry-After
    assert fake.statuses[(REPO, SHA)][0]["state"] == "failure"


def test_unreachable_after_retries_is_an_environment_failure(fake):
    fake.fail_next(503, count=10)
    with pytest.raises(EnvironmentFailure, match="failed 4 times; last: 503"):
        client(fake).upsert_comment(REPO, 7, "body")


def test_a_bad_token_fails_at_once_and_is_never_shown(fake):
    waits = []
    wrong = "ghs_WRONGtokenVALUE"
    with pytest.raises(EnvironmentFailure, match="401") as error:
        client(fake, token=wrong, waits=waits).upsert_comment(REPO, 7, "body")
    assert waits == [] and wrong not in str(error.value)


def test_unknown_pr_and_bad_arguments(fake):
    with pytest.raises(EnvironmentFailure, match="404"):
        client(fake).upsert_comment("octo/nothing", 7, "body")
    with pytest.raises(BadInput, match="OWNER/NAME"):
        client(fake).upsert_comment("octo", 7, "body")
    with pytest.raises(BadInput, match="state must be one of"):
        client(fake).set_status(REPO, SHA, "green", "x")


# The command, with the token and API root from the environment as in Actions.
@pytest.fixture
def env(fake, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    body = tmp_path / "comment.md"
    body.write_text(f"**perfbot:** ❌ 1 significant slowdown(s) beyond the threshold\n\n| a |\n{MARKER}\n")
    return body


def test_cli_comment_and_status(fake, env):
    args = ["comment", "--repo", REPO, "--pr", "7", "--body-file", str(env), "--status", "failure", "--sha", SHA]
    first = CliRunner().invoke(perfbot, args)
    second = CliRunner().invoke(perfbot, args)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "created" in first.output and "updated" in second.output
    assert len(fake.comments[(REPO, 7)]) == 1
    status = fake.statuses[(REPO, SHA)][-1]
    assert (status["state"], status["context"]) == ("failure", "perfbot")
    assert status["description"].startswith("❌ 1 significant slowdown")
    assert TOKEN not in first.output + second.output


def test_cli_status_is_set_even_when_the_comment_fails(fake, env):
    fake.fail_next(404)  # the issue lookup fails once: the comment cannot be posted
    result = CliRunner().invoke(perfbot, ["comment", "--repo", REPO, "--pr", "7", "--body-file", str(env),
                                          "--status", "failure", "--sha", SHA])
    assert result.exit_code == 3
    assert fake.statuses[(REPO, SHA)][-1]["state"] == "failure"


def test_cli_exit_codes(fake, env, monkeypatch, tmp_path: Path):
    runner = CliRunner()
    base = ["comment", "--repo", REPO, "--pr", "7"]
    assert runner.invoke(perfbot, base + ["--body-file", str(tmp_path / "missing.md")]).exit_code == 2
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    assert runner.invoke(perfbot, base + ["--body-file", str(empty)]).exit_code == 2
    huge = tmp_path / "huge.md"
    huge.write_text("x" * 70000)
    assert runner.invoke(perfbot, base + ["--body-file", str(huge)]).exit_code == 2
    assert runner.invoke(perfbot, base + ["--body-file", str(env), "--status", "success"]).exit_code == 2
    assert runner.invoke(perfbot, base + ["--body-file", str(env), "--status", "success", "--sha", "main"]).exit_code == 2
    assert runner.invoke(perfbot, ["comment", "--repo", REPO, "--pr", "0", "--body-file", str(env)]).exit_code == 2
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_other_TOKEN")
    result = runner.invoke(perfbot, base + ["--body-file", str(env)])
    assert result.exit_code == 3 and "ghs_other_TOKEN" not in result.output
    monkeypatch.delenv("GITHUB_TOKEN")
    result = runner.invoke(perfbot, base + ["--body-file", str(env)])
    assert result.exit_code == 3 and "GITHUB_TOKEN is not set" in result.output
