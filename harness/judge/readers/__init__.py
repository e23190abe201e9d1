"""Readers of what the proxy answered: strict SSE (``sse``), each dialect"s events and
the answer a client assembles from them (``assemble``, ``anthropic_events``, ``responses_events``),
the official SDKs" own reading (``sdk_compat``), one reader per dialect over an exchange
(``reading``), XML calls for XML-reading clients (``xml_calls``), and the transcript a
failure shows (``transcript``)."""

__all__ = ["anthropic_events", "assemble", "kiro_events", "ollama_events", "reading", "responses_events", "sdk_compat", "sse", "transcript", "xml_calls"]
