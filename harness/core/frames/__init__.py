"""Where a stream is cut: re-chunked variants of a scenario (``rechunk``) and the
shrinking of a failing cut to the boundaries that matter (``shrink``)."""

__all__ = ["rechunk", "shrink"]
