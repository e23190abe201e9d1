"""The official SDK clients the tests build, over one TLS context per process.

An ``openai.OpenAI`` or ``anthropic.Anthropic`` built without ``http_client`` makes its own HTTP client, which
loads the CA bundle into a new SSL context: about 40 ms of CPU per client, most of what a test that builds one
per case spends, although every server in the tests is plain HTTP on loopback. Here the SDK's own default HTTP
client (``DefaultHttpxClient``: the SDK's time-outs, connection limits and redirects) is built with one shared
context instead; nothing else about the client changes.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import anthropic
import httpx2
import openai


@functools.cache
def tls() -> ssl.SSLContext:
    """The context the SDK's HTTP library would build by default (``verify=True``), built once."""
    return httpx2.create_ssl_context()


def openai_sdk(**kwargs: Any) -> openai.OpenAI:
    """``openai.OpenAI(**kwargs)`` on the SDK's default HTTP client with the shared TLS context."""
    kwargs.setdefault("http_client", openai.DefaultHttpxClient(verify=tls()))
    return openai.OpenAI(**kwargs)


def anthropic_sdk(**kwargs: Any) -> anthropic.Anthropic:
    """``anthropic.Anthropic(**kwargs)`` on the SDK's default HTTP client with the shared TLS context."""
    kwargs.setdefault("http_client", anthropic.DefaultHttpxClient(verify=tls()))
    return anthropic.Anthropic(**kwargs)
