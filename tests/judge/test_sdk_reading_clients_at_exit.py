"""The SDK clients the judge reads with are let go before the interpreter tears its modules down.

Left to the final teardown, an SDK client's ``__del__`` ran after ``httpx2``'s globals were
cleared, and every xdist worker of a full run ended by printing "Exception ignored in
SyncHttpxClientWrapper.__del__ ... 'NoneType' object has no attribute 'CLOSED'".
"""

from __future__ import annotations

import subprocess
import sys

# Registered before the judge reads anything, so it runs after the judge's own exit handler
# (handlers run last registered, first run): by then every reading client must be gone.
_SCRIPT = """
import atexit, gc, weakref
refs = []
atexit.register(lambda: print("alive:", sum(ref() is not None for ref in refs)))
from harness.judge.readers.sdk_compat import read_anthropic_stream, read_stream
read_stream(b"data: [DONE]\\n\\n")
read_anthropic_stream(b"")
refs.extend(weakref.ref(o) for o in gc.get_objects() if type(o).__name__ in ("OpenAI", "Anthropic"))
print("clients:", len(refs))
"""


def test_the_reading_clients_are_released_by_the_exit_handlers() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "clients: 2" in done.stdout
    assert "alive: 0" in done.stdout, done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr
