"""``fuzz`` reaches every client dialect and every upstream dialect: a Responses client's cases,
and a backend served in another API than the client's, so a translating proxy is fuzzed
through its translation."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.fuzzing import replay_args
from harness.cli.main import main
from harness.generate.fuzz.case import DIALECT_CLIENTS


def test_every_plain_dialect_client_can_be_fuzzed() -> None:
    assert {p.name for p in DIALECT_CLIENTS} == {"openai", "anthropic", "responses"}


def test_a_responses_client_through_an_anthropic_upstream(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "2", "--seed", "3", "--no-database", "--formats",
                                       "hermes,native", "--client-profile", "responses", "--upstream-dialect",
                                       "anthropic", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "client profile(s) responses" in result.output
    assert "calls Anthropic Messages upstream" in result.output
    assert [line.split()[0] for line in result.output.splitlines() if line.startswith("  ")] == ["hermes", "native"]


def test_spread_is_refused_with_what_to_pass(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "1", "--upstream-dialect", "spread",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 2 and "natural, a dialect's name, or all" in result.output


@pytest.mark.parametrize(("profile", "upstream", "expected"), [
    (None, None, []),
    ("responses", None, ["--client-profile", "responses"]),
    (None, "kiro", ["--upstream-dialect", "kiro"]),
])
def test_a_finding_replays_with_its_client_and_upstream(profile: str | None, upstream: str | None,
                                                        expected: list[str]) -> None:
    args = replay_args("hermes-generated-1", Path("found"), proxy_url=None, mock=None, features=None, strict=False,
                       profile=profile, upstream=upstream)
    assert args[:5] == [*args[:args.index("replay")], "replay", "hermes-generated-1", "--scenarios", "found"][:5]
    assert args[args.index("found") + 1:] == expected
