"""The proxy's configuration, and how it is assembled from flags, environment and file.

Precedence, highest first: command-line flags, ``TCC_PROXY_*`` environment
variables, a YAML file, defaults. Assembly is pure (mappings in, ``ProxyConfig``
or ``ConfigError`` out) so every rule is testable without a process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from harness.core.errors import ConformanceError
from reference_proxy.rescue.families import FORMAT_IDS

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
UPSTREAM_DIALECTS = ("native", "openai", "anthropic", "responses", "kiro", "ollama")
MIN_BUFFER_CAP = 256
AUTO_FORMATS = "auto"
ANY_MODEL = "*"
FormatRules = tuple[tuple[str, tuple[str, ...]], ...]
"""(model pattern, format ids) pairs: the first pattern found in a request's model name
(case-insensitive; ``*`` matches every model) says which text formats are rescued."""
HOLD_BACK_CAP = 65536  # the cap the hold-back-cap scenarios are written for  # below this, every marker would overflow before it could be recognised


class ConfigError(ConformanceError):
    """The configuration is unusable; the message is one line naming the setting."""


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """Everything one running proxy needs to know."""

    upstream: str  # base URL, e.g. http://127.0.0.1:9000/v1
    api_key: str | None = None  # replaces the client's Authorization when set
    connect_timeout: float = 10.0
    read_timeout: float = 300.0  # per socket read: a stalled upstream ends the request with an error
    body_timeout: float = 5.0  # longest pause of a client sending its request body (then 408)
    buffer_cap: int = 65536
    # Roo Code calls native tools only since 3.37 (reference_proxy.xml_client.is_xml_client).
    xml_client_patterns: tuple[str, ...] = ("cline", "kilo", "roo<3.37")
    loop_guard_max_tool_messages: int | None = 20
    system_to_user: bool = False
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    upstream_dialect: str = "native"  # native: each client's own API; openai / anthropic: every request translated to it
    rescue_formats: FormatRules = ((ANY_MODEL, (AUTO_FORMATS,)),)  # like vLLM's --tool-call-parser, per model

    def __post_init__(self) -> None:
        # A frozen dataclass cannot normalise in place; object.__setattr__ is the documented way.
        object.__setattr__(self, "upstream", normalize_upstream(self.upstream))
        object.__setattr__(
            self, "xml_client_patterns", tuple(p.lower() if isinstance(p, str) else p for p in self.xml_client_patterns)
        )
        validate(self)

    def features(self) -> frozenset[str]:
        """The optional scenario features this configuration provides."""
        out: set[str] = set()
        if self.loop_guard_max_tool_messages is not None:
            out.add("loop-guard")
        if self.xml_client_patterns:
            out.add("xml-client")
        if self.system_to_user:
            out.add("system-to-user")
        out.add("tool-choice")  # Messages tool_choice is always emulated
        if self.buffer_cap <= HOLD_BACK_CAP:
            out.add("hold-back-cap")  # a possible call longer than the cap is released as text
        out.add("body-timeout")  # a client that stalls while sending its body gets 408
        out.add("fails-fast")  # an upstream failure is passed on at once, never retried
        out.add("system-first")  # a strict chat template's refusal of a late system message is met by moving it
        return frozenset(out)

    def formats_for(self, model: str) -> frozenset[str] | None:
        """The text formats rescued for a request naming ``model``; None: every format
        (``auto``, also when no pattern matches)."""
        wanted = model.lower() if isinstance(model, str) else ""
        for pattern, formats in self.rescue_formats:
            if pattern == ANY_MODEL or pattern.lower() in wanted:
                return None if AUTO_FORMATS in formats else frozenset(formats)
        return None

    def calls_upstream(self, client_api: str) -> str:
        """The API a request of ``client_api`` ("openai", "anthropic" or "responses") is sent upstream in."""
        return client_api if self.upstream_dialect == "native" else self.upstream_dialect

    @property
    def models_url(self) -> str:
        return f"{self.upstream}/models"


def normalize_upstream(url: str) -> str:
    """Accept the base URL with a trailing slash, or with ``/chat/completions`` or ``/messages`` appended."""
    if not isinstance(url, str):
        raise ConfigError(f"upstream: expected a URL string, got {type(url).__name__}")
    out = url.strip().rstrip("/")
    for endpoint in ("/chat/completions", "/messages"):
        if out.endswith(endpoint):
            out = out[: -len(endpoint)]
            break
    return out


def validate(config: ProxyConfig) -> None:
    parts = urlsplit(config.upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"upstream: expected an http(s) base URL like http://127.0.0.1:9000/v1, got {config.upstream!r}")
    if parts.query or parts.fragment:
        raise ConfigError(f"upstream: a base URL takes no query or fragment, got {config.upstream!r}")
    if config.api_key is not None and (not config.api_key or any(c in config.api_key for c in "\r\n")):
        raise ConfigError("api_key: must be a non-empty single line")
    for name in ("connect_timeout", "read_timeout", "body_timeout"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigError(f"{name}: expected a positive number of seconds, got {value!r}")
    if isinstance(config.buffer_cap, bool) or not isinstance(config.buffer_cap, int) or config.buffer_cap < MIN_BUFFER_CAP:
        raise ConfigError(f"buffer_cap: expected an integer of at least {MIN_BUFFER_CAP} characters, got {config.buffer_cap!r}")
    if any(not isinstance(p, str) or not p.strip() for p in config.xml_client_patterns):
        raise ConfigError(f"xml_client_patterns: every pattern must be a non-empty string, got {list(config.xml_client_patterns)!r}")
    guard = config.loop_guard_max_tool_messages
    if guard is not None and (isinstance(guard, bool) or not isinstance(guard, int) or guard < 0):
        raise ConfigError(f"loop_guard_max_tool_messages: expected a non-negative integer or null, got {guard!r}")
    if not isinstance(config.system_to_user, bool):
        raise ConfigError(f"system_to_user: expected true or false, got {config.system_to_user!r}")
    if not isinstance(config.host, str) or not config.host:
        raise ConfigError(f"host: expected a host name or address, got {config.host!r}")
    if isinstance(config.port, bool) or not isinstance(config.port, int) or not 0 <= config.port <= 65535:
        raise ConfigError(f"port: expected an integer from 0 to 65535, got {config.port!r}")
    if config.upstream_dialect not in UPSTREAM_DIALECTS:
        raise ConfigError(f"upstream_dialect: expected one of {', '.join(UPSTREAM_DIALECTS)}, "
                          f"got {config.upstream_dialect!r}")
    validate_format_rules(config.rescue_formats)
    if config.log_level not in LOG_LEVELS:
        raise ConfigError(f"log_level: expected one of {', '.join(LOG_LEVELS)}, got {config.log_level!r}")


def validate_format_rules(rules: Any) -> None:
    known = (AUTO_FORMATS, *FORMAT_IDS)
    if not isinstance(rules, tuple) or not rules:
        raise ConfigError(f"rescue_formats: expected format ids, or model patterns with format ids, got {rules!r}")
    for rule in rules:
        if not (isinstance(rule, tuple) and len(rule) == 2 and isinstance(rule[0], str) and rule[0].strip()
                and isinstance(rule[1], tuple) and rule[1]):
            raise ConfigError(f"rescue_formats: expected a model pattern and its format ids, got {rule!r}")
        unknown = [f for f in rule[1] if f not in known]
        if unknown:
            raise ConfigError(f"rescue_formats: unknown format {unknown[0]!r} for {rule[0]!r} (known: {', '.join(known)})")
        if AUTO_FORMATS in rule[1] and len(rule[1]) > 1:
            raise ConfigError(f"rescue_formats: 'auto' already means every format, for {rule[0]!r}")


def parse_format_rules(name: str, value: Any) -> FormatRules:
    """``rescue_formats`` from text (``hermes,glm``: for every model; ``gpt-oss=gpt-oss;
    qwen3-coder=qwen-coder,hermes;*=auto``: per model), a list of format ids, or a mapping
    of model patterns to format ids (a list or text)."""

    def ids(v: Any) -> tuple[str, ...]:
        if isinstance(v, str):
            return tuple(x.strip().lower() for x in v.replace("+", ",").split(",") if x.strip())
        if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
            return tuple(x.strip().lower() for x in v)
        raise ConfigError(f"{name}: expected format ids (a list or comma-separated text), got {v!r}")

    if isinstance(value, str):
        rules = []
        for part in value.split(";"):
            if part.strip():
                pattern, sep, formats = part.partition("=")
                rules.append((pattern.strip(), ids(formats)) if sep else (ANY_MODEL, ids(pattern)))
        return tuple(rules)
    if isinstance(value, Mapping):
        return tuple((str(k).strip(), ids(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ((ANY_MODEL, ids(value)),)
    raise ConfigError(f"{name}: expected format ids, or a mapping of model patterns to format ids, got {value!r}")


def format_rules_text(rules: FormatRules) -> str:
    """The text ``parse_format_rules`` reads back as ``rules``."""
    return ";".join(f"{pattern}={','.join(formats)}" for pattern, formats in rules)


# --------------------------------------------------------------------------- sources

FIELD_NAMES = tuple(f.name for f in fields(ProxyConfig))

#: Environment variable for each setting.
ENV_VARS: dict[str, str] = {name: f"TCC_PROXY_{name.upper()}" for name in FIELD_NAMES}
ENV_VARS["loop_guard_max_tool_messages"] = "TCC_PROXY_LOOP_GUARD"
#: Old names still read (when the current one is unset): the XML-reading clients' patterns were first
#: called ``vtc_patterns``, after "virtual tool calling".
OLD_ENV_VARS: dict[str, str] = {"xml_client_patterns": "TCC_PROXY_VTC_PATTERNS"}
OLD_KEYS: dict[str, str] = {"loop_guard": "loop_guard_max_tool_messages", "vtc_patterns": "xml_client_patterns"}
CONFIG_FILE_ENV = "TCC_PROXY_CONFIG"

_OFF_WORDS = frozenset({"off", "none", "null", "disabled", "false", "no"})
_TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _parse_bool(name: str, text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ConfigError(f"{name}: expected true or false, got {text!r}")


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {text!r}") from None


def _parse_float(name: str, text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ConfigError(f"{name}: expected a number, got {text!r}") from None


def _parse_guard(name: str, text: str) -> int | None:
    return None if text.strip().lower() in _OFF_WORDS else _parse_int(name, text)


def _parse_patterns(_name: str, text: str) -> tuple[str, ...]:
    if text.strip().lower() in _OFF_WORDS:
        return ()
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _parse_str(_name: str, text: str) -> str:
    return text


def _parse_level(_name: str, text: str) -> str:
    return text.strip().lower()


_ENV_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "upstream": _parse_str,
    "api_key": _parse_str,
    "connect_timeout": _parse_float,
    "read_timeout": _parse_float,
    "body_timeout": _parse_float,
    "buffer_cap": _parse_int,
    "xml_client_patterns": _parse_patterns,
    "loop_guard_max_tool_messages": _parse_guard,
    "system_to_user": _parse_bool,
    "host": _parse_str,
    "port": _parse_int,
    "log_level": _parse_level,
    "upstream_dialect": _parse_level,
    "rescue_formats": parse_format_rules,
}


def to_env(config: ProxyConfig) -> dict[str, str]:
    """The environment that gives ``config`` back through ``from_env`` (how worker
    processes started by uvicorn get the settings their parent resolved)."""
    out: dict[str, str] = {}
    for name, var in ENV_VARS.items():
        value = getattr(config, name)
        if name == "rescue_formats":
            out[var] = format_rules_text(value)
        elif value is None:  # "off" where a word says unset; else empty, which counts as unset
            out[var] = "off" if _ENV_PARSERS[name] is _parse_guard else ""
        elif isinstance(value, bool):
            out[var] = "true" if value else "false"
        elif isinstance(value, tuple):
            out[var] = ",".join(value) if value else "off"
        else:
            out[var] = str(value)
    return out


def from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment gives (empty variables count as unset)."""
    out: dict[str, Any] = {}
    for name, var in ENV_VARS.items():
        text = env.get(var)
        if (text is None or text == "") and name in OLD_ENV_VARS:
            var = OLD_ENV_VARS[name]
            text = env.get(var)
        if text is None or text == "":
            continue
        out[name] = _ENV_PARSERS[name](var, text)
    return out


