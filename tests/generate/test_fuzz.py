"""Generated cases: the strategies cover every format and make valid scenarios, the
reference proxy and a correct-but-different proxy pass a fixed-seed budget, and each
fuzz-only mutant (which passes the whole hand-written library) is caught within a
stated budget, shrunk to a scenario file that ``validate`` accepts and that fails the
same mutant through the ordinary run."""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, find, given, settings
from mutants.base import Mutant
from mutants.different import CORRECT_BUT_DIFFERENT
from mutants.fuzz_only import ALL_AT_ONCE, BUDGET, FUZZ_ONLY
from support.fuzz_runs import FEATURES, SEED, run_fuzz
from support.mutant_rig import Apart, Rig, apart, rig  # noqa: F401  (the module's servers)

from harness.cli.main import main
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.frames import ContentFrame
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.script import natural_reason
from harness.core.scenario.loading import load_library, load_scenario, parse_scenario, validate_paths
from harness.core.scenario.model import Scenario
from harness.generate.coverage import parse_formats
from harness.generate.formats import FORMATS
from harness.generate.fuzz.case import NATIVE, Case, scenario_data, seams_pattern
from harness.generate.fuzz.choices import all_formats, parse_duration, parse_formats
from harness.generate.fuzz.strategies import cases, profiles_for
from harness.generate.fuzz.yaml_out import dump_scenario
from harness.judge.rules import Options, evaluate
from harness.run.fuzzing import FuzzSettings, fuzz
from harness.run.proxy_client import run_exchange
from harness.run.runner import play
from harness.run.settings import RunSettings
from mock_backends.control import MockControl

# Scenario folders that hold no text format of their own.
NOT_FORMATS = frozenset({"plain", "features", "anthropic", "faults", "bad-input", "isolation", "translation", "kiro", "ollama"})


# --------------------------------------------------------------------------- what is generated


def test_every_text_format_of_the_library_has_a_writer() -> None:
    """Each scenario family holding a text format is some writer's family, and a run
    covers every writer (and native calls) unless told otherwise."""
    families = {s.family for s in load_library()} - NOT_FORMATS
    assert families and families <= {f.family for f in FORMATS.values()}
    assert all_formats() == [*FORMATS, NATIVE] and parse_formats(()) == tuple(all_formats())


PLAIN_CLIENT = (CLIENTS["openai"],)  # the profile reasoning drafts are drawn for


@pytest.mark.parametrize("format_id", list(FORMATS))
def test_each_format_is_generated_through_its_writer(format_id: str) -> None:
    """Cases of a format hold its writer's blocks, delimiters and all; some open with a
    closed reasoning block drafting calls in the format, which the client must get as
    text (it is in the expected content) and not as calls."""
    written: list[Case] = []
    reasoned: list[Case] = []

    @settings(max_examples=35, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(cases([format_id], profiles_for(format_id, PLAIN_CLIENT), native=False))
    def draw(case: Case) -> None:
        assert case.format_id == format_id and not case.native
        for block in case.blocks:
            assert FORMATS[format_id].write(block) in case.text
        if any(call.arguments for call in case.calls):
            written.append(case)
        if case.reasoning:
            assert case.text.startswith(case.reasoning) and case.visible.startswith(case.reasoning)
            form = FORMATS[format_id].reasoning  # the model's own reasoning form (<seed:think> for Seed-OSS)
            assert case.reasoning.startswith(form.open) and case.reasoning.rstrip().endswith(form.close.strip())
            reasoned.append(case)

    draw()
    assert written, f"no {format_id} case with arguments in 35 examples"
    assert any(all(d in case.text for d in FORMATS[format_id].delimiters) for case in written)
    if CLIENTS["openai"] in profiles_for(format_id, PLAIN_CLIENT):
        assert any(FORMATS[format_id].delimiters[0] in case.reasoning for case in reasoned), \
            f"no {format_id} case drafts a call in a reasoning block"


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases([*FORMATS], (CLIENTS["openai"], CLIENTS["anthropic"])))
def test_a_generated_case_is_a_valid_scenario_file(case: Case) -> None:
    """The file written for a case loads back to the same scenario; its frames carry
    the generated text, cut as drawn; the expectation is the generator's own parts."""
    data = scenario_data(case, rules=["TEXT-001"])
    reloaded = yaml.safe_load(dump_scenario(data, ["a comment"]))
    assert reloaded == data
    scenario = parse_scenario(reloaded, family=case.family)
    assert scenario.id.startswith(f"{case.family}-generated-") and "generated" in scenario.tags
    assert scenario.backend.text == case.text
    if case.stream:
        assert len([f for f in scenario.backend.frames if isinstance(f, ContentFrame)]) >= min(1, len(case.text))
    assert [(c.name, dict(c.arguments)) for c in scenario.expect.tool_calls] == \
        [(c.name, dict(c.arguments)) for c in case.calls]
    if scenario.expect.content is not None:
        assert scenario.expect.content == case.reasoning + "\n".join(case.prose)
    else:
        assert re.search(scenario.expect.content_regex or "", "".join(case.prose), re.DOTALL)


