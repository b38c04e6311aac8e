"""The GitHub client against a real HTTP server on loopback (tests/fake_github.py)."""

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput, EnvironmentFailure
from perfbot.output.github import ACTIONS_BOT, GitHub
from perfbot.output.markdown import MARKER
from perfbot.output.verdicts import GITHUB_COMMENT_LIMIT
from tests.fake_github import FakeGitHub

TOKEN = "ghs_s3cr3tTOKENvalue"  # the workflow's own token: may not read GET /user
PAT = "github_pat_11PERSONALtoken"  # a bot account's personal access token
REPO = "octo/perfbot"
SHA = "a" * 40


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as server:
        server.add_token(PAT, "perfbot-bot")
        server.add_pull(REPO, 7, SHA, earlier=("c" * 40,))
        yield server


def client(fake: FakeGitHub, token: str = TOKEN, waits: list | None = None, **options) -> GitHub:
    return GitHub(
        token, fake.url, attempts=4, backoff_s=0.5, sleep=(waits if waits is not None else []).append, **options
    )


def test_first_call_creates_second_edits_the_same_comment(fake):
    gh = client(fake)
    first = gh.upsert_comment(REPO, 7, "**perfbot:** ✅ first\n" + MARKER + "\n")
    second = gh.upsert_comment(REPO, 7, "**perfbot:** ❌ second\n" + MARKER + "\n")
    assert (first.action, second.action) == ("created", "updated")
    comments = fake.comments[(REPO, 7)]
    assert len(comments) == 1 and comments[0]["body"].startswith("**perfbot:** ❌ second")
    assert comments[0]["user"]["login"] == ACTIONS_BOT
    assert first.url == second.url


def test_identity_of_each_kind_of_token(fake):
    assert client(fake, PAT).identity() == "perfbot-bot"  # GET /user answers
    assert client(fake, TOKEN).identity() == ACTIONS_BOT  # GET /user is forbidden to the Actions token


def test_a_personal_token_edits_its_own_comment_in_place(fake):
    gh = client(fake, PAT)
    fake.add_comment(REPO, 7, f"another user quoting the bot\n{MARKER}\n", login="mallory")
    assert gh.upsert_comment(REPO, 7, "report one").action == "created"
    assert gh.upsert_comment(REPO, 7, "report two").action == "updated"
    ours = [c for c in fake.comments[(REPO, 7)] if c["user"]["login"] == "perfbot-bot"]
    assert len(ours) == 1 and ours[0]["body"] == f"report two\n{MARKER}\n" and ours[0]["user"]["type"] == "User"
    assert fake.comments[(REPO, 7)][0]["body"] == f"another user quoting the bot\n{MARKER}\n"


def test_the_actions_token_leaves_another_bots_marked_comment_alone(fake):
    other = f"Coverage report. (quoting perfbot)\n{MARKER}\n"
    fake.add_comment(REPO, 7, other, login="codecov[bot]", user_type="Bot")
    fake.add_comment(REPO, 7, f"quoting the bot:\n{MARKER}\n", login="mallory", user_type="User")
    for _ in range(40):  # more than a page of comments
        fake.add_comment(REPO, 7, "chatter")
    gh = client(fake)
    assert gh.upsert_comment(REPO, 7, "report one").action == "created"
    assert gh.upsert_comment(REPO, 7, "report two").action == "updated"
    bodies = [c["body"] for c in fake.comments[(REPO, 7)]]
    assert bodies[0] == other and bodies[1] == f"quoting the bot:\n{MARKER}\n"
    assert bodies[-1] == f"report two\n{MARKER}\n"  # the marker is added when missing
    assert sum(MARKER in b for b in bodies) == 3


def test_an_explicit_author_is_used_without_asking(fake):
    fake.add_comment(REPO, 7, f"old report\n{MARKER}\n", login="my-app[bot]", user_type="Bot")
    client(fake).upsert_comment(REPO, 7, "new", author="my-app[bot]")
    assert fake.comments[(REPO, 7)][0]["body"] == f"new\n{MARKER}\n"
    assert not any(r.path == "/user" for r in fake.requests)


