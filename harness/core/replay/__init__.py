"""What a scenario's backend sends, planned without I/O: the events of an answer, how each
is cut into network writes, how a fault changes them, and which requests a fault rate
strikes.

Part of the shared core: the mock puts these plans on the socket, and the harness plans
with the same code where it must agree with the mock byte for byte (re-chunked variants,
a capture's Messages frames, the soak's view of which requests were faulted).
"""

__all__ = ["anthropic", "fault_rate", "kiro", "ollama", "openai", "planned", "responses", "servers", "wire"]
