"""Configuration of the reference proxy: precedence (flags > environment > file >
defaults), validation with one clear line per problem, the features a configuration
claims, and the ``proxy`` command's handling of bad settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reference_proxy.cli import proxy
from reference_proxy.config import ConfigError, ProxyConfig, build_config, from_file_data, load_config
from reference_proxy.upstreams import REGISTRY

UP = "http://127.0.0.1:9000/v1"


@pytest.mark.parametrize(
    ("cli", "env", "file", "field", "expected"),
    [
        ({"upstream": UP}, {}, None, "buffer_cap", 65536),
        ({"upstream": UP}, {"TCC_PROXY_BUFFER_CAP": "1024"}, {"buffer_cap": 2048}, "buffer_cap", 1024),
        ({"upstream": UP}, {}, {"buffer_cap": 2048}, "buffer_cap", 2048),
        ({"upstream": UP, "buffer_cap": 4096}, {"TCC_PROXY_BUFFER_CAP": "1024"}, {"buffer_cap": 2048}, "buffer_cap", 4096),
        ({}, {"TCC_PROXY_UPSTREAM": "http://env:1/v1/"}, {"upstream": "http://file:1/v1"}, "upstream", "http://env:1/v1"),
        ({}, {}, {"upstream": "http://file:1/v1/chat/completions"}, "upstream", "http://file:1/v1"),
        ({"upstream": UP}, {"TCC_PROXY_LOOP_GUARD": "off"}, {"loop-guard": 5}, "loop_guard_max_tool_messages", None),
        ({"upstream": UP, "loop_guard_max_tool_messages": "off"}, {"TCC_PROXY_LOOP_GUARD": "3"}, None, "loop_guard_max_tool_messages", None),
        ({"upstream": UP, "loop_guard_max_tool_messages": "7"}, {}, None, "loop_guard_max_tool_messages", 7),
        ({"upstream": UP}, {"TCC_PROXY_XML_CLIENT_PATTERNS": "Cline, Continue"}, None, "xml_client_patterns", ("cline", "continue")),
        ({"upstream": UP}, {}, {"xml_client_patterns": []}, "xml_client_patterns", ()),
        # the old spellings (vtc, "virtual tool calling") still work; the current name wins over them
        ({"upstream": UP}, {"TCC_PROXY_VTC_PATTERNS": "Cline"}, None, "xml_client_patterns", ("cline",)),
        ({"upstream": UP}, {"TCC_PROXY_VTC_PATTERNS": "a", "TCC_PROXY_XML_CLIENT_PATTERNS": "b"}, None,
         "xml_client_patterns", ("b",)),
        ({"upstream": UP}, {}, {"vtc-patterns": ["roo"]}, "xml_client_patterns", ("roo",)),
        ({"upstream": UP}, {}, {"vtc_patterns": "off"}, "xml_client_patterns", ()),
        ({"upstream": UP}, {"TCC_PROXY_SYSTEM_TO_USER": "yes"}, None, "system_to_user", True),
        ({"upstream": UP, "system_to_user": False}, {"TCC_PROXY_SYSTEM_TO_USER": "yes"}, None, "system_to_user", False),
        ({"upstream": UP}, {"TCC_PROXY_API_KEY": ""}, None, "api_key", None),
        ({"upstream": UP}, {"TCC_PROXY_READ_TIMEOUT": "2.5"}, {"connect-timeout": 3}, "read_timeout", 2.5),
        ({"upstream": UP}, {}, {"connect-timeout": 3}, "connect_timeout", 3.0),
        ({"upstream": UP}, {"TCC_PROXY_BODY_TIMEOUT": "0.5"}, {"body_timeout": 9}, "body_timeout", 0.5),
        ({"upstream": UP}, {"TCC_PROXY_LOG_LEVEL": "DEBUG"}, None, "log_level", "debug"),
    ],
)
def test_precedence(cli: dict[str, Any], env: dict[str, str], file: dict[str, Any] | None, field: str, expected: Any) -> None:
    assert getattr(build_config(cli, env, from_file_data(file)), field) == expected


@pytest.mark.parametrize(
    ("cli", "env", "file", "problem"),
    [
        ({}, {}, None, "upstream: not set"),
        ({"upstream": "ftp://x/v1"}, {}, None, "upstream: expected an http(s) base URL"),
        ({"upstream": "http:///v1"}, {}, None, "upstream: expected an http(s) base URL"),
        ({"upstream": UP}, {"TCC_PROXY_PORT": "eighty"}, None, "TCC_PROXY_PORT: expected an integer"),
        ({"upstream": UP, "port": 70000}, {}, None, "port: expected an integer from 0 to 65535"),
        ({"upstream": UP, "buffer_cap": 10}, {}, None, "buffer_cap: expected an integer of at least"),
        ({"upstream": UP, "read_timeout": 0}, {}, None, "read_timeout: expected a positive number"),
        ({"upstream": UP}, {}, {"bufer_cap": 1}, "unknown setting 'bufer_cap'"),
        ({"upstream": UP}, {}, ["not", "a", "mapping"], "expected a mapping of settings"),
        ({"upstream": UP}, {"TCC_PROXY_SYSTEM_TO_USER": "maybe"}, None, "expected true or false"),
        ({"upstream": UP, "loop_guard_max_tool_messages": "lots"}, {}, None, "expected an integer"),
        ({"upstream": UP}, {}, {"loop_guard_max_tool_messages": -1}, "loop_guard_max_tool_messages: expected a non-negative"),
        ({"upstream": UP}, {}, {"xml_client_patterns": 5}, "xml_client_patterns: expected a list of strings"),
        ({"upstream": UP}, {}, {"xml_client_patterns": ["cline", ""]}, "xml_client_patterns: every pattern must be a non-empty string"),
        ({"upstream": UP}, {"TCC_PROXY_LOG_LEVEL": "loud"}, None, "log_level: expected one of"),
        ({"upstream": UP, "api_key": "a\nb"}, {}, None, "api_key: must be a non-empty single line"),
    ],
)
def test_bad_settings_name_the_setting(cli: dict[str, Any], env: dict[str, str], file: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(cli, env, from_file_data(file) if file is not None else None)
    message = str(info.value)
    assert problem in message and "\n" not in message


def test_yaml_file_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "proxy.yaml"
    good.write_text("upstream: http://vllm:8000/v1\nxml-client-patterns: [cline]\nloop-guard: off\nport: 8100\n")
    config = load_config({}, {}, good)
    assert (config.upstream, config.xml_client_patterns, config.loop_guard_max_tool_messages, config.port) == (
        "http://vllm:8000/v1",
        ("cline",),
        None,
        8100,
    )
    assert load_config({}, {"TCC_PROXY_CONFIG": str(good)}).port == 8100
    broken = tmp_path / "broken.yaml"
    broken.write_text("upstream: [unclosed\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml:\d+: not valid YAML"):
        load_config({}, {}, broken)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config({}, {}, tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("changes", "features"),
    [
        ({}, {"loop-guard", "xml-client", "tool-choice", "hold-back-cap", "body-timeout", "fails-fast", "system-first"}),
        ({"loop_guard_max_tool_messages": None}, {"xml-client", "tool-choice", "hold-back-cap", "body-timeout", "fails-fast", "system-first"}),
        ({"xml_client_patterns": ()}, {"loop-guard", "tool-choice", "hold-back-cap", "body-timeout", "fails-fast", "system-first"}),
        ({"system_to_user": True}, {"loop-guard", "xml-client", "system-to-user", "tool-choice", "hold-back-cap",
                                    "body-timeout", "fails-fast", "system-first"}),
        ({"buffer_cap": 1 << 20}, {"loop-guard", "xml-client", "tool-choice", "body-timeout", "fails-fast", "system-first"}),
    ],
)
def test_features(changes: dict[str, Any], features: set[str]) -> None:
    assert ProxyConfig(upstream=UP, **changes).features() == frozenset(features)


def test_urls() -> None:
    config = ProxyConfig(upstream="http://h:1/v1/")
    assert config.models_url == "http://h:1/v1/models"
    urls = {name: upstream(config).url for name, upstream in REGISTRY.items()}
    assert urls == {"openai": "http://h:1/v1/chat/completions", "anthropic": "http://h:1/v1/messages",
                    "responses": "http://h:1/v1/responses", "kiro": "http://h:1/v1/generateAssistantResponse",
                    "ollama": "http://h:1/v1/api/chat"}
    assert ProxyConfig(upstream="http://h:1/v1/messages").upstream == "http://h:1/v1"


@pytest.mark.parametrize(
    ("args", "env", "problem"),
    [
        ([], {}, "upstream: not set"),
        (["--upstream", "nowhere"], {}, "upstream: expected an http(s) base URL"),
        (["--upstream", UP, "--loop-guard", "many"], {}, "expected an integer"),
        (["--upstream", UP], {"TCC_PROXY_BUFFER_CAP": "big"}, "TCC_PROXY_BUFFER_CAP: expected an integer"),
    ],
)
def test_command_rejects_bad_settings_in_one_line(args: list[str], env: dict[str, str], problem: str) -> None:
    result = CliRunner().invoke(proxy, args, env={"TCC_PROXY_UPSTREAM": "", **env})
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and problem in lines[0], result.output


@pytest.mark.parametrize("flag", ["--xml-client-patterns", "--vtc-patterns"])
def test_command_takes_the_patterns_under_both_spellings(flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--vtc-patterns`` is the old spelling of ``--xml-client-patterns``."""
    import reference_proxy.cli

    served: list[ProxyConfig] = []
    monkeypatch.setattr(reference_proxy.cli, "serve_forever", lambda config, workers: served.append(config))
    result = CliRunner().invoke(proxy, ["--upstream", UP, flag, "Cline,Continue"], env={"TCC_PROXY_UPSTREAM": ""})
    assert result.exit_code == 0, result.output
    assert [c.xml_client_patterns for c in served] == [("cline", "continue")]


def test_command_help_names_every_setting() -> None:
    result = CliRunner().invoke(proxy, ["--help"])
    assert result.exit_code == 0
    for flag in ("--upstream", "--port", "--host", "--config", "--api-key", "--buffer-cap", "--read-timeout", "--body-timeout",
                 "--connect-timeout", "--xml-client-patterns", "--rescue-formats", "--loop-guard", "--system-to-user", "--log-level"):
        assert flag in result.output
    assert "TCC_PROXY_UPSTREAM" in result.output


@pytest.mark.parametrize("changes", [
    {},
    {"api_key": "sk-x", "xml_client_patterns": (), "loop_guard_max_tool_messages": None, "system_to_user": True,
     "buffer_cap": 100000, "read_timeout": 12.5, "log_level": "warning"},
], ids=["defaults", "every-setting-changed"])
def test_worker_processes_get_the_settings_back_from_the_environment(changes: dict[str, Any]) -> None:
    """``--workers N``: each worker rebuilds the parent's settings from the environment."""
    from reference_proxy.config import to_env

    config = load_config({"upstream": "http://127.0.0.1:9/v1", **changes}, {})
    assert load_config({}, to_env(config)) == config
