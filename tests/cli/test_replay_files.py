"""``replay`` of a scenario of the user's own: a file in the current folder plays as it is, and an
id that is not in the bundled library says how to name the user's file or folder."""

from __future__ import annotations

from pathlib import Path

import httpcore._backends.anyio  # noqa: F401  (see tests/pytest/test_plugin.py)
import httpcore._backends.sync  # noqa: F401
import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.core.scenario.loading import bundled_scenarios_dir, folder_family, load_scenario


@pytest.mark.parametrize(("folder", "family"), [
    ("hermes", "hermes"),
    ("My Cases", "my-cases"),
    ("bad_scenarios", "bad-scenarios"),
])
def test_a_files_family_is_its_folders_name_as_a_family_is_spelt(tmp_path: Path, folder: str, family: str) -> None:
    assert folder_family(tmp_path / folder / "case.yaml") == family


def test_a_scenario_file_in_the_current_folder_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (bundled_scenarios_dir() / "plain" / "native-single.yaml").read_text("utf-8")
    (tmp_path / "mine.yaml").write_text(text.replace("id: plain-native-single", "id: my-native-single"), "utf-8")
    monkeypatch.chdir(tmp_path)
    assert load_scenario("mine.yaml").family == folder_family(tmp_path / "mine.yaml") != ""
    played = CliRunner().invoke(main, ["replay", "mine.yaml", "--no-stream"], catch_exceptions=False)
    assert played.exit_code == 0, played.output
    assert "verdict: every applicable rule holds" in played.output

    by_id = CliRunner().invoke(main, ["replay", "my-native-single"])
    assert by_id.exit_code == 2
    assert "give its file (replay path/to/case.yaml) or its folder (--scenarios DIR)" in by_id.output
