"""Which text formats the reference proxy rescues, per model (``rescue_formats``, like
vLLM's ``--tool-call-parser``): a format that is not selected reaches the client as the
text the model wrote, a selected one as calls; ``auto`` (the default) reads them all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.core.nonce import place_nonce
from harness.core.scenario.model import Scenario
from harness.generate.formats import FORMATS, Call
from harness.run.servers import serve
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app
from reference_proxy.config import (
    ConfigError,
    ProxyConfig,
    build_config,
    format_rules_text,
    from_file_data,
    load_config,
    parse_format_rules,
    to_env,
)
from reference_proxy.pipeline import default_rescuer, rescuer_for
from reference_proxy.rescue import ToolSpec, collect
from reference_proxy.rescue.families import FORMAT_IDS
from support.library import load_library
from support.sdk_http import openai_sdk

UP = "http://127.0.0.1:9000/v1"
TOOLS = (ToolSpec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}}),)
READ = Call("read_file", {"path": "src/app.py"})


# --------------------------------------------------------------------------- the setting


@pytest.mark.parametrize(
    ("value", "rules"),
    [
        ("auto", (("*", ("auto",)),)),
        ("hermes, GLM", (("*", ("hermes", "glm")),)),
        ("gpt-oss=gpt-oss; qwen3-coder=qwen-coder+hermes; *=auto",
         (("gpt-oss", ("gpt-oss",)), ("qwen3-coder", ("qwen-coder", "hermes")), ("*", ("auto",)))),
        (["hermes"], (("*", ("hermes",)),)),
        ({"gpt-oss": ["gpt-oss"], "*": "auto"}, (("gpt-oss", ("gpt-oss",)), ("*", ("auto",)))),
    ],
)
def test_the_setting_is_read_from_text_lists_and_mappings(value: Any, rules: Any) -> None:
    assert parse_format_rules("rescue_formats", value) == rules
    assert parse_format_rules("rescue_formats", format_rules_text(rules)) == rules


def test_the_setting_comes_from_flags_environment_and_file() -> None:
    assert build_config({"upstream": UP}, {}).rescue_formats == (("*", ("auto",)),)
    env = {"TCC_PROXY_RESCUE_FORMATS": "gpt-oss=gpt-oss"}
    assert build_config({"upstream": UP}, env).rescue_formats == (("gpt-oss", ("gpt-oss",)),)
    file = from_file_data({"rescue-formats": {"deepseek": ["deepseek-v3", "deepseek-v31"]}})
    assert build_config({"upstream": UP}, {}, file).rescue_formats == (("deepseek", ("deepseek-v3", "deepseek-v31")),)
    assert build_config({"upstream": UP}, env, file).rescue_formats == (("gpt-oss", ("gpt-oss",)),)
    config = load_config({"upstream": UP, "rescue_formats": (("gpt-oss", ("gpt-oss",)), ("*", ("hermes",)))}, {})
    assert load_config({}, to_env(config)) == config


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("hermes,nope", "rescue_formats: unknown format 'nope'"),
        ("auto,hermes", "rescue_formats: 'auto' already means every format"),
        ("gpt-oss=", "rescue_formats: expected a model pattern and its format ids"),
        ({"gpt-oss": 3}, "rescue_formats: expected format ids"),
    ],
)
def test_a_bad_selection_names_the_setting(value: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"upstream": UP}, {}, from_file_data({"rescue_formats": value}))
    assert problem in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("model", "formats"),
    [("gpt-oss-120b", frozenset({"gpt-oss"})), ("Qwen3-Coder-30B", frozenset({"qwen-coder", "hermes"})),
     ("llama-3.1", None)],
)
def test_the_first_pattern_in_the_model_name_wins(model: str, formats: frozenset[str] | None) -> None:
    config = ProxyConfig(upstream=UP, rescue_formats=(("gpt-oss", ("gpt-oss",)), ("qwen3", ("qwen-coder", "hermes")),
                                                      ("gpt", ("auto",))))
    assert config.formats_for(model) == formats


def test_every_format_the_harness_rescues_can_be_selected() -> None:
    assert set(FORMAT_IDS) == set(FORMATS) - {"cline-xml"}


# --------------------------------------------------------------------------- the rescuer


def _rescue(formats: frozenset[str] | None, text: str) -> tuple[str, list[str]]:
    rescuer = rescuer_for(formats)(TOOLS, 65536)
    events = [e for piece in text for e in rescuer.feed(piece)] + rescuer.finish()
    visible, calls = collect(events)
    return visible, [c.name for c in calls]


def test_auto_and_every_format_are_the_default_rescuer() -> None:
    assert rescuer_for(None) is default_rescuer
    assert rescuer_for(frozenset(FORMAT_IDS)) is default_rescuer


@pytest.mark.parametrize("format_id", sorted(FORMAT_IDS))
def test_only_the_selected_formats_are_rescued(format_id: str) -> None:
    """Each format alone: its own call is rescued, another format's is relayed as written."""
    text = "Reading it.\n" + FORMATS[format_id].write([READ])
    assert _rescue(frozenset({format_id}), text) == ("Reading it.\n", ["read_file"])
    other = "harmony" if format_id != "gpt-oss" else "hermes"
    other_text = "Reading it.\n" + FORMATS["gpt-oss" if other == "harmony" else other].write([READ])
    assert _rescue(frozenset({format_id}), other_text) == (other_text, [])


def test_a_selection_keeps_the_rules_of_the_text_around_calls() -> None:
    """Reasoning blocks and fenced examples stay text whatever is selected."""
    call = FORMATS["hermes"].write([READ])
    text = f"<think>\n{call}\n</think>\n\n```text\nExample:\n{call}\n```\n"
    assert _rescue(frozenset({"hermes"}), text) == (text, [])


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[str, MockControl]]:
    rules = (("gpt-oss", ("gpt-oss",)), ("*", ("auto",)))
    with serve(create_mock()) as mock:
        config = ProxyConfig(upstream=f"{mock.url}/v1", log_level="warning", rescue_formats=rules)
        with serve(create_app(config)) as proxy, MockControl(mock.url) as control:
            yield proxy.url, control


SCENARIO: Scenario = next(s for s in load_library() if s.id == "hermes-hermes.text-around")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("model", "rescued"), [("gpt-oss-120b", False), ("qwen3-8b", True)])
def test_the_proxy_rescues_what_the_model_writes(stack: tuple[str, MockControl], model: str, rescued: bool,
                                                 stream: bool) -> None:
    """Through real servers: Hermes text from a model configured for gpt-oss only is the
    model's text; from any other model it is a call."""
    url, control = stack
    nonce = control.arm(SCENARIO)
    body = place_nonce({**SCENARIO.client.request, "model": model, "stream": stream}, nonce)
    client = openai_sdk(base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=15)
    written = SCENARIO.backend.text
    if stream:
        content, names = "", []
        for chunk in client.chat.completions.create(**body):
            for choice in chunk.choices:
                content += choice.delta.content or ""
                names += [c.function.name for c in choice.delta.tool_calls or () if c.function and c.function.name]
    else:
        message = client.chat.completions.create(**body).choices[0].message
        content, names = message.content or "", [c.function.name for c in message.tool_calls or ()]
    client.close()
    if rescued:
        assert names == ["read_file"] and "<tool_call>" not in content
    else:
        assert (content, names) == (written, [])
