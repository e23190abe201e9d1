"""What writes model answers: one writer per text format (``formats``), the coverage a
proxy"s claimed formats give (``coverage``), and the fuzzer"s strategies (``fuzz``)."""

__all__ = ["coverage", "formats", "fuzz"]
