"""``--record`` with several dialect pairs: each item's exchanges go to a HAR file of its own,
so a scenario's other pairs do not overwrite the one it was played in as written."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.core.scenario.loading import bundled_scenarios_dir

pytest_plugins = ["pytester"]


def test_each_pair_of_a_scenario_records_its_own_har_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    folder = pytester.path / "scenarios" / "plain"
    folder.mkdir(parents=True)
    shutil.copy(bundled_scenarios_dir() / "plain" / "native-single.yaml", folder)
    record, report = pytester.path / "record", pytester.path / "r.json"
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(pytester.path / "scenarios"),
                                "--conformance-upstream-dialect", "all", "--conformance-upstream-profile", "none",
                                "--conformance-record", str(record), "--conformance-report-json", str(report))
    played = [s for s in json.loads(report.read_text())["scenarios"] if s["outcome"] != "skipped"]
    assert len(played) >= 3 and result.ret == pytest.ExitCode.OK
    hars = sorted(p.name for p in (record / "har").glob("*.har"))
    assert len(hars) == len(played) and "plain-native-single.har" in hars
    assert "plain-native-single.openai-to-anthropic.har" in hars
    upstream_paths = set()
    for name in hars:
        entries = json.loads((record / "har" / name).read_text())["log"]["entries"]
        upstream_paths.add(entries[1]["request"]["url"].split("/v1", 1)[1])  # what reached the mock
    assert len(upstream_paths) == len(hars)  # each file holds its own pair's exchanges
    result.stdout.fnmatch_lines([f"record: {len(hars)} HAR file(s) in *"])
