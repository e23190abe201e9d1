"""The proxy's upstream client carries nothing from one client's request to the next."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig

ANSWER = {
    "id": "c", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}


def test_cookies_the_upstream_sets_are_not_sent_back_for_other_clients(servers: Any) -> None:
    seen: list[str | None] = []

    async def completions(request: Request) -> JSONResponse:
        seen.append(request.headers.get("cookie"))
        response = JSONResponse(ANSWER)
        response.set_cookie("session", f"client-{len(seen)}", path="/")
        return response

    upstream = servers(Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])]))
    proxy = servers(create_app(ProxyConfig(upstream=f"{upstream.url}/v1", log_level="warning")))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=10) as alice, httpx.Client(timeout=10) as bob:
        assert alice.post(f"{proxy.url}/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"] == "ok"
        assert bob.post(f"{proxy.url}/v1/chat/completions", json=body).status_code == 200
    assert seen == [None, None]