def test_the_head_of_the_pr_is_checked(fake):
    gh = client(fake)
    assert gh.check_head(REPO, 7, SHA).standing == "current"
    assert gh.check_head(REPO, 7, "c" * 40).standing == "stale"
    with pytest.raises(BadInput, match="no commit dddddddddddd"):
        gh.check_head(REPO, 7, "d" * 40)
    with pytest.raises(BadInput, match="octo/perfbot#8: no such pull request"):
        gh.check_head(REPO, 8, SHA)


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
    fake.fail_next(403, headers={"Retry-After": "4"}, body={"message": "You have triggered an abuse detection"})
    client(fake, waits=waits).set_status(REPO, SHA, "failure", "❌ 1 significant slowdown")
    assert 3.0 <= waits[0] <= 5.0 and waits[1:] == [2.0, 4.0]  # reset (whole seconds) + 1 s margin; Retry-After
    assert fake.statuses[(REPO, SHA)][0]["state"] == "failure"


def test_a_far_off_rate_limit_reset_fails_at_once(fake):
    waits = []
    fake.rate_limit_next(reset_in=3000)
    started = time.monotonic()
    with pytest.raises(EnvironmentFailure, match=r"asks to wait \d+ s more .*beyond the 180 s"):
        client(fake, waits=waits).set_status(REPO, SHA, "failure", "x")
    assert waits == [] and time.monotonic() - started < 5


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


def test_unknown_repository_and_bad_arguments(fake):
    with pytest.raises(BadInput, match="octo/nothing#7: no such pull request"):
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


def _comment(body: Path, *extra: str, pr: str = "7"):
    return CliRunner().invoke(perfbot, ["comment", "--repo", REPO, "--pr", pr, "--body-file", str(body), *extra])


def test_cli_comment_and_status(fake, env):
    first = _comment(env, "--status", "failure", "--sha", SHA)
    second = _comment(env, "--status", "failure", "--sha", SHA)
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "created" in first.output and "updated" in second.output
    assert len(fake.comments[(REPO, 7)]) == 1
    status = fake.statuses[(REPO, SHA)][-1]
    assert (status["state"], status["context"]) == ("failure", "perfbot")
    assert status["description"].startswith("❌ 1 significant slowdown")
    assert TOKEN not in first.output + second.output


def test_cli_the_comment_names_its_commit_and_a_push_meanwhile_marks_it_stale(fake, env):
    result = _comment(env, "--sha", SHA)
    assert result.exit_code == 0, result.output
    posted = fake.comments[(REPO, 7)][0]["body"]
    assert f"<sub>Measured commit: {SHA}</sub>\n{MARKER}" in posted and posted.startswith("**perfbot:**")
    fake.push_after("PATCH", f"/repos/{REPO}/issues/comments/", REPO, 7, "f" * 40)
    result = _comment(env, "--sha", SHA)
    assert result.exit_code == 0 and "marked stale" in result.output, result.output
    (comment,) = fake.comments[(REPO, 7)]
    assert comment["body"].startswith("_This report is for an earlier commit: the pull request has moved on to ffff")


def test_cli_verify_head(fake, env):
    fake.add_pull(REPO, 9, "9" * 40, head_repo="someone/perfbot")
    runner = CliRunner()
    ok = runner.invoke(perfbot, ["verify-head", "--repo", REPO, "--pr", "7", "--sha", SHA, "--same-repository"])
    assert ok.exit_code == 0 and "is the head of octo/perfbot#7 (from octo/perfbot)" in ok.output
    moved = runner.invoke(perfbot, ["verify-head", "--repo", REPO, "--pr", "7", "--sha", "c" * 40])
    assert moved.exit_code == 2 and "cccccccccccc is not, or no longer, its head" in moved.output
    fork = runner.invoke(perfbot, ["verify-head", "--repo", REPO, "--pr", "9", "--sha", "9" * 40, "--same-repository"])
    assert fork.exit_code == 2 and "comes from someone/perfbot, a fork" in fork.output
    by_hand = runner.invoke(perfbot, ["verify-head", "--repo", REPO, "--pr", "9", "--sha", "9" * 40])
    assert by_hand.exit_code == 0, by_hand.output
    assert fake.comments == {} and fake.statuses == {}


