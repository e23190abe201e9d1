"""The requests the harness sends as a client: a scenario's, as the chosen client writes it (with the
user's model, a huge message padded, the run's nonce placed where proxies keep it), and the plain
question that shows a proxy survived a bad exchange. Bodies only: sending them is ``harness.run``'s."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harness.core.dialects.clients import Profile
from harness.core.nonce import place_nonce
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario

PADDING = "(padding to make the message large) "


def pad_text(text: str, size: int) -> str:
    """``text`` grown with filler to ``size`` UTF-8 bytes (unchanged when already longer)."""
    missing = size - len(text.encode("utf-8"))
    if missing <= 0:
        return text
    return text + (PADDING * (missing // len(PADDING) + 1))[:missing]


def _pad_first_user(body: dict[str, Any], size: int) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    for i, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") == "user"):
            continue
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts = list(content)
                    parts[j] = {**part, "text": pad_text(part["text"], size)}
                    messages[i] = {**message, "content": parts}
                    return
        messages[i] = {**message, "content": pad_text(content if isinstance(content, str) else "", size)}
        return


def build_request(scenario: Scenario, *, stream: bool, model: str | None, nonce: str) -> dict[str, Any]:
    """The body the client sends: the scenario's request, streaming as asked, with
    the model the user chose, padded when the case asks for a huge message, and the
    nonce placed where proxies keep it."""
    body = dict(scenario.client.request)
    body["stream"] = stream
    if not stream:
        body.pop("stream_options", None)
    if model is not None:
        body["model"] = model
    if scenario.client.pad_bytes is not None:
        body["messages"] = list(body.get("messages") or ())
        _pad_first_user(body, scenario.client.pad_bytes)
    return place_nonce(body, nonce, scenario.client.dialect)


_MODEL_FIELD = re.compile(r'("model"\s*:\s*)"(?:[^"\\]|\\.)*"')


def with_model(raw: str, model: str | None) -> str:
    """A raw body with the model the user chose in place of its own (its first ``"model": "…"``),
    so a model-routing proxy routes a malformed request as it would a good one."""
    if model is None:
        return raw
    return _MODEL_FIELD.sub(lambda m: m.group(1) + json.dumps(model), raw, count=1)


def request_payload(scenario: Scenario, body: Mapping[str, Any],
                    model: str | None = None) -> tuple[bytes, Mapping[str, Any]]:
    """The bytes to send and the body as recorded: a misbehaving client's raw bytes
    (recorded parsed when they are a JSON object) or the JSON request."""
    raw = scenario.client.raw_body
    if raw is None:
        return json.dumps(body, ensure_ascii=False).encode("utf-8"), body
    raw = with_model(raw, model)
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    return raw.encode("utf-8"), parsed if isinstance(parsed, dict) else {}


PROBE_QUESTION = "Are you still there? Answer yes."


def probe_scenario(scenario: Scenario, profile: Profile) -> Scenario:
    """A plain one-line question in the client's dialect, answered by the same
    backend dialect: what the proxy must still handle after a bad exchange."""
    request: dict[str, Any] = {
        "model": scenario.client.request.get("model", "probe"),
        "stream": False,
        "messages": [{"role": "user", "content": PROBE_QUESTION}],
    }
    if profile.written_in.requests.needs_max_tokens:
        request["max_tokens"] = 16
    return parse_scenario(
        {
            "id": f"{scenario.id}.survival-probe",
            "title": f"survival probe after {scenario.id}",
            "source": "synthetic",
            "stream_equivalence": False,
            "backend": {"dialect": scenario.backend.dialect.name, "frames": ["yes"]},
            "client": {"profile": profile.case_profile.name, "profiles": [profile.case_profile.name],
                       "request": request},
            "expect": {"content": "yes"},
        },
        family=scenario.family,
    )
