#!/usr/bin/env python3
"""Serve one of the test suite's proxies (a mutant, or a correct-but-different proxy) on a port.

    python3 scripts/serve_variant.py correct-but-different --port 8000 --upstream http://127.0.0.1:9100/v1
    python3 scripts/serve_variant.py --list

The proxies of ``tests/mutants`` are played in-process by the tests; served here, any command
that takes ``--proxy-url`` plays them too: a long ``toolcall-conformance fuzz --proxy-url
http://127.0.0.1:8000/v1 --mock-port 9100`` against a correct-but-different proxy (which must
show no failure, however many examples), or a ``run`` against a mutant (which must fail its
rules). The upstream is where the mock backend will listen: ``fuzz`` and ``run`` start it on
``--mock-port``. The line ``serving <id> at <url>`` is printed once the proxy listens; it runs
until interrupted (Ctrl-C or SIGTERM). Not part of the installed package.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness.run.servers import serve  # noqa: E402
from mutants import ALL  # noqa: E402
from mutants.base import Mutant  # noqa: E402

VARIANTS: dict[str, Mutant] = {mutant.id: mutant for mutant in ALL}


def describe(mutant: Mutant) -> str:
    translates = f"; calls its upstream in the {mutant.upstream} dialect" if mutant.upstream else ""
    return f"{mutant.id}: {mutant.breaks}{translates}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve one of the test suite's proxies on a port.")
    parser.add_argument("name", nargs="?", help="the proxy's id (see --list)")
    parser.add_argument("--upstream", default="http://127.0.0.1:9100/v1", help="the mock backend's base URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 for a free port (printed)")
    parser.add_argument("--list", action="store_true", help="list every proxy that can be served")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(describe(mutant) for mutant in VARIANTS.values()))
        return 0
    mutant = VARIANTS.get(args.name or "")
    if mutant is None:
        parser.error(f"unknown proxy {args.name!r}; --list shows the {len(VARIANTS)} there are")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with serve(mutant.app(args.upstream), args.host, args.port) as server:
        print(f"serving {describe(mutant)}", flush=True)
        print(f"serving {mutant.id} at {server.url}/v1 (upstream {args.upstream})", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
