"""The shared model every package reads, with no I/O: scenarios and their loading, the
exception tree, exchange and run records, nonces, the requests the harness sends as a client,
the wire dialects and client profiles, and the replay planners that say what a backend sends."""

__all__ = ["client_request", "dialects", "errors", "eventstream", "exchange", "frames", "nonce", "records", "redact",
           "replay", "retry", "scenario"]
