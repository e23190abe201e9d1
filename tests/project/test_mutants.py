"""Proof that the harness works: it fails each deliberately broken proxy of
``tests/mutants`` with the rules that proxy breaks, on scenarios the reference proxy
passes (so every mutant test can fail), and it passes a proxy that differs from the
reference only in ways real clients accept (no false alarms)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from mutants import ALL, CORRECT_VARIANTS, MUTANTS, anthropic, openai
from mutants.base import Mutant, Rewriter, parse_event, proxy_config, reference
from mutants.coverage import unproven
from mutants.different import CORRECT_BUT_DIFFERENT
from support import PATIENT_TIMEOUT, WHOLE_LIBRARY_FEATURES
from support.library import load_library, one_generated_cell_per_case
from support.mutant_rig import Rig, rig  # noqa: F401  (rig: the module's mock and reference proxy)

from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.script import natural_reason, serve_as
from harness.judge.rules import RULES
from harness.judge.rules.registry import ANTHROPIC, ENTRIES
from harness.run.isolation import wants_round
from harness.run.proxy_client import run_exchange
from harness.run.runner import play
from harness.run.settings import RunSettings
from mock_backends.control import MockControl
from reference_proxy.rescue import ToolSpec, collect, rescue_text

ServeFn = Callable[[Any], Any]
LIBRARY = {s.id: s for s in load_library()}
FEATURES = proxy_config("http://127.0.0.1:1/v1").features()  # what every mutant claims: the reference's


def serve_mutant(servers: ServeFn, mutant: Mutant, rig: Rig) -> str:
    """The mutant wired to the mock; its base URL."""
    return f"{servers(mutant.app(f'{rig.mock_url}/v1')).url}/v1"


def failed_rules(proxy_url: str, mock_url: str, scenario_ids: Iterable[str], *, profile: Profile | None,
                 upstream: str | None = None,
                 strict: bool = False, timeout: float = 5.0, workers: int = 1,
                 explained: bool = False, features: frozenset[str] = FEATURES) -> dict[str, list[str]]:
    """Each scenario played through the harness as one test item plays it: the rules it broke
    (``explained``: each with its message, for a test that expects none to show why one did)."""
    settings = RunSettings(proxy_url=proxy_url, features=features, strict=strict, timeout=timeout)

    def one(scenario_id: str) -> list[str]:
        scenario = LIBRARY[scenario_id] if upstream is None else serve_as(LIBRARY[scenario_id], DIALECTS[upstream])
        chosen, skip = choose_profile(scenario, profile, features)
        assert skip is None, f"{scenario_id}: {skip}"
        with MockControl(mock_url) as mock:
            run = play(scenario, settings=settings, mock=mock, profile=chosen)
        if explained:
            return [f"{f.rule_id}: {f.message[:300]}" for _, f in run.failures]
        return run.failed_rules

    ids = list(scenario_ids)
    # An isolation item plays several clients at once itself: it runs after the others, alone,
    # so its bursts of work never stretch the timing of a fault case running beside it.
    rounds = [i for i in ids if wants_round(LIBRARY[i])]
    others = [i for i in ids if i not in rounds]
    with ThreadPoolExecutor(workers) as pool:
        found = dict(zip(others, pool.map(one, others)))
    found.update((i, one(i)) for i in rounds)
    return {i: found[i] for i in ids}


def test_the_catalogue_is_sound() -> None:
    """Mutant ids are unique, and every rule and scenario a mutant names exists."""
    assert len(openai.MUTANTS) >= 15 + 4  # fifteen kinds of breakage, and four ways to mishandle a fault
    assert len({m.id for m in ALL}) == len(ALL)
    for mutant in MUTANTS:
        assert mutant.rules and mutant.scenarios and mutant.breaks, mutant.id
        assert set(mutant.rules) <= set(RULES), mutant.id
        assert set(mutant.scenarios) <= set(LIBRARY), mutant.id
        spec = [r for r in mutant.rules if RULES[r].severity == "spec"]
        assert not spec or mutant.strict, f"{mutant.id}: {spec} are only enforced with strict=True"


# Rules no mutant names, each with the reason it is proven at unit level only (none today;
# see tests/mutants/coverage.py).
UNPROVEN: dict[str, str] = {}


def test_every_rule_is_proven_against_a_live_broken_proxy() -> None:
    """Every rule of the catalogue is reported for some mutant of either dialect, or is
    on the allow-list with its reason; an allow-listed rule a mutant now proves leaves it."""
    assert set(UNPROVEN) <= set(RULES) and all(UNPROVEN.values())
    assert set(unproven()) == set(UNPROVEN)


def test_every_messages_rule_is_proven_by_a_messages_mutant() -> None:
    """A rule only the Messages profile applies is named by a mutant of the Messages
    catalogue (or allow-listed above): a chat-completion mutant cannot break it."""
    messages_only = {rule_id for rule_id in RULES if ENTRIES[rule_id].profiles == ANTHROPIC}
    named = {rule for mutant in anthropic.MUTANTS for rule in mutant.rules}
    assert messages_only, "no rule is for the Messages profile alone"
    assert sorted(messages_only - named - set(UNPROVEN)) == []


HERMES_CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
INVOKE_CALL = '<invoke name="read_file">\n<parameter name="path">a</parameter>\n</invoke>'


@pytest.mark.parametrize(("family", "call"), [("hermes", HERMES_CALL), ("invoke-xml", INVOKE_CALL)])
def test_a_rescuer_without_a_family_misses_its_calls_in_fences_too(family: str, call: str) -> None:
    """The rescue mutants switch a family off everywhere, a fenced block included,
    where the reference rescues the call; the other families still work."""
    tools = [ToolSpec("read_file")]
    fenced = "```\n" + call + "\n```\n"
    other = INVOKE_CALL if family == "hermes" else HERMES_CALL
    for text, calls in ((fenced, 0), (other, 1)):
        rescuer = openai.without_family(family)(tools, 65536)
        visible, rescued = collect(rescuer.feed(text) + rescuer.finish())
        assert len(rescued) == calls and (calls or visible == text), (text, visible, rescued)
        assert len(rescue_text(text, tools)[1]) == 1
    with pytest.raises(ValueError, match="no rescue family"):
        openai.without_family("no-such-family")


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_the_harness_catches_the_mutant(mutant: Mutant, servers: ServeFn, rig: Rig) -> None:
    """Every listed scenario fails the mutant with every listed rule, and passes the reference."""
    def play_all(url: str) -> dict[str, list[str]]:
        return failed_rules(url, rig.mock_url, mutant.scenarios, profile=mutant.profile, strict=mutant.strict,
                            timeout=mutant.timeout, upstream=mutant.upstream)

    reference_url = rig.reference_url
    if mutant.upstream is not None:  # the reference proxy translating as the mutant does
        reference_url = f"{servers(reference(proxy_config(f'{rig.mock_url}/v1', mutant.upstream))).url}/v1"
    assert play_all(reference_url) == {s: [] for s in mutant.scenarios}
    caught = play_all(serve_mutant(servers, mutant, rig))
    missed = {s: [r for r in mutant.rules if r not in rules] for s, rules in caught.items()}
    assert not any(missed.values()), f"{mutant.id} ({mutant.breaks}): rules not reported {missed}; got {caught}"


@pytest.mark.long
@pytest.mark.parametrize(("profile", "different", "at_least"), [
    (CLIENTS["openai"], CORRECT_BUT_DIFFERENT, 40),
    (CLIENTS["xml-client"], CORRECT_BUT_DIFFERENT, 40),
    (CLIENTS["anthropic"], anthropic.CORRECT_BUT_DIFFERENT_MESSAGES, 20),
], ids=["openai", "xml-client", "anthropic"])
def test_a_correct_but_different_proxy_passes_the_whole_library(profile: Profile, different: Mutant, at_least: int,
                                                                  servers: ServeFn, rig: Rig) -> None:
    """Acceptable variations (fragment sizes, no role, unknown fields at every level, id
    formats, SSE framing and comments) fail nothing, anywhere in the library the profile
    is meaningful for; each is legal by the specification too, so not even with --strict
    (played once, strict: the default rules are a subset of the strict ones). The variations
    rewrite the proxy's answer whatever format a call was rescued from, so of the generated
    cells one per case id is played (``one_generated_cell_per_case``); the fuzz test of the
    same proxy draws cells of every format."""
    answers = profile.answers
    ids = [s.id for s in LIBRARY.values() if choose_profile(s, profile, WHOLE_LIBRARY_FEATURES)[1] is None
           and natural_reason(s, answers) is None and s.id in one_generated_cell_per_case()]
    assert len(ids) > at_least
    url = serve_mutant(servers, different, rig)
    played = failed_rules(url, rig.mock_url, ids, profile=profile, strict=True, workers=4, timeout=PATIENT_TIMEOUT,
                          explained=True, features=WHOLE_LIBRARY_FEATURES)
    assert {s: rules for s, rules in played.items() if rules} == {}


@pytest.mark.parametrize("variant", CORRECT_VARIANTS, ids=[v.id for v in CORRECT_VARIANTS])
def test_a_proxy_that_chose_otherwise_where_clients_accept_it_passes(variant: Mutant, servers: ServeFn,
                                                                     rig: Rig) -> None:
    """A choice unlike the reference proxy's that no client minds fails nothing, even with --strict."""
    url = serve_mutant(servers, variant, rig)
    played = failed_rules(url, rig.mock_url, variant.scenarios, profile=variant.profile, strict=True,
                          timeout=PATIENT_TIMEOUT, upstream=variant.upstream, explained=True)
    assert played == {s: [] for s in variant.scenarios}