def test_cli_a_report_for_another_prs_commit_posts_nothing(fake, env):
    fake.add_pull(REPO, 8, "e" * 40)  # the artifact says PR 8, but the run measured PR 7's head
    result = _comment(env, "--status", "success", "--sha", SHA, pr="8")
    assert result.exit_code == 2 and "measured another pull request's code; nothing posted" in result.output
    assert fake.comments == {} and fake.statuses == {}
    assert not any(r.method in ("POST", "PATCH") for r in fake.requests)


def test_cli_a_stale_report_sets_only_the_status(fake, env):
    result = _comment(env, "--status", "success", "--sha", "c" * 40)
    assert result.exit_code == 0, result.output
    assert "not posted: octo/perfbot#7 has moved on to aaaaaaaaaaaa" in result.output
    assert fake.comments == {} and fake.statuses[(REPO, "c" * 40)][-1]["state"] == "success"


def test_cli_a_missing_pr_is_bad_input_not_a_permission(fake, env):
    result = _comment(env, "--status", "failure", "--sha", SHA, pr="404")
    assert result.exit_code == 2
    assert "octo/perfbot#404: no such pull request" in result.output and "token needs" not in result.output
    assert fake.statuses == {}


def test_cli_an_over_long_body_is_cut_with_a_note_and_the_status_set(fake, env, tmp_path: Path):
    huge = tmp_path / "huge.md"
    rows = "".join(f"| row {i} | {'x' * 60} |\n" for i in range(2000))
    huge.write_text(
        f"**perfbot:** ✅ no significant slowdown\n\n<details><summary>rows</summary>\n\n{rows}</details>\n{MARKER}\n"
    )
    result = _comment(huge, "--status", "success", "--sha", SHA)
    assert result.exit_code == 0, result.output
    posted = fake.comments[(REPO, 7)][0]["body"]
    assert len(posted) <= GITHUB_COMMENT_LIMIT and posted.rstrip().endswith(MARKER)
    assert "the report was cut here" in posted and posted.count("<details>") == posted.count("</details>")
    assert fake.statuses[(REPO, SHA)][-1]["description"] == "✅ no significant slowdown"


def test_cli_status_is_set_even_when_the_comment_fails(fake, env):
    fake.forbid(f"/repos/{REPO}/issues/7")  # the token may set statuses but not comment
    result = _comment(env, "--status", "failure", "--sha", SHA)
    assert result.exit_code == 3 and "token needs pull-requests: write" in result.output
    assert fake.statuses[(REPO, SHA)][-1]["state"] == "failure"


def test_cli_exit_codes(fake, env, monkeypatch, tmp_path: Path):
    runner = CliRunner()
    base = ["comment", "--repo", REPO, "--pr", "7"]
    assert runner.invoke(perfbot, [*base, "--body-file", str(tmp_path / "missing.md")]).exit_code == 2
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    assert runner.invoke(perfbot, [*base, "--body-file", str(empty)]).exit_code == 2
    assert runner.invoke(perfbot, [*base, "--body-file", str(env), "--status", "success"]).exit_code == 2
    assert (
        runner.invoke(perfbot, [*base, "--body-file", str(env), "--status", "success", "--sha", "main"]).exit_code == 2
    )
    assert runner.invoke(perfbot, ["comment", "--repo", REPO, "--pr", "0", "--body-file", str(env)]).exit_code == 2
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_other_TOKEN")
    result = runner.invoke(perfbot, [*base, "--body-file", str(env)])
    assert result.exit_code == 3 and "ghs_other_TOKEN" not in result.output
    monkeypatch.delenv("GITHUB_TOKEN")
    result = runner.invoke(perfbot, [*base, "--body-file", str(env)])
    assert result.exit_code == 3 and "GITHUB_TOKEN is not set" in result.output


