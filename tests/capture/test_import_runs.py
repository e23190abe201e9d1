"""A freshly imported scenario runs with the documented command: its request's ``stream_options`` (usage
in the stream) has no ``stream: false`` twin, so the import writes the case as played streamed only,
as the library's consistency check asks of every case that carries it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness.cli.main import main
from harness.core.scenario.loading import load_scenario

CAPTURES = Path(__file__).parents[1] / "captures"


def test_a_request_with_stream_options_is_imported_streamed_only(tmp_path: Path) -> None:
    target = tmp_path / "vllm.yaml"
    result = CliRunner().invoke(main, ["import", str(CAPTURES / "vllm-qwen-tool-call.sse"), "--request",
                                       str(CAPTURES / "vllm-qwen-tool-call.request.json"), "--family", "hermes",
                                       "--id", "hermes-vllm-trial", "-o", str(target)])
    assert result.exit_code == 0, result.output
    scenario = load_scenario(target)
    assert "stream_options" in scenario.client.request and scenario.stream_equivalence is False
    assert "# stream_options: played streamed only" in target.read_text()