# --------------------------------------------------------------------------- the wire wrapper


@pytest.mark.parametrize("block", [
    'data: {"id":"c","choices":[]}',
    "data: [DONE]",
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0}',  # an Anthropic event
    "data: first line\ndata: second line",
])
def test_events_survive_parsing_and_encoding(block: str) -> None:
    """A rewriter that changes nothing sends every event as it came, in either dialect."""
    event = parse_event(block)
    assert event is not None
    assert b"".join(Rewriter().encode(e) for e in Rewriter().on_event(event)) == f"{block}\n\n".encode()
    assert parse_event(": keep-alive") is None


def test_the_wrapper_streams_rather_than_buffering(servers: ServeFn, rig: Rig) -> None:
    """Text sent before a 3 s upstream stall reaches the client before the stall starts,
    through the rewriting wrapper: a wire mutant streams like the proxy it wraps."""
    scenario = LIBRARY["faults-openai-stall-mid-call"]
    url = serve_mutant(servers, CORRECT_BUT_DIFFERENT, rig)
    with MockControl(rig.mock_url) as mock:
        ex = run_exchange(scenario, proxy_url=url, mock=mock, stream=True, profile=CLIENTS["openai"], model=None,
                          proxy_headers={}, timeout=10)
    # The first byte came at least the stall before the end (lower bounds only: load only delays things).
    assert ex.first_byte is not None and ex.elapsed - ex.first_byte >= 3 * 0.9