@pytest.mark.parametrize("sha", ["main", "a" * 39, "a" * 41, "A" * 40])
@pytest.mark.parametrize("command", ["comment", "verify-head"])
def test_cli_takes_only_a_full_sha(fake, env, command, sha):
    """GitHub names a head by its full lowercase SHA: anything else would never match it."""
    extra = ["--body-file", str(env)] if command == "comment" else []
    result = CliRunner().invoke(perfbot, [command, "--repo", REPO, "--pr", "7", "--sha", sha, *extra])
    assert result.exit_code == 2 and "must be a full 40-hex-digit commit SHA" in result.output
    assert fake.comments.get((REPO, 7)) is None


# Several GPU kinds: one comment, a section per runner label.
def _comparison_file(path: Path, slowdown: float, gpu: str) -> Path:
    from perfbot.deciding import comparison
    from perfbot.deciding.compare import compare
    from perfbot.deciding.thresholds import load_policy
    from tests.conftest import ROOT
    from tests.helpers import make_results

    environment = {"gpu_name": gpu}
    base = make_results(seed=1, environment=environment)
    head = make_results({("fused", "gemma-2b"): slowdown}, seed=2, environment=environment)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        comparison.to_text(comparison.summarize(compare(base, head, load_policy(ROOT / "thresholds.yaml"))))
    )
    return path


def _sections(*sections: str, status: str = "failure"):
    args = ["comment", "--repo", REPO, "--pr", "7", "--sha", SHA, "--status", status]
    for section in sections:
        args += ["--section", section]
    return CliRunner().invoke(perfbot, args)


def test_cli_one_comment_with_a_section_per_gpu_edited_in_place(fake, env, tmp_path: Path):
    a100 = _comparison_file(tmp_path / "a100" / "comparison.json", 1.10, "NVIDIA A100-SXM4-80GB")
    h200 = _comparison_file(tmp_path / "h200" / "comparison.json", 1.0, "NVIDIA H200")
    first = _sections(f"a100={a100}", f"h200={h200}")
    second = _sections(f"a100={a100}", f"h200={h200}")
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "created" in first.output and "updated" in second.output
    (comment,) = fake.comments[(REPO, 7)]
    body = comment["body"]
    assert body.startswith("**perfbot:** ❌ fails on a100; passes on h200\n")
    assert body.count(MARKER) == 1 and body.rstrip("\n").endswith(f"<sub>Measured commit: {SHA}</sub>\n{MARKER}")
    a100_at = body.index("\n### a100 · NVIDIA A100-SXM4-80GB\n")
    h200_at = body.index("\n### h200 · NVIDIA H200\n")
    assert a100_at < h200_at
    assert body[a100_at:h200_at].count("❌ 1 significant slowdown(s) beyond the threshold") == 1
    assert "✅ no significant slowdown" in body[h200_at:] and "**perfbot:**" not in body[a100_at:]
    status = fake.statuses[(REPO, SHA)][-1]
    assert (status["state"], status["description"]) == ("failure", "❌ fails on a100; passes on h200")


