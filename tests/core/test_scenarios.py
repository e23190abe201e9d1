"""Scenario validation: every broken file is reported at the right place, and the
bundled library is complete and self-consistent (its expectations are the spec
proxies are judged by, so a slip there is a bug like any other)."""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from harness.cli.main import main
from harness.core.dialects.frames import ContentFrame
from harness.core.errors import ScenarioError, ScenarioProblem
from harness.core.nonce import place_nonce
from harness.core.scenario.loading import bundled_scenarios_dir, parse_scenario, validate_paths
from harness.core.scenario.model import Scenario, UpstreamAssertion
from harness.judge.rules.context import broken_arguments
from harness.judge.rules.up import check_assertion
from harness.run.options import DEFAULT_TIMEOUT

BAD = Path(__file__).parents[1] / "bad_scenarios"
LIBRARY = bundled_scenarios_dir()
FAMILIES = {
    "isolation",
    "qwen-tools",
    "hermes",
    "invoke-xml",
    "qwen-coder",
    "tool-code",
    "cline-xml",
    "glm",
    "granite",
    "llama",
    "mistral",
    "pythonic",
    "seed-oss",
    "kimi-k2",
    "deepseek",
    "minimax",
    "gpt-oss",
    "phi",
    "gemma",
    "kimi-k3",
    "narration",
    "roo-tool-call",
    "plain",
    "features",
    "anthropic",
    "faults",
    "bad-input",
    "translation",
    "kiro",
    "ollama",
}
# Families that must be broad because each case covers one situation of many.
MINIMUM_PER_FAMILY = {"anthropic": 12, "faults": 12, "bad-input": 6}
# Families about things going wrong: every case also checks the proxy survives it.
TROUBLE_FAMILIES = {"faults", "bad-input"}
ANTHROPIC_STOP_REASONS = {"end_turn", "max_tokens", "tool_use"}
# The seeds a source may cite, by number: public write-ups of proxies whose behaviour a case imitates.
CAPTURES = Path(__file__).parents[1] / "captures"


@dataclass(frozen=True)
class BadCase:
    """One broken file (or set of files validated together) and the problem it must produce."""

    files: tuple[str, ...]
    reported: str  # the file the problem is reported against
    line: int | None
    field: str
    fragment: str  # part of the message that names the actual mistake

    @property
    def id(self) -> str:
        return self.reported.removesuffix(".yaml")


def _case(name: str, line: int | None, field: str, fragment: str) -> BadCase:
    return BadCase((name,), name, line, field, fragment)


BAD_CASES: list[BadCase] = [
    _case("invalid-yaml.yaml", 7, "(yaml)", "not valid YAML: expected ',' or ']'"),
    _case("not-a-mapping.yaml", 1, "(top level)", "a scenario file holds one mapping"),
    _case("unknown-top-level-key.yaml", 4, "tag", "unknown key 'tag'"),
    _case("unknown-nested-key.yaml", 8, "backend.finish", "unknown key 'finish'"),
    _case("missing-frames.yaml", 4, "backend", "missing required key 'frames'"),
    _case("missing-request-messages.yaml", 9, "client.request", "missing required key 'messages'"),
    _case("frame-wrong-shape.yaml", 8, "backend.frames[1]", "found key(s) 'text'"),
    _case(
        "tool-call-frame-without-index.yaml",
        7,
        "backend.frames[0].tool_call",
        "missing required key 'index'",
    ),
    _case("undeclared-expected-tool.yaml", 20, "expect.tool_calls[0].name", "'get_wether' is not among the request's tools"),
    _case("bad-regex.yaml", 14, "expect.content_regex", "not a valid regular expression"),
    _case("bad-upstream-regex.yaml", 18, "expect.upstream[0].matches", "not a valid regular expression"),
    _case("two-checks-in-assertion.yaml", 19, "expect.upstream[1]", "exactly one check per assertion, found ['equals', 'absent']"),
    _case("content-and-regex.yaml", 15, "expect.content_regex", "either 'content' or 'content_regex'"),
    _case("wrong-type.yaml", 4, "stream_equivalence", "is not of type 'boolean'"),
    _case("profile-not-in-profiles.yaml", 9, "client.profile", "profile 'xml-client' is not among 'profiles'"),
    _case("unknown-feature.yaml", 4, "requires[0]", "'loop-guards' is not one of"),
    _case("rechunk-non-stream.yaml", 4, "rechunk", "streaming requests only"),
    _case("bad-id.yaml", 1, "id", "an id is one line of lower-case letters"),
    _case("id-with-newline.yaml", 1, "id", "an id is one line of lower-case letters"),
    _case("conflicts-with-requires.yaml", 5, "conflicts", "loop-guard is both required and in conflicts"),
    _case("duplicate-key.yaml", 16, "(yaml)", "duplicate key 'id' (first given on line 1)"),
    _case("control-character.yaml", 7, "(yaml)", "unacceptable character #x0007"),
    _case("tools-not-a-list.yaml", 13, "client.request.tools", "is not of type 'array'"),  # and nothing else
    _case("multi-line-title.yaml", 2, "title", "a title is one non-empty line"),
    _case("tag-with-newline.yaml", 4, "tags[0]", "a tag is one line of lower-case letters"),
    _case("undeclared-native-tool-call.yaml", 7, "backend.frames[0].tool_call.name",
          "the native call's tool 'get_wether' is not among the request's tools"),
    _case("undeclared-native-tool-use.yaml", 7, "backend.frames[0].tool_use.name",
          "the native call's tool 'Bash' is not among the request's tools (declared: Read)"),
    BadCase(
        ("duplicate-id-first.yaml", "duplicate-id-second.yaml"),
        "duplicate-id-second.yaml",
        3,  # where its id is written
        "id",
        "id 'bad-duplicate-id' is already used by",
    ),
]