# --------------------------------------------------------------------------- what users read


@pytest.fixture
def scenario_folder(pytester: pytest.Pytester) -> Iterator[Callable[[str], str]]:
    def copy(scenario_id: str) -> str:
        source = LIBRARY[scenario_id].path
        assert source is not None
        target = pytester.path / "scenarios"
        (target / LIBRARY[scenario_id].family).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target / LIBRARY[scenario_id].family)
        return str(target)

    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    yield copy


def test_a_mutant_fails_a_pytest_run_with_the_text_users_read(
    pytester: pytest.Pytester, servers: ServeFn, rig: Rig, scenario_folder: Callable[[str], str]
) -> None:
    """``pytest --proxy-url`` against a mutant: the rule id and statement, what was
    found, and the command that replays the exchange."""
    mutant = next(m for m in MUTANTS if m.id == "tool-calls-finish-as-function-call")
    folder = scenario_folder("plain-native-single")
    proxy_url, mock_url = serve_mutant(servers, mutant, rig), rig.mock_url
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", folder, "--tb=long")
    result.assert_outcomes(failed=1)
    statements = [f"rule {r} [{RULES[r].severity}, {RULES[r].group}]: {RULES[r].statement}" for r in mutant.rules]
    result.stdout.fnmatch_lines([
        "rules broken: CALLS-002, EQ-001 (profile openai)",
        "plain-native-single: A native tool call with arguments over several deltas passes through intact",
        "=== streaming, as the scenario's request says ===",
        "finish_reason: expected 'tool_calls', received 'function_call'",
        statements[0],
        '  1 call(s) streamed but finish_reason is "function_call": VS Code Copilot hands calls on only at '
        '"tool_calls" or "stop"',
        "  answer as received (HTTP 200, * bytes, event 3, byte * marked; *",
        '    >> * | data: {…,"choices":[[]{"index":0,"delta":{},"finish_reason":"function_call"}]}',
        "       * | data: [[]DONE]",
        f"reproduce: *toolcall-conformance replay plain-native-single --proxy-url {proxy_url} "
        f"--scenarios {folder} --mock-url {mock_url}",
        statements[1],
        '  finish_reason: streamed "function_call", non-streamed "tool_calls"',
        "*plain * 0/1  1 failed",
        "rules failed per scenario *",
        "* CALLS-002  EQ-001",
        "  plain-native-single      F        F*",
        "FAILED conformance::plain-native-single - rules broken: CALLS-002*",
    ])
