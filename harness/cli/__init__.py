"""The ``toolcall-conformance`` command (entry point ``main.run_main``) and its
sub-commands" own modules (``importing``, ``fuzzing``, ``recording``)."""

__all__ = ["main"]
