"""A proxy that relays a stream error as the server sent it passes the case that plays it: vLLM's chat
stream generator writes its error chunk and then only `data: [DONE]` (vllm/entrypoints/openai/serving_chat.py,
`except Exception` in `chat_completion_stream_generator`), so text after the error is no server's, and
llm-toolcall-proxy, which passes a chunk without `choices` on unchanged, was failed for relaying the text
the mock alone had added after it."""

from __future__ import annotations

from support.mutant_rig import Rig, rig  # noqa: F401  (rig: the module's mock and reference proxy)
from support.relay import relay_app
from support.servers import ServeFn, servers  # noqa: F401

from harness.core.dialects.frames import ContentFrame, RawFrame
from harness.core.dialects.profiles import choose_profile
from harness.core.scenario.loading import load_library
from harness.run.runner import play
from harness.run.settings import RunSettings
from mock_backends.control import MockControl

CASE = next(s for s in load_library() if s.id == "faults-openai-upstream-error-chunk")


def _failed(proxy_url: str, mock_url: str) -> list[str]:
    profile, skip = choose_profile(CASE, None, frozenset())
    assert skip is None, skip
    with MockControl(mock_url) as mock:
        return play(CASE, settings=RunSettings(proxy_url=proxy_url, timeout=10.0), mock=mock,
                    profile=profile).failed_rules


def test_a_relay_passes_the_stream_error_case(servers: ServeFn, rig: Rig) -> None:  # noqa: F811
    relay = f"{servers(relay_app(f'{rig.mock_url}/v1')).url}/v1"
    assert _failed(relay, rig.mock_url) == []


def test_the_reference_proxy_still_passes_it(rig: Rig) -> None:  # noqa: F811
    assert _failed(rig.reference_url, rig.mock_url) == []


def test_no_text_follows_the_error() -> None:
    """What the case's server sends after its error chunk: nothing but the end of the stream."""
    frames = CASE.backend.frames
    error_at = next(i for i, f in enumerate(frames) if isinstance(f, RawFrame) and '"error"' in f.raw)
    assert not [f for f in frames[error_at + 1:] if isinstance(f, ContentFrame) and f.content], frames
