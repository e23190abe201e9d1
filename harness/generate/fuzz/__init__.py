"""Generated cases: hypothesis writes backend answers, the proxy plays them, the rules
judge them by what the generator put in, and a failure is shrunk to a scenario file."""

__all__ = ["case", "choices", "strategies", "yaml_out"]
