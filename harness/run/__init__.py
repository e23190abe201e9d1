"""The shells that play a run: one item over the proxy (``runner``, ``proxy_client``,
``settings``), the servers brought along (``embedded``, ``servers``, ``processes``), the health
of the proxy between scenarios (``health``), isolation rounds, the soak and the fuzzer, and the
one table of options every command shares (``options``)."""

__all__ = ["config", "embedded", "fuzz_pool", "fuzzing", "health", "isolation", "options", "processes", "program", "proxy_client",
           "recorder", "runner", "servers", "settings", "soak"]