def from_file_data(data: Any, *, where: str = "config file") -> dict[str, Any]:
    """The settings a parsed YAML document gives; keys may use ``-`` or ``_``."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of settings at the top level")
    out: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        key = OLD_KEYS.get(key, key)
        if key not in FIELD_NAMES:
            raise ConfigError(f"{where}: unknown setting {raw_key!r} (known: {', '.join(FIELD_NAMES)})")
        if key == "xml_client_patterns":
            if isinstance(value, str):
                value = _parse_patterns(key, value)
            elif isinstance(value, list):
                value = tuple(value)
            elif value is None:
                value = ()
            else:
                raise ConfigError(f"{where}: xml_client_patterns: expected a list of strings")
        if key == "rescue_formats":
            value = parse_format_rules(f"{where}: rescue_formats", value)
        if key in ("connect_timeout", "read_timeout", "body_timeout") and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if key == "loop_guard_max_tool_messages" and value is False:
            value = None  # YAML reads a bare 'off' as false
        if key == "log_level" and isinstance(value, str):
            value = value.lower()
        out[key] = value
    return out


def read_file(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    return from_file_data(data, where=str(p))


def build_config(
    cli: Mapping[str, Any],
    env: Mapping[str, str],
    file_data: Mapping[str, Any] | None = None,
) -> ProxyConfig:
    """Merge the three sources (flags > environment > file > defaults).

    ``cli`` holds only the flags the user actually gave (None means not given).
    """
    merged: dict[str, Any] = dict(file_data or {})
    merged.update(from_env(env))
    merged.update({k: v for k, v in cli.items() if v is not None})
    guard = merged.get("loop_guard_max_tool_messages")
    if isinstance(guard, str):  # "off" or a number, from a flag or a file
        merged["loop_guard_max_tool_messages"] = _parse_guard("loop_guard_max_tool_messages", guard)
    unknown = sorted(set(merged) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    if not merged.get("upstream"):
        raise ConfigError(f"upstream: not set (use --upstream URL, {ENV_VARS['upstream']}, or 'upstream:' in --config)")
    try:
        return ProxyConfig(**merged)
    except TypeError as exc:  # a value of a shape no validator anticipated
        raise ConfigError(str(exc)) from None


def load_config(cli: Mapping[str, Any], env: Mapping[str, str], config_file: str | Path | None = None) -> ProxyConfig:
    """``build_config`` with the YAML file read from ``config_file`` or ``$TCC_PROXY_CONFIG``."""
    path = config_file or env.get(CONFIG_FILE_ENV) or None
    return build_config(cli, env, read_file(path) if path else None)


def python_log_level(config: ProxyConfig) -> int:
    level: int = logging.getLevelName(config.log_level.upper())
    return level
