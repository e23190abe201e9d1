"""``replay --strict-upstream`` replays against the strict upstream a run with the flag played
against, so a failure found only there (a relayed late system message) shows again, and the
replay line a failure prints carries the flag."""

from __future__ import annotations

from pathlib import Path

import httpcore._backends.anyio  # noqa: F401  (see tests/pytest/test_plugin.py)
import httpcore._backends.sync  # noqa: F401
import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.core.scenario.loading import bundled_scenarios_dir
from harness.run.servers import serve
from mock_backends.app import create_app as create_mock
from mutants import MUTANTS
from mutants.clients import STRICT_TEMPLATE


@pytest.mark.parametrize(("flags", "verdict"), [
    (("--features", "system-first"), "verdict: every applicable rule holds"),
    (("--features", "system-first", "--strict-upstream"), "HTTP-003"),
    # A proxy that does not claim to put system text first relays the request and the template's refusal
    # unchanged, as the server said it: not judged (LiteLLM 1.108.7 failed HTTP-003 here before).
    (("--strict-upstream",), "requires feature system-first"),
])
def test_replay_meets_the_strict_upstream_only_when_asked(tmp_path: Path, flags: tuple[str, ...],
                                                          verdict: str) -> None:
    source = bundled_scenarios_dir() / "translation" / "copilot-second-system-strict-template.yaml"
    text = source.read_text("utf-8")
    assert "\n  strict: true\n" in text
    (tmp_path / "lenient.yaml").write_text(text.replace("\n  strict: true\n", "\n"), "utf-8")
    mutant = next(m for m in MUTANTS if m.id == "passes-second-system-through")
    with serve(create_mock()) as mock:
        host, _, port = mock.url.removeprefix("http://").rpartition(":")
        with serve(mutant.app(f"{mock.url}/v1")) as proxy:
            played = CliRunner().invoke(main, [
                "replay", STRICT_TEMPLATE, "--scenarios", str(tmp_path), "--proxy-url", f"{proxy.url}/v1",
                "--mock-url", mock.url, "--client-profile", "copilot-chat", *flags,
            ], catch_exceptions=False)
    assert verdict in played.output, played.output