def _problems(case: BadCase) -> tuple[list[Scenario], list[ScenarioProblem]]:
    return validate_paths([BAD / name for name in case.files])


# --------------------------------------------------------------------------- broken files


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.id)
def test_bad_scenario_problem_is_located(case: BadCase) -> None:
    _, problems = _problems(case)
    where = (str(BAD / case.reported), case.line, case.field)
    located = [p for p in problems if (p.path, p.line, p.field) == where]
    assert located, f"no problem at {where}; got: {[str(p) for p in problems]}"
    assert any(case.fragment in p.message for p in located), [str(p) for p in located]


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.id)
def test_bad_scenario_reports_one_problem(case: BadCase) -> None:
    scenarios, problems = _problems(case)
    assert len(problems) == 1, [str(p) for p in problems]
    assert len(scenarios) == len(case.files) - 1


def test_a_clean_file_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines are only needed to place a problem: a file that validates is parsed once."""

    def compose(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("composed a second time")

    monkeypatch.setattr(yaml, "compose", compose)
    scenarios, problems = validate_paths([LIBRARY / "plain"])
    assert scenarios and problems == []


def test_every_bad_file_is_in_the_table() -> None:
    tabled = {name for case in BAD_CASES for name in case.files}
    on_disk = {p.name for p in BAD.glob("*.yaml")}
    assert on_disk == tabled
    assert len(BAD_CASES) >= 10


def _valid() -> dict[str, Any]:
    return {
        "id": "partly-broken", "title": "t", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["x"], "fault": {"kind": "drop", "after_frame": 1}},
        "client": {"request": {"stream": True, "messages": [{"role": "user", "content": "x"}],
                               "tools": [{"type": "function", "function": {"name": "f"}}]}},
        "expect": {"tool_calls": [{"name": "g", "arguments": {}}]},
    }


# (how the data is broken, the fields reported): a cross-field check runs only where the schema found no fault
PARTLY_BROKEN: dict[str, tuple[Callable[[dict[str, Any]], Any], list[str]]] = {
    "sound": (lambda d: d, ["expect.tool_calls[0].name"]),
    "elsewhere": (lambda d: d.pop("title"), ["(top level)", "expect.tool_calls[0].name"]),
    "tools-a-string": (lambda d: d["client"]["request"].update(tools="f"), ["client.request.tools"]),
    "a-tool-not-an-object": (lambda d: d["client"]["request"]["tools"].append(3), ["client.request.tools[1]"]),
    "frames-a-mapping": (lambda d: d["backend"].update(frames={"a": 1}),
                         ["backend.frames", "expect.tool_calls[0].name"]),
    "no-client": (lambda d: d.pop("client"), ["(top level)"]),
    "expect-a-list": (lambda d: d.update(expect=["x"]), ["expect"]),
}


@pytest.mark.parametrize("case", list(PARTLY_BROKEN))
def test_cross_field_checks_skip_what_the_schema_found_broken(case: str) -> None:
    breaks, fields = PARTLY_BROKEN[case]
    data = _valid()
    breaks(data)
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(data)
    assert sorted(p.field for p in raised.value.problems) == fields, [str(p) for p in raised.value.problems]


@pytest.mark.parametrize("data", [[], "scenario", None, {"client": 1, "backend": [], "expect": "x"}])
def test_any_data_gives_problems_never_an_exception(data: Any) -> None:
    with pytest.raises(ScenarioError):
        parse_scenario(data)


# --------------------------------------------------------------------------- the library


# Loaded once: the library is the slowest thing here to read, and every test reads the same files.
_LOADED = validate_paths([LIBRARY])


def _library() -> list[Scenario]:
    scenarios, problems = _LOADED
    assert problems == []
    return scenarios


def test_library_validates_and_covers_every_family() -> None:
    scenarios = _library()
    assert len(scenarios) >= 40
    per_family = Counter(s.family for s in scenarios)
    assert set(per_family) == FAMILIES, per_family
    short = {f: n for f, n in per_family.items() if n < MINIMUM_PER_FAMILY.get(f, 3)}
    assert not short, f"families below their minimum {MINIMUM_PER_FAMILY}: {short}"


DOCS = Path(__file__).parents[2] / "docs" / "scenarios.md"

# What docs/scenarios.md says each family holds (a phrase of its row in the Families table), and the
# cases that hold it: deleting or renaming one of them leaves a promise of the docs unkept.
REQUIRED: dict[str, dict[str, tuple[str, ...]]] = {
    "qwen-tools": {
        "`<tools>{json}</tools>`": ("qwen-tools-single-call", "qwen-tools-two-calls", "qwen-tools-split-everywhere"),
        "bare JSON content": ("qwen-tools-bare-json",),
        "JSON per line": ("qwen-tools-bare-json-per-line", "qwen-tools-per-line-in-tags"),
    },
    "hermes": {"`<tool_call>{json}</tool_call>`": ("hermes-single", "hermes-parallel", "hermes-nested-arguments")},
    "invoke-xml": {
        "`<function_calls>`": ("invoke-xml-wrapped", "invoke-xml-count-wrapper", "invoke-xml-split-small-frames"),
        "`<invoke>`": ("invoke-xml-bare-invoke", "invoke-xml-namespaced-name", "invoke-xml-two-invokes"),
        "`<parameter>`": ("invoke-xml-multiline-value", "invoke-xml-untyped-params", "invoke-xml-string-typed-number"),
    },
    "qwen-coder": {
        "`<tool_call><function=…><parameter=…>`": ("qwen-coder-multiline-indented", "qwen-coder-two-calls",
                                                  "qwen-coder-split-names", "qwen-coder-typed-by-schema"),
    },
    "tool-code": {
        "JSON blocks": ("tool-code-list-files",),
        "blocks that must stay text": ("tool-code-bash-block", "tool-code-malformed-json"),
    },
    "llama": {
        "separated by `; `": ("llama-llama3-json.two-calls-one-block",),
        "`<\\|python_tag\\|>`": ("llama-llama3-json.opener-variant",),
    },
    "glm": {"`<arg_key>/<arg_value>` pairs": ("glm-glm.one-call", "glm-glm.schema-types", "glm-glm.opener-variant")},
    "granite": {"`<\\|tool_call\\|>[{json}]` lists": ("granite-granite.one-call", "granite-granite.opener-variant")},
    "seed-oss": {"`<seed:tool_call><function=…><parameter=…>`": ("seed-oss-seed-oss.one-call", "seed-oss-seed-oss.schema-types")},
    "kimi-k2": {"`<\\|tool_calls_section_begin\\|>` sections": ("kimi-k2-kimi-k2.one-call", "kimi-k2-kimi-k2.two-calls-one-block")},
    "deepseek": {"`<｜tool▁calls▁begin｜>` sections": ("deepseek-deepseek-v31.one-call", "deepseek-deepseek-v31.two-calls-one-block"),
                 "V3 `function<｜tool▁sep｜>name`": ("deepseek-deepseek-v3.one-call", "deepseek-deepseek-v3.two-calls-one-block",
                                                    "deepseek-deepseek-v3.opener-variant"),
                 "V3.2 DSML `<｜DSML｜function_calls>`": ("deepseek-deepseek-v32.one-call", "deepseek-deepseek-v32.schema-types",
                                                       "deepseek-deepseek-v32.opener-variant")},
    "minimax": {"`<minimax:tool_call>`": ("minimax-minimax-m2.one-call", "minimax-minimax-m2.two-calls-one-block")},
    "phi": {"`functools[{json}]` lists": ("phi-phi4-mini.one-call", "phi-phi4-mini.two-calls-one-block")},
    "gemma": {"Gemma 4": ("gemma-gemma4.one-call",),
              "with its tokens stripped": ("gemma-gemma4.opener-variant",)},
    "kimi-k3": {"Kimi K3 XTML": ("kimi-k3-kimi-k3.one-call", "kimi-k3-kimi-k3.two-calls-one-block")},
    "narration": {"calls narrated as": ("narration-narration.one-call",)},
    "roo-tool-call": {"the arrow form": ("roo-tool-call-roo-tool-call.one-call",)},
    "gpt-oss": {"`<\\|channel\\|>commentary to=functions.name`": ("gpt-oss-gpt-oss.one-call", "gpt-oss-gpt-oss.opener-variant"),
                "the analysis channel as reasoning": ("gpt-oss-gpt-oss.reasoning-block",),
                "calls addressed from the analysis channel": ("gpt-oss-analysis-channel-call",),
                "a commentary preamble before a call": ("gpt-oss-preamble-then-call",),
                "a JSON final answer that is no call": ("gpt-oss-final-json-answer",)},
    "pythonic": {"`[f(a=1), g(b=\"x\")]`": ("pythonic-pythonic.one-call", "pythonic-pythonic.two-calls-one-block"),
                 "`<\\|python_start\\|>` and `<\\|python_end\\|>`": ("pythonic-llama4-pythonic.one-call",
                                                   "pythonic-llama4-pythonic.opener-variant")},
    "mistral": {
        "`[TOOL_CALLS]` JSON lists": ("mistral-mistral.one-call", "mistral-mistral.two-calls-one-block"),
        "`[TOOL_CALLS]name[ARGS]{json}`": ("mistral-mistral-v11.one-call", "mistral-mistral-v11.two-calls-separate-blocks"),
    },
    "cline-xml": {"the `xml-client` profile": ("cline-xml-backend-invoke", "cline-xml-backend-native",
                                        "cline-xml-several-tools")},
    "plain": {
        "text only": ("plain-text-multibyte", "plain-text-non-stream", "plain-include-usage"),
        "native tool calls": ("plain-native-single", "plain-native-parallel", "plain-native-no-arguments"),
        "near misses": ("plain-tag-in-backticks", "plain-empty-tool-call", "plain-length-cutoff"),
    },
    "features": {"optional-feature cases": ("features-force-non-stream", "features-system-to-user",
                                            "features-loop-guard")},
    "isolation": {
        "many clients at once": ("isolation-hermes-in-flight", "isolation-qwen-coder-in-flight",
                                 "isolation-native-in-flight", "isolation-anthropic-invoke-in-flight"),
        "several choices": ("isolation-n-choices",),
    },
    "anthropic": {
        "leaked invoke XML": ("anthropic-leaked-invoke-split", "anthropic-count-wrapper", "anthropic-two-invokes"),
        "native tool_use": ("anthropic-native-tool-use", "anthropic-native-duplicate"),
        "`tool_choice`": ("anthropic-tool-choice-any", "anthropic-tool-choice-none", "anthropic-tool-choice-tool"),
    },
    "faults": {
        "error statuses": tuple(f"faults-{d}-http-{s}" for d in ("openai", "anthropic")
                                for s in ("400", "401", "429-retry-after", "500")),
        "dropped connections": tuple(f"faults-{d}-drop-{w}" for d in ("openai", "anthropic")
                                     for w in ("between-events", "mid-event", "mid-native-call")),
        "stalls": ("faults-openai-stall-mid-call", "faults-anthropic-stall"),
        "broken or unusual events": ("faults-openai-malformed-event", "faults-anthropic-malformed-event",
                                     "faults-openai-sse-comments", "faults-openai-empty-choices",
                                     "faults-anthropic-unknown-event"),
        "byte splits": ("faults-openai-slow-drip", "faults-openai-split-multibyte-call", "faults-anthropic-slow-drip",
                        "faults-anthropic-split-multibyte"),
        "oversized calls": ("faults-openai-oversized-call", "faults-anthropic-oversized-call"),
    },
    "bad-input": {
        "invalid JSON": ("bad-input-openai-invalid-json", "bad-input-anthropic-invalid-json"),
        "missing or unknown fields": tuple(f"bad-input-{d}-{w}" for d in ("openai", "anthropic")
                                           for w in ("missing-messages", "unknown-role")),
        "orphan tool results": ("bad-input-openai-orphan-tool-result", "bad-input-anthropic-orphan-tool-result"),
        "huge or unfinished bodies": tuple(f"bad-input-{d}-{w}" for d in ("openai", "anthropic")
                                           for w in ("huge-message", "truncated-body")),
    },
    "kiro": {
        "toolUseEvent habits": ("kiro-late-tool-use-id", "kiro-whole-object-input", "kiro-empty-object-before-fragments"),
        "leaked invoke XML": ("kiro-leaked-antml-invoke", "kiro-leaked-invoke-and-native"),
        "the `conversationState` a gateway sends": ("kiro-request-conversation",),
    },
    "ollama": {
        "a call in a line before the `done` line": ("ollama-call-then-done-stop", "ollama-call-then-done-stop-anthropic"),
        "parallel calls all at `index` 0 or in one line": ("ollama-parallel-calls-index-zero",
                                                          "ollama-parallel-calls-one-line"),
        "a call in the `done` line": ("ollama-calls-in-done-line",),
        "`message.thinking`": ("ollama-thinking-before-call",),
        "lines cut anywhere across reads": ("ollama-line-cut-mid-json",),
        "the request a gateway sends": ("ollama-request-conversation",),
    },
    "translation": {
        "multi-turn tool conversations": ("translation-openai-conversation", "translation-anthropic-conversation"),
        "`tool_choice` in every form": tuple(f"translation-{d}-{c}" for d, cs in (
            ("openai", ("required", "named", "none")), ("anthropic", ("any", "named", "none"))) for c in cs),
        "no upstream assertion": ("translation-openai-conversation", "translation-anthropic-conversation"),
    },
}


def _documented_families() -> dict[str, str]:
    """The Families table of docs/scenarios.md: family -> what it holds."""
    section = DOCS.read_text("utf-8").split("\n## Families\n", 1)[1]
    return dict(re.findall(r"^\| `([a-z0-9-]+)` \| (.+) \|$", section, re.MULTILINE))


@pytest.mark.parametrize("doc", ["scenarios.md", "harness.md", "importing.md", "rules.md"])
def test_docs_table_rows_are_one_line_each(doc: str) -> None:
    """A line break inside a Markdown table row ends the table there."""
    lines = (Path(__file__).parents[2] / "docs" / doc).read_text("utf-8").splitlines()
    in_table = False
    for number, line in enumerate(lines, 1):
        if re.match(r"\|\s*:?-{3}", line):
            in_table = True
        elif not line.strip():
            in_table = False
        elif in_table:
            assert line.startswith("|"), f"docs/{doc}:{number}: a table row is cut: {line[:60]!r}"


def test_the_docs_family_table_is_the_library() -> None:
    assert set(_documented_families()) == FAMILIES == set(REQUIRED)


@pytest.mark.parametrize("family", sorted(REQUIRED))
def test_the_library_holds_what_the_docs_promise(family: str) -> None:
    row = _documented_families()[family]
    held = {s.id: s for s in _library() if s.family == family}
    for promise, ids in REQUIRED[family].items():
        assert promise in row, f"the docs no longer promise {promise!r} for {family}: {row}"
        missing = [i for i in ids if i not in held]
        assert not missing, f"{family} promises {promise}, but the library lacks {missing}"


def _cut_call(scenario: Scenario) -> bool:
    """The backend sends a call whose arguments no client can parse: the answer has two right
    shapes (the call passed on as sent, ending ``tool_calls``, or without it), so the case
    states no finish reason."""
    return bool(broken_arguments(scenario))


@pytest.mark.parametrize("scenario", _LOADED[0], ids=lambda s: s.id)
def test_library_scenario_is_consistent(scenario: Scenario) -> None:
    assert scenario.path is not None
    path = Path(scenario.path)
    assert path.parent.name == scenario.family
    assert scenario.id == f"{scenario.family}-{path.stem}", "id is <family>-<file stem>"
    assert scenario.tags and scenario.source.strip()

    expect = scenario.expect
    if expect.error is None and not _cut_call(scenario):
        assert expect.finish_reason is not None, "every answered case states the finish reason the client gets"
        assert expect.content is not None or expect.content_regex is not None
    if scenario.client.profile.name == "anthropic":
        _check_anthropic(scenario)
    elif scenario.client.profile.name == "xml-client":
        assert expect.finish_reason == "stop", "an XML client always gets 'stop'"
        assert "xml-client" in scenario.requires and tuple(p.name for p in scenario.client.profiles) == ("xml-client",)
    elif (expect.error is not None or _cut_call(scenario)) and expect.finish_reason is None:
        pass  # an error answer has no finish reason to state, nor one with two right shapes
    elif expect.tool_calls:
        assert expect.finish_reason == "tool_calls"
    else:
        assert expect.finish_reason in ("stop", "length")
        assert expect.finish_reason == "stop" or scenario.backend.dialect.neutral_finish(
            scenario.backend.finish_reason) == "length"

    text = "".join(f.content for f in scenario.backend.frames if isinstance(f, ContentFrame))
    for marker in expect.markers:
        assert marker in text, f"marker {marker!r} never occurs in the backend's text, so it checks nothing"
    if not scenario.streams:
        assert "stream_options" not in scenario.client.request
    if "stream_options" in scenario.client.request:
        assert not scenario.stream_equivalence, "stream_options has no stream:false twin"
    problem = source_problem(scenario.source)
    assert problem is None, problem
    _check_upstream_assertions(scenario)
    _check_trouble(scenario)


def source_problem(source: str) -> str | None:
    """Why a ``source`` over-claims, or None. A case whose frames were written by hand
    says so first ('synthetic', maybe 'after' what it imitates); only a recorded one may
    say otherwise, and it names its capture file; a model's output quoted from a public
    page says so and names the page first. Every seed it cites exists."""
    captures = [name.rstrip(".") for name in re.findall(r"tests/captures/([\w.-]+)", source)]
    quoted = re.match(r"quoted from https://\S+", source) is not None
    if not source.startswith("synthetic") and not captures and not quoted:
        return f"a hand-written case starts its source with 'synthetic': {source[:80]!r}"
    missing = [name for name in captures if not (CAPTURES / name).is_file()]
    if missing:
        return f"no capture {', '.join(missing)} in {CAPTURES}"
    numbered = re.search(r"\b(?:seed|document|doc)s?\s+#?\d{3}\b", source, re.IGNORECASE)
    if numbered:
        return f"cite a write-up by its name (docs/scenarios.md, Sources), not by a number: {numbered.group(0)!r}"
    return None


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("synthetic", None),
        ("synthetic, after the VTC design and Kiro-Go PR #114: held back up to a cap", None),
        ("synthetic, after the Copilot service plan section 5.6.1 and vllm-tool-proxy", None),
        ("imported from tests/captures/vllm-qwen-tool-call.sse (SSE transcript).", None),
        ("Kiro-Go PR #114: the backend sends", "starts its source with 'synthetic'"),
        ("Azure OpenAI streams a first chunk with choices []", "starts its source with 'synthetic'"),
        ("imported from tests/captures/never-recorded.sse", "no capture never-recorded.sse"),
        ("quoted from https://github.com/vllm-project/vllm/issues/1 (the model's output)", None),
        ("quoted from a vLLM issue", "starts its source with 'synthetic'"),
        ("synthetic, after seed 004", "not by a number: 'seed 004'"),
        ("synthetic, after document 001 and the formats reference", "not by a number: 'document 001'"),
    ],
)
def test_source_rule(source: str, fragment: str | None) -> None:
    problem = source_problem(source)
    assert problem is None if fragment is None else (problem is not None and fragment in problem), problem


def _check_anthropic(scenario: Scenario) -> None:
    """A Messages case: written in the Messages API's own terms throughout."""
    expect, request = scenario.expect, scenario.client.request
    assert tuple(p.name for p in scenario.client.profiles) == ("anthropic",)
    assert isinstance(request.get("max_tokens"), int), "a Messages request always carries max_tokens"
    if "anthropic" in scenario.raw["backend"].get("upstream_dialects", ("anthropic",)):
        assert scenario.backend.dialect.name == "anthropic", "an anthropic client's cases use an anthropic backend"
        assert scenario.backend.finish_reason in ANTHROPIC_STOP_REASONS
    else:  # what a Messages upstream cannot say (arguments that are no JSON object, Kiro's own events) is
        assert scenario.family in ("faults", "kiro", "ollama")  # written in another dialect
    if expect.error is not None and expect.finish_reason is None:
        return
    assert expect.finish_reason in ANTHROPIC_STOP_REASONS, "finish_reason holds the Messages stop_reason"
    if expect.tool_calls:
        assert expect.finish_reason == "tool_use"
    else:
        assert expect.finish_reason == "end_turn" or scenario.backend.finish_reason == "max_tokens"


