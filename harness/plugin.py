"""pytest plugin entry point (filled in by the harness)."""
