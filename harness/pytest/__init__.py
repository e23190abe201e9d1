"""The pytest plugin (entry point ``plugin``): the run"s state (``session``), its hooks
(``hooks``), the scenario items (``items``), generated-case items (``fuzz_items``), the files
a run writes (``outputs``) and the replay command a failure prints (``reproduce``)."""

__all__ = ["plugin"]