def test_cli_a_gpu_without_a_readable_report_gets_a_could_not_measure_section(fake, env, tmp_path: Path):
    a100 = _comparison_file(tmp_path / "a100" / "comparison.json", 1.0, "NVIDIA A100-SXM4-80GB")
    elsewhere = _comparison_file(tmp_path / "elsewhere" / "comparison.json", 1.0, "NVIDIA H200")
    (tmp_path / "h200").mkdir()
    (tmp_path / "h200" / "comparison.json").symlink_to(elsewhere)  # a symlink is never followed
    (tmp_path / "l40s").mkdir()
    (tmp_path / "l40s" / "comparison.json").write_text('{"format": 3, "interleaved": "<b>@mallory</b>"}')
    result = _sections(
        f"a100={a100}",
        f"h200={tmp_path / 'h200' / 'comparison.json'}",
        f"l40s={tmp_path / 'l40s' / 'comparison.json'}",
        f"rtx_4090={tmp_path / 'missing' / 'comparison.json'}",
        status="error",
    )
    assert result.exit_code == 0, result.output
    body = fake.comments[(REPO, 7)][0]["body"]
    assert body.startswith("**perfbot:** ⚠️ not measured on h200, l40s, rtx\\_4090; passes on a100\n")
    assert "\n### h200\n\n⚠️ Could not measure: no comparison file" in body and "NVIDIA H200" not in body
    assert "\n### rtx\\_4090\n\n⚠️ Could not measure: no comparison file" in body
    assert "\n### l40s\n\n⚠️ Could not measure: its comparison file could not be read" in body
    assert "<b>" not in body and "@mallory" not in body and body.count(MARKER) == 1
    assert fake.statuses[(REPO, SHA)][-1]["description"] == (
        "⚠️ not measured on h200, l40s, rtx_4090; passes on a100"  # plain text, not markdown
    )


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (["../a100=x.json"], "is not a runner label"),
        (["a100 h200=x.json"], "is not a runner label"),
        (["-a100=x.json"], "is not a runner label"),
        (["=x.json"], "is not a runner label"),
        (["a100"], "must be LABEL=FILE"),
        (["a100="], "must be LABEL=FILE"),
        (["a100=x.json", "a100=y.json"], "'a100' is given twice"),
    ],
)
def test_cli_section_labels_are_checked(fake, env, sections, message):
    result = _sections(*sections)
    assert result.exit_code == 2 and message in result.output, result.output
    assert fake.comments == {} and fake.statuses == {}


def test_cli_sections_exclude_the_other_report_options(fake, env, tmp_path: Path):
    a100 = _comparison_file(tmp_path / "comparison.json", 1.0, "NVIDIA A100-SXM4-80GB")
    result = CliRunner().invoke(
        perfbot, ["comment", "--repo", REPO, "--pr", "7", "--comparison", str(a100), "--section", f"a100={a100}"]
    )
    assert result.exit_code == 2 and "one of them" in result.output
    assert fake.comments == {}


def test_verify_head_reads_the_pull_request_without_github3(fake, env, tmp_path):
    """The GPU job installs only the measuring extra: verify-head must run where github3.py cannot
    be imported, and the commands that post must stop there with one line saying what to install."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    blocked = "import sys; sys.modules['github3'] = None; from perfbot.cli import perfbot; perfbot(prog_name='perfbot')"

    def perfbot_without_github3(*args: str):
        return subprocess.run([sys.executable, "-c", blocked, *args], capture_output=True, text=True, cwd=ROOT)

    ok = perfbot_without_github3("verify-head", "--repo", REPO, "--pr", "7", "--sha", SHA, "--same-repository")
    assert ok.returncode == 0 and "is the head of octo/perfbot#7" in ok.stdout, ok.stderr
    posting = perfbot_without_github3("comment", "--repo", REPO, "--pr", "7", "--body-file", str(env))
    assert posting.returncode == 3
    assert posting.stderr == "perfbot: error: perfbot comment needs github3.py: pip install 'perfbot[github]'\n"
    assert fake.comments == {}


def test_verify_head_tries_again_after_a_5xx_and_says_when_there_is_no_such_pull(fake):
    from perfbot.output.pull_head import read_head

    waits: list[float] = []
    fake.fail_next(502, count=2)
    head = read_head(REPO, 7, TOKEN, fake.url, backoff_s=0.5, sleep=waits.append)
    assert (head.sha, head.repository, waits) == (SHA, REPO, [0.5, 1.0])
    with pytest.raises(BadInput, match="no such pull request"):
        read_head(REPO, 99, TOKEN, fake.url, sleep=waits.append)
    fake.fail_next(503, count=4)
    with pytest.raises(EnvironmentFailure, match="GitHub answered 503"):
        read_head(REPO, 7, TOKEN, fake.url, sleep=waits.append)
    with pytest.raises(EnvironmentFailure, match="GITHUB_TOKEN is not set"):
        read_head(REPO, 7, "", fake.url)
    with pytest.raises(BadInput, match="OWNER/NAME"):
        read_head("octo/..", 7, TOKEN, fake.url)
