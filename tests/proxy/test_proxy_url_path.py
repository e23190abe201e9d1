"""The path a request is logged under is ``request.url.path``, without building the URL."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from reference_proxy.routes.shared import url_path

PATHS = ["/v1/chat/completions", "/v1/messages/", "/a b/ü", "/x%3Fy", "/what?not", "/a#b", "/back\\slash", "//double",
         "/v1/chat/completions;params", "/"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("host", [b"proxy:8080", b"[::1]:1", b"", None])
def test_the_path_is_the_urls_path(path: str, host: bytes | None) -> None:
    headers = [] if host is None else [(b"host", host)]
    scope = {"type": "http", "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"a=1", "headers": headers, "server": ("127.0.0.1", 9)}
    assert url_path(scope) == Request(scope).url.path
