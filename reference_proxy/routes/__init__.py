"""The proxy's client routes, one module per client API (``chat``, ``messages``,
``responses``), over what they share (``shared``: the request context, the connection,
the upstream chosen for each client API, logging and error answers)."""

__all__ = ["chat", "messages", "responses", "shared"]