def test_seams_between_messages_text_blocks_take_any_white_space() -> None:
    pattern = seams_pattern(["Checking. ", "", "\nDone now"])
    for text in ("Checking.Done now", "Checking.\n\nDone  now", " Checking. Done\nnow "):
        assert re.search(pattern, text, re.DOTALL), text
    assert not re.search(pattern, "Checking.Donenow", re.DOTALL)


def test_options_of_the_command() -> None:
    assert parse_duration("90") == 90 and parse_duration("10m") == 600 and parse_duration("1.5h") == 5400
    with pytest.raises(ValueError, match="max-time"):
        parse_duration("ten minutes")
    assert parse_formats(["hermes,native", "hermes"]) == ("hermes", NATIVE)
    with pytest.raises(ValueError, match="unknown format"):
        parse_formats(["klingon"])


# --------------------------------------------------------------------------- correct proxies


def test_the_reference_proxy_passes_a_fixed_seed_budget(rig: Rig, tmp_path: Path) -> None:
    """Every format and native calls, both client dialects (Cline XML to XML-reading clients)."""
    report = run_fuzz(rig.reference_url, rig.mock_url, tuple(all_formats()), 6, tmp_path,
                      profiles=("openai", "anthropic"))
    assert [r.format_id for r in report.results] == all_formats()
    assert {r.format_id: r.examples for r in report.results} == {f: 6 for f in all_formats()}
    assert report.findings == [] and not list(tmp_path.rglob("*.yaml"))


def test_a_correct_but_different_proxy_passes_a_fixed_seed_budget(rig: Rig, servers: object, tmp_path: Path) -> None:
    url = f"{servers(CORRECT_BUT_DIFFERENT.app(f'{rig.mock_url}/v1')).url}/v1"  # type: ignore[operator]
    report = run_fuzz(url, rig.mock_url, tuple(all_formats()), 4, tmp_path, seed=SEED + 1)
    assert report.findings == []


# --------------------------------------------------------------------------- fuzz-only mutants

def _untroubled(scenario: Scenario) -> bool:
    """Not a case of a failing upstream or a misbehaving client: the fuzz-only mutants
    change only how a sound answer is read, and those cases (stalls, timeouts) cost
    most of the library's time."""
    client = scenario.client
    return scenario.backend.fault is None and scenario.expect.error is None and client.raw_body is None \
        and not client.truncate_body and client.pad_bytes is None


def _library_rules(proxy_url: str, mock_url: str) -> dict[str, list[str]]:
    """Every streaming sound-answer scenario of the hand-written library (not the generated
    ones: the format × case cells written from the taxonomy's templates, and the findings of
    generation committed to the library; nor the real outputs quoted in ``scenarios/captured``,
    one of which, kiro2api's narrated TodoWrite, also catches ``retypes-nested-integers``), played as written (what the fuzz-only mutants
    change is only ever seen on a stream): the rules broken."""
    library = [s for s in load_library() if _untroubled(s) and s.streams and "generated" not in s.tags
               and s.family != "captured" and not s.source.startswith("quoted")]

    def one(scenario: Scenario) -> tuple[str, list[str]]:
        profile, skip = choose_profile(scenario, None, FEATURES)
        if skip is not None or natural_reason(scenario, profile.answers) is not None:
            return scenario.id, []  # not for this proxy, which calls its client's own API upstream
        with MockControl(mock_url) as mock:
            exchange = run_exchange(scenario, proxy_url=proxy_url, mock=mock, stream=True, profile=profile,
                                    model=None, proxy_headers={}, timeout=15)
        options = Options(profile=profile, features=FEATURES)
        return scenario.id, [f.rule_id for f in evaluate(scenario, exchange, options)]

    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(one, library))


def test_the_hand_written_library_misses_every_fuzz_only_mutant(rig: Rig, servers: object) -> None:
    """All the fuzz-only breakages together pass every sound-answer case of the library."""
    url = f"{servers(ALL_AT_ONCE.app(f'{rig.mock_url}/v1')).url}/v1"  # type: ignore[operator]
    broken = {s: rules for s, rules in _library_rules(url, rig.mock_url).items() if rules}
    assert broken == {}, f"hand-written scenarios catch a fuzz-only mutant: {broken}"


