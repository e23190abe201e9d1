"""The CPU one generated example costs where it is played, this tree against another, side by side.

    python benchmarks/fuzz_example_cpu.py --before PATH [--after PATH] [--rounds 2] [--formats hermes]
        [--examples 150] [--seed 7] [--http-control]
    python benchmarks/fuzz_example_cpu.py --quick    (a smoke run of this tree alone, 5 examples)

``PATH`` is another checkout of the project. Each tree, in turn and in a process of its own with
the tree first on ``PYTHONPATH``, does what one ``fuzz`` worker does, without the pool around it:
hypothesis draws the cases first (``--seed``, generate phase only, no database), then a mock
backend and the reference proxy are served in-process and every case is played and judged
(``fuzz_pool.judge``: the client, the mock's control calls, the rules, in the calling thread; the
mock and the proxy in their server threads; the mock armed as a worker arms it, in-process where
the tree can). The playing is timed after one case played to warm up, so start-up is left out.
Printed per run, as a Markdown table: CPU per example of the whole process and of the calling
thread (the rest is the servers'), the same per kind of case (not streamed; streamed and played
again without streaming; streamed with its events torn into writes of one or two bytes, the 1 ms
pause between writes), the CPU hypothesis took to draw a case (timed apart), the load average
(1-minute) before and after, and a digest of every case's broken rules: the same digest from both
trees is the same verdicts. Two trees whose strategies or modules differ may draw other cases for
the same seed (hypothesis also draws the constants of the project's modules); ``--http-control``
adds this tree arming its mock over the HTTP control API, on the same cases.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
KINDS = ("plain", "streamed", "torn")


def measure(formats: list[str], examples: int, seed_value: int, http_control: bool = False) -> dict[str, Any]:
    """Draw, then play and judge, in this process (the tree on ``sys.path``); ``http_control``:
    arm the mock over its HTTP control API even where the tree arms it in-process."""
    import dataclasses

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness.generate.fuzz.strategies import cases
    from harness.judge.readers.sdk_compat import read_anthropic_stream, read_stream
    from harness.run.embedded import EmbeddedServers
    from harness.run.fuzz_pool import judge
    from harness.run.settings import RunSettings

    read_stream(b"")  # the SDKs imported and their reading clients made before the timing
    read_anthropic_stream(b"")
    drawn: list[Any] = []

    @seed(seed_value)
    @settings(max_examples=examples, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(cases(formats))
    def draw(case: Any) -> None:
        drawn.append(dataclasses.replace(case, seed=seed_value))

    drawing = time.process_time()
    draw()
    drawing = time.process_time() - drawing
    cpu = dict.fromkeys(KINDS, 0.0)
    count = dict.fromkeys(KINDS, 0)
    verdicts: list[tuple[str, tuple[str, ...]]] = []
    servers = EmbeddedServers()
    with servers as urls:
        run = RunSettings(proxy_url=urls.proxy_urls["native"], features=urls.proxy_features)
        # As a fuzz worker arms its own mock (a checkout from before ``EmbeddedServers.control``
        # armed it over HTTP).
        control = None if http_control else getattr(servers, "control", None)
        with control() if control is not None else _http_control(urls.mock_url) as mock:
            judge(drawn[0], run, mock)
            process, thread, wall = time.process_time(), time.thread_time(), time.monotonic()
            for case in drawn:
                began = time.process_time()
                verdicts.append((repr(case), tuple(judge(case, run, mock).failed_rules)))
                kind = "torn" if case.write_bytes else "streamed" if case.stream else "plain"
                cpu[kind] += time.process_time() - began
                count[kind] += 1
            process, thread = time.process_time() - process, time.thread_time() - thread
            wall = time.monotonic() - wall
    return {"examples": len(drawn), "process": process, "thread": thread, "wall": wall, "drawing": drawing,
            "kinds": {k: [count[k], cpu[k]] for k in KINDS},
            "digest": hashlib.sha256(repr(verdicts).encode()).hexdigest()[:16],
            "broken": sum(1 for _, rules in verdicts if rules)}


def _http_control(url: str) -> Any:
    from mock_backends.control import MockControl

    return MockControl(url)


def run(tree: Path, formats: str, examples: int, seed_value: int, http_control: bool = False) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", "--formats", formats,
               "--examples", str(examples), "--seed", str(seed_value), *(["--http-control"] if http_control else [])]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: exit {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--after", type=Path, default=HERE, help="the checkout measured (default: this one)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--formats", default="hermes")
    parser.add_argument("--examples", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="this tree alone, 5 examples")
    parser.add_argument("--http-control", action="store_true",
                        help="also measure this tree arming the mock over HTTP (the same cases: compare the digests)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.formats.split(","), args.examples, args.seed, args.http_control)))
        return
    trees: list[tuple[str, Path, bool]] = [("after", args.after.resolve(), False)]
    if args.before:
        trees.append(("before", args.before.resolve(), False))
    if args.http_control:
        trees.append(("after, armed over HTTP", args.after.resolve(), True))
    rounds, examples = (1, 5) if args.quick else (args.rounds, args.examples)
    if args.quick:
        trees = [("after", HERE, False)]
    print(f"formats {args.formats}; {examples} examples; seed {args.seed}")
    print("| tree | CPU per example | calling thread | servers | " + " | ".join(KINDS)
          + " | wall | drawing per case | load average before → after | broken | verdict digest |")
    print("| --- " * (9 + len(KINDS)) + "|")
    for round_ in range(rounds):
        for label, tree, over_http in (trees if round_ % 2 == 0 else trees[::-1]):
            load = os.getloadavg()[0]
            r = run(tree, args.formats, examples, args.seed, over_http)
            n, process, thread, kinds = r["examples"], r["process"], r["thread"], r["kinds"]
            per_kind = " | ".join(f"{1000 * cpu / max(c, 1):.1f} ms ({c})" for c, cpu in kinds.values())
            print(f"| {label} | **{1000 * process / n:.1f} ms** | {1000 * thread / n:.1f} ms "
                  f"| {1000 * (process - thread) / n:.1f} ms | {per_kind} | {r['wall']:.1f} s "
                  f"| {1000 * r.get('drawing', 0.0) / n:.1f} ms "
                  f"| {load:.1f} → {os.getloadavg()[0]:.1f} | {r['broken']} | {r['digest']} |", flush=True)


if __name__ == "__main__":
    main()
