"""What recording costs a client: time to first content, direct to the mock and through the
recorder (``toolcall-conformance record``) and through the same server relaying without keeping
anything (the cost of the hop alone), and whether the stream stays incremental (each
frame reaches the client when the upstream sends it, not at the end).

    python benchmarks/record_overhead.py [--runs 40]    (--quick: a smoke run, seconds)

The mock sends 20 frames 20 ms apart; a recorder that buffered would deliver the first
content ~400 ms late. Prints the medians and the extra the recorder adds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from harness.core.scenario.loading import parse_scenario
from harness.run.recorder import Recorder, RecorderConfig
from harness.run.servers import serve
from mock_backends.app import create_app
from mock_backends.control import MockControl

FRAMES, GAP_MS = 20, 20.0
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def case() -> object:
    return parse_scenario({"id": "bench", "title": "bench", "family": "bench", "source": "benchmark",
                           "backend": {"dialect": "openai", "frames": [{"content": f"w{i} ", "delay_ms": GAP_MS}
                                                                        for i in range(FRAMES)]},
                           "client": {"request": REQUEST}, "expect": {"tool_calls": []}}, where="bench")


def one(client: httpx.Client, url: str) -> tuple[float, float]:
    """Seconds to the first content event and to the last one."""
    start = time.perf_counter()
    first = last = 0.0
    with client.stream("POST", f"{url}/v1/chat/completions", json=REQUEST) as answer:
        for line in answer.iter_lines():
            if '"content":"w' in line.replace(" ", ""):
                last = time.perf_counter() - start
                first = first or last
    return first, last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="3 runs: a smoke run")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as out, serve(create_app()) as mock, MockControl(mock.url) as control:
        control.arm(case())  # type: ignore[arg-type]
        recorder = Recorder(RecorderConfig(out=Path(out), upstream=f"{mock.url}/v1", mode="rewrite"),
                            notify=lambda _: None)
        # The same server and hop, keeping nothing: what the extra hop costs on its own.
        relay = Recorder(RecorderConfig(out=Path(out) / "relay", upstream=f"{mock.url}/v1", mode="none",
                                        replay_upstream=True), notify=lambda _: None)
        with serve(recorder.app) as rec, serve(relay.app) as hop, httpx.Client(timeout=30) as client:
            results: dict[str, list[tuple[float, float]]] = {"direct": [], "relayed": [], "recorded": []}
            order = [("direct", mock.url), ("relayed", hop.url), ("recorded", rec.url)]
            for n in range(runs):
                for name, url in order[n % 3:] + order[: n % 3]:  # each goes first as often: no order effect
                    results[name].append(one(client, url))
                    recorder.wait_settled()
    first = {k: statistics.median(f for f, _ in v) * 1000 for k, v in results.items()}
    spread = {k: statistics.median(last - f for f, last in v) * 1000 for k, v in results.items()}
    print(f"runs: {runs}, {FRAMES} frames {GAP_MS:g} ms apart")
    for name in results:
        print(f"  {name:9} first content {first[name]:7.2f} ms   first to last frame {spread[name]:7.1f} ms")
    print(f"  the hop adds {first['relayed'] - first['direct']:+.2f} ms to first content; recording adds "
          f"{first['recorded'] - first['relayed']:+.2f} ms more; frames still "
          f"{'spread' if spread['recorded'] > (FRAMES - 2) * GAP_MS else 'BUNCHED'} over the stream")


if __name__ == "__main__":
    main()
