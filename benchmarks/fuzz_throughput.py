"""Generated examples a second, this tree against another, side by side in one sitting.

    python benchmarks/fuzz_throughput.py --before PATH [--after PATH] [--rounds 2] [--formats hermes]
        [--examples 300] [--all-formats-examples 20] [--one-at-a-time-examples 100] [--jobs N]
    python benchmarks/fuzz_throughput.py --quick    (a smoke run of this tree alone, 5 examples)

``PATH`` is another checkout of the project (``git worktree add /tmp/before <commit>``).
Each round runs ``toolcall-conformance fuzz`` from each tree in turn (so a load that comes
and goes on the host falls on both): one format (``--formats``, ``--examples`` each), every
format and native (``--all-formats-examples`` each), both side by side in the command's worker
processes, then the one format one example at a time (``--one-at-a-time-examples``, ``--jobs 1``).
Each run is its own process with the tree first on ``PYTHONPATH``, the same seed, no example database. Printed per run,
as a Markdown table: the examples a second the command reports (from its first draw to its
last verdict; start-up not included), the start-up it reports on a line of its own (a checkout
that does not print one shows "not reported"), the command's wall time with start-up, the CPU
its processes used (user + system, workers and start-up included) in all and per example, and
the load average (1-minute) before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
_SUMMARY = re.compile(r"fuzz: (\d+) example\(s\) in ([\d.]+) s \(([\d.]+) examples/s\)")
_START_UP = re.compile(r"fuzz: start-up ([\d.]+) s")


@dataclass(frozen=True)
class Sitting:
    tree: str
    what: str
    examples: int
    rate: float
    command: float
    wall: float
    cpu: float
    load: tuple[float, float]
    failures: str
    start_up: float | None  # as the command reports it (None: a checkout that does not)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(tree: Path, label: str, what: str, args: list[str]) -> Sitting:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory(prefix="fuzz-bench-") as out:
        command = [sys.executable, "-c", "from harness.cli.main import run_main; run_main()", "fuzz",
                   "--no-database", "--out", out, *args]
        load, cpu, began = os.getloadavg()[0], _cpu(), time.monotonic()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
        wall, used, after = time.monotonic() - began, _cpu() - cpu, os.getloadavg()[0]
    found = _SUMMARY.search(done.stdout)
    if found is None:
        raise SystemExit(f"{label}: no summary line (exit {done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    failures = "no failure" if "no failure" in found.string[found.end():found.end() + 40] else "FAILURES"
    start_up = _START_UP.search(done.stdout)
    return Sitting(label, what, int(found[1]), float(found[3]), float(found[2]), wall, used, (load, after), failures,
                   float(start_up[1]) if start_up is not None else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--after", type=Path, default=HERE, help="the checkout measured (default: this one)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--formats", default="hermes")
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--all-formats-examples", type=int, default=20, help="0: no run of every format")
    parser.add_argument("--one-at-a-time-examples", type=int, default=100,
                        help="examples of --formats played one at a time (--jobs 1); 0: no such run")
    parser.add_argument("--jobs", type=int, default=None, help="the command's --jobs (default: its own)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="this tree alone, 5 examples of one format")
    args = parser.parse_args()
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    common = ["--seed", str(args.seed)]
    plans = [(f"{args.formats}, {args.examples}", ["--formats", args.formats, "--examples", str(args.examples), *jobs])]
    if args.all_formats_examples:
        plans.append((f"every format, {args.all_formats_examples} each",
                      ["--examples", str(args.all_formats_examples), *jobs]))
    if args.one_at_a_time_examples:
        plans.append((f"{args.formats}, {args.one_at_a_time_examples}, one at a time",
                       ["--formats", args.formats, "--examples", str(args.one_at_a_time_examples), "--jobs", "1"]))
    trees = [("after", args.after.resolve())] + ([("before", args.before.resolve())] if args.before else [])
    rounds = args.rounds
    if args.quick:
        trees, rounds, plans = [("after", HERE)], 1, [(f"{args.formats}, 5", ["--formats", args.formats,
                                                                              "--examples", "5"])]
    print(f"cores: {os.cpu_count()}; jobs: {args.jobs or 'the command default'}; seed {args.seed}")
    print("| tree | run | examples | examples/s | command's time | start-up | wall with start-up | CPU (user+sys) "
          "| CPU per example (with start-up) | load average before → after | verdicts |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for _ in range(rounds):
        for what, plan in plans:
            for label, tree in (trees if _ % 2 == 0 else trees[::-1]):
                s = run(tree, label, what, [*plan, *common])
                start_up = f"{s.start_up:.1f} s" if s.start_up is not None else "not reported"
                print(f"| {s.tree} | {s.what} | {s.examples} | **{s.rate:.1f}** | {s.command:.1f} s | {start_up} "
                      f"| {s.wall:.1f} s | {s.cpu:.1f} s | {1000 * s.cpu / max(s.examples, 1):.0f} ms "
                      f"| {s.load[0]:.1f} → {s.load[1]:.1f} | {s.failures} |", flush=True)


if __name__ == "__main__":
    main()