def _as_parts(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as a correct proxy may forward it: every string content written as one text part."""
    out = copy.deepcopy(dict(body))
    for message in out.get("messages") or ():
        if isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
    return out


def _check_upstream_assertions(scenario: Scenario) -> None:
    """Replayed on the client's own request, as a proxy that forwards it unchanged would
    send it, and as one that writes string content as text parts: a universal assertion
    must hold on both (or a correct proxy would fail a core check), and a case's
    feature-bound assertions must not all hold on either (or they could not tell a proxy
    with the feature from one without). A case whose backend speaks another API than its client
    (a Kiro gateway's ``conversationState``) checks a translation, which no proxy forwards unchanged."""
    if scenario.backend.dialect is not scenario.client.dialect:
        return
    request = place_nonce(scenario.client.request, "tcc-" + "0" * 32, scenario.client.dialect)
    for variant, forwarded in (("unchanged", request), ("content as parts", _as_parts(request))):
        bound = []
        for assertion in scenario.expect.upstream:
            problem = check_assertion(assertion, forwarded, request)
            if assertion.requires:
                bound.append(problem)
            else:
                assert problem is None, f"a correct proxy ({variant}) fails this universal assertion: {problem}"
        if bound:
            assert any(p is not None for p in bound), f"the feature-bound assertions all hold ({variant})"


_PARTS_BODY = {"messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Which disk?"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": [{"type": "text", "text": "/var: 91% used"}]}]},
    {"role": "user", "content": [{"type": "image", "source": {}}]},
]}

# (check, pointer, value, whether it holds on _PARTS_BODY)
TEXT_CHECKS: list[tuple[str, str, Any, bool]] = [
    ("contains", "/messages/*/content", "Which disk?", True),
    ("contains", "/messages/1/content", "Which disk?", True),
    ("contains", "/messages/*/content", "/var: 91%", True),  # inside a tool_result block
    ("contains", "/messages/*/content", "Which disk?!", False),
    ("contains", "/messages/*/role", "system", True),  # plain lists keep their meaning
    ("contains", "/messages/*/role", "assistant", False),
    ("not_contains", "/messages/*/content", "Which disk?", False),
    ("matches", "/messages/1/content", "(?s)Be brief\\..*Which disk", True),  # across two parts
    ("matches", "/messages/*/content", "^/var", True),
    ("matches", "/messages/*/content", "image", False),  # the part's type is no text
]


@pytest.mark.parametrize(("op", "path", "value", "holds"), TEXT_CHECKS)
def test_text_checks_read_content_parts(op: str, path: str, value: Any, holds: bool) -> None:
    problem = check_assertion(UpstreamAssertion(path, op, value), _PARTS_BODY, _PARTS_BODY)
    assert (problem is None) == holds, problem


def _check_trouble(scenario: Scenario) -> None:
    """Fault and bad-input cases: the expected error matches what goes wrong, frame
    positions are never re-split under a fault that counts frames, and the proxy must
    survive every one of them."""
    expect, fault, client = scenario.expect, scenario.backend.fault, scenario.client
    misbehaves = client.raw_body is not None or client.truncate_body or client.pad_bytes is not None
    if scenario.family in TROUBLE_FAMILIES:
        assert expect.proxy_survives, "a fault or bad-input case also checks that the proxy survives it"
        assert expect.within_seconds is not None, "a fault or bad-input case bounds how long the answer may take"
        assert expect.within_seconds < DEFAULT_TIMEOUT, "the bound is judged before the run's timeout gives up"
    if scenario.family == "bad-input":
        assert misbehaves or expect.error is not None, "a bad-input case has the client misbehave"
        assert not scenario.rechunk and not scenario.stream_equivalence, "re-running a bad request adds nothing"
    if expect.error is not None:
        assert scenario.family in TROUBLE_FAMILIES, "only fault and bad-input cases expect an error"
        if expect.error.in_stream == "required":
            assert scenario.streams, "an error inside the stream needs a streaming request"
    if fault is None:
        return
    assert scenario.family == "faults", "upstream faults live in the faults family"
    if fault.kind == "http_error":
        assert expect.error is not None and expect.error.status == (fault.status,), "the upstream status is relayed"
        assert expect.error.in_stream == "forbidden", "an error status before any stream is not turned into a stream"
    elif fault.kind == "drop":
        assert expect.error is not None and expect.error.in_stream == "required"
        assert "force-non-stream" in scenario.conflicts, "a proxy that never streams upstream cannot hold the text"
        assert expect.content is not None, "a drop case states the text that must survive it"
        assert expect.within_seconds is not None, "a drop must be reported promptly"
    else:
        assert expect.error is None, f"a {fault.kind} upstream still gives a complete answer"
    if fault.kind == "stall":
        assert fault.seconds is not None and expect.within_seconds is not None
        assert expect.within_seconds > fault.seconds, "a proxy that simply waits must be able to pass"
    if fault.after_frame is not None:
        assert not scenario.rechunk, "re-chunking would move the frame the fault counts"


# --------------------------------------------------------------------------- CLI


def test_cli_validate_reports_every_bad_file() -> None:
    result = CliRunner().invoke(main, ["validate", str(BAD)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    for case in BAD_CASES:
        prefix = f"{BAD / case.reported}:{case.line}: {case.field}: "
        assert any(line.startswith(prefix) for line in lines), (prefix, lines)
    assert all(line.startswith(str(BAD)) for line in lines), lines
    valid = len(BAD_CASES[-1].files) - 1
    assert result.stdout.strip() == f"{valid} valid, {len(lines)} problem(s)"


def test_cli_validate_accepts_the_library() -> None:
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip() == f"{len(_library())} valid, 0 problem(s)"


def _listed(args: list[str]) -> list[tuple[str, str]]:
    result = CliRunner().invoke(main, ["list", *args])
    assert result.exit_code == 0, result.stderr
    rows = [line.split()[:2] for line in result.stdout.splitlines()]
    assert result.stderr.strip() == f"{len(rows)} scenario(s)"
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize(
    ("args", "family", "tags"),
    [
        ([], None, ()),
        (["--family", "invoke-xml"], "invoke-xml", ()),
        (["--family", "cline-xml"], "cline-xml", ()),
        (["--tag", "negative"], None, ("negative",)),
        (["--tag", "parallel", "--tag", "native"], None, ("parallel", "native")),
        (["--family", "hermes", "--tag", "parallel"], "hermes", ("parallel",)),
    ],
)
def test_cli_list_filters(args: list[str], family: str | None, tags: tuple[str, ...]) -> None:
    wanted = [
        (s.id, s.family)
        for s in _library()
        if (family is None or s.family == family) and all(t in s.tags for t in tags)
    ]
    assert wanted, "the filter must select something for the test to mean anything"
    assert _listed([*args, "--scenarios", str(LIBRARY)]) == wanted