@pytest.mark.parametrize("mutant", FUZZ_ONLY, ids=[m.id for m in FUZZ_ONLY])
def test_only_generation_catches_the_mutant(mutant: Mutant, rig: Rig, apart: Apart, tmp_path: Path) -> None:
    url = apart.mutant_urls[mutant.id]

    formats, budget = BUDGET[mutant.id]
    report = run_fuzz(url, apart.mock_url, formats, budget, tmp_path / "found", database=tmp_path / "db",
                      shrink_budget=5)
    assert len(report.findings) == 1, f"{mutant.id} ({mutant.breaks}) not caught in {budget} examples"
    finding = report.findings[0]
    assert set(mutant.rules) <= set(finding.rules)
    scenarios, problems = validate_paths([tmp_path / "found"])
    assert problems == [] and [s.id for s in scenarios] == [finding.scenario_id]
    header = finding.path.read_text("utf-8").splitlines()[:3]
    assert header[0].startswith(f"# generated by toolcall-conformance fuzz --seed {SEED}")
    assert header[1].startswith("# breaks: ") and header[2].startswith("# replay: toolcall-conformance replay")

    scenario = load_scenario(finding.path)
    with MockControl(apart.mock_url) as mock:
        # Where one network read ends is the machine's to choose: on a busy machine the
        # proxy may read two of the mock's paced writes at once, and a tear across three
        # reads is then a tear across two. The loss must still show in one of three plays.
        for _ in range(3):
            on_mutant = play(scenario, settings=RunSettings(proxy_url=url, features=FEATURES, timeout=5), mock=mock,
                             profile=scenario.client.profile)
            if set(mutant.rules) <= set(on_mutant.failed_rules):
                break
    with MockControl(rig.mock_url) as mock:
        on_reference = play(scenario, settings=RunSettings(proxy_url=rig.reference_url, features=FEATURES,
                                                           timeout=5), mock=mock, profile=scenario.client.profile)
    assert set(mutant.rules) <= set(on_mutant.failed_rules)
    assert on_reference.failed_rules == []

    if mutant.id == "retypes-nested-integers":  # cheap to find again: the example database replays it first
        again = run_fuzz(url, apart.mock_url, formats, budget, tmp_path / "again", seed=SEED + 7,
                         database=tmp_path / "db", shrink_budget=0)
        assert again.findings and again.results[0].examples <= 3 < report.results[0].examples


def _cut_inside_an_opener(case: Case) -> bool:
    """A failure that needs a call and a cut inside its opener, as a split-opener defect does
    (a call's: an opener a reasoning block drafts, which opens the answer, is text)."""
    text, start = case.text, len(case.reasoning)
    openers = [i for i in range(start, len(text)) if text.startswith("<tool_call>", i)]
    return case.stream and any(o < cut < o + len("<tool_call>") for o in openers for cut in case.splits)


def test_the_same_seed_shrinks_to_the_same_minimal_case() -> None:
    """Three shrinks from one seed end in the same case, and it keeps nothing the failure
    does not need: one call, no prose, one cut, no reasoning block, fence or torn writes
    (each cut is an offset into its own piece, so shrinking the prose leaves it in place)."""
    quiet = settings(database=None, max_examples=2000, suppress_health_check=list(HealthCheck))
    found = [find(cases(["hermes"]), _cut_inside_an_opener, settings=quiet, random=random.Random(SEED))
             for _ in range(3)]
    assert found[0] == found[1] == found[2], [c.describe() for c in found]
    minimal = found[0]
    assert len(minimal.calls) == 1 and not "".join(minimal.prose).strip() and len(minimal.splits) == 1
    assert not minimal.reasoning and "```" not in minimal.text
    assert minimal.write_bytes is None and not minimal.per_character


def test_the_same_seed_draws_the_same_cases(rig: Rig, tmp_path: Path) -> None:
    """Two runs with one seed play the same cases, in the same order."""
    played: list[list[str]] = [[], []]
    for run in played:
        with MockControl(rig.mock_url) as mock:
            fuzz(FuzzSettings(run=RunSettings(proxy_url=rig.reference_url, features=FEATURES), formats=("hermes",),
                              examples=4, seed=SEED, out=tmp_path), mock, replay_command=lambda scenario_id, _case: scenario_id,
                 observe=lambda case, run=run: run.append(repr(case)))  # type: ignore[misc]
    assert played[0] == played[1] and len(played[0]) == 4


# --------------------------------------------------------------------------- the command


def test_the_command_runs_every_format_and_prints_its_rate(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "2", "--seed", "3", "--no-database",
                                       "--formats", "hermes,native", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "seed 3 (reproduce with --seed 3)" in result.output
    assert re.search(r"hermes +2 example\(s\) .* examples/s  no failure", result.output)
    assert re.search(r"fuzz: 4 example\(s\) in .* examples/s\); no failure", result.output)


def test_the_plugin_plays_generated_cases_per_format(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``--conformance-fuzz N`` adds one item per format next to the scenarios."""
    monkeypatch.setenv("COLUMNS", "250")  # the header wraps to the terminal's width: one line each here
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest("--conformance-only", "--conformance-fuzz", "2", "--conformance-fuzz-seed", "5",
                                "--conformance-fuzz-formats", "hermes,native", "-k", "fuzz", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "conformance: 2 generated case(s) per format, seed 5 (reproduce with --conformance-fuzz-seed 5)",
        "*conformance::fuzz?hermes? PASSED*",
        "*conformance::fuzz?native? PASSED*",
    ])
