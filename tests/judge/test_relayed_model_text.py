"""The model's own text next to its one call passes: a closer left over after a rescued call, and a text copy
of a call the backend also sent natively. No client runs either (openai-python keeps it in ``message.content``
beside the call and raises nothing, tests/judge/test_client_breaks.py), so a proxy that relays it is judged
like one that drops it; running the call twice stays a failure."""

from __future__ import annotations

import pytest
from support.chat_rules import ROLE, chunk, exchange, sse, start

from harness.core.scenario.loading import bundled_scenarios_dir, load_scenario
from harness.core.scenario.model import Scenario
from harness.judge.rules import Options, evaluate

COPY = '<tools>{"name": "read_file", "arguments": {"path": "src/app.py"}}</tools>'
CALL = '{"path": "src/app.py"}'


def _scenario(stem: str) -> Scenario:
    return load_scenario(bundled_scenarios_dir() / "qwen-tools" / f"{stem}.yaml")


def _answer(text: str, *calls: str) -> str:
    return sse(ROLE, chunk({"content": text}),
               *(chunk(start(i, f"call_{i}", "read_file", args)) for i, args in enumerate(calls)),
               chunk(finish="tool_calls"))


@pytest.mark.parametrize(("stem", "text"), [
    ("qwen-tools.orphan-closer", "Done."),
    ("qwen-tools.orphan-closer", "\n</tools>\nDone."),
    ("qwen-tools.native-and-leaked-copy", "Reading it."),
    ("qwen-tools.native-and-leaked-copy", "Reading it.\n\n" + COPY),
])
@pytest.mark.parametrize("strict", [False, True])
def test_the_models_text_beside_its_one_call_passes(stem: str, text: str, strict: bool) -> None:
    sc = _scenario(stem)
    failures = evaluate(sc, exchange(sc, _answer(text, CALL)), Options(strict=strict))
    assert [str(f) for f in failures] == []


def test_the_copy_run_as_a_second_call_fails() -> None:
    sc = _scenario("qwen-tools.native-and-leaked-copy")
    failures = evaluate(sc, exchange(sc, _answer("Reading it.", CALL, CALL)), Options())
    assert "CALLS-001" in {f.rule_id for f in failures}


def test_other_text_beside_the_call_still_fails() -> None:
    sc = _scenario("qwen-tools.orphan-closer")
    failures = evaluate(sc, exchange(sc, _answer("</tools> Done. </tools>", CALL)), Options())
    assert {"TEXT-002", "TEXT-003"} <= {f.rule_id for f in failures}
