"""FAULT-003 lets the backend's own error page through with its status, whatever line breaks it arrives
with: llm-toolcall-proxy (dinerburger/llm-toolcall-proxy 4292369, ``app.py``) relays each line of nginx's
502 page as an SSE line, a blank line after each, and openai-python raises the same InternalServerError
over the same page text as it would from nginx itself. A page with other words is still the proxy's own."""

from __future__ import annotations

import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.core.scenario.loading import load_library
from harness.judge.rules import Options, evaluate

SCENARIO = next(s for s in load_library() if s.id == "faults-openai-http-502-html")
PAGE = str(SCENARIO.backend.fault.body if SCENARIO.backend.fault else "")
RELINED = "".join(f"{line}\n\n" for line in PAGE.splitlines())
OTHER = "<html><body><h1>502 Bad Gateway</h1><p>proxy could not reach the model</p></body></html>"


@pytest.mark.parametrize(("body", "content_type", "fails"), [
    (PAGE, "text/html", False),
    (RELINED, "text/event-stream; charset=utf-8", False),
    (PAGE.replace("\r\n", " "), "text/html", False),
    (OTHER, "text/html", True),
    (OTHER, "text/event-stream", True),
], ids=["as-sent", "blank-line-after-each", "on-one-line", "another-page", "another-page-as-sse"])
def test_the_backends_page_relayed_passes(body: str, content_type: str, fails: bool) -> None:
    profile = CLIENTS["openai"]
    answer = Exchange(scenario_id=SCENARIO.id, profile=profile, stream=True,
                      request_body=dict(SCENARIO.client.request), request_headers={}, status=502,
                      response_headers={"content-type": content_type}, raw=body.encode())
    said = [f for f in evaluate(SCENARIO, answer, Options(profile=profile)) if f.rule_id == "FAULT-003"]
    assert bool(said) is fails, said
