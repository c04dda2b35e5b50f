"""Ingest throughput on realistic logs against DuckDB copying the same files, and against an earlier revision.

The rows are bench_mining's (`_mining_data.py`: the demo traffic's tracebacks and tool-call
conversations, ~1,000 bytes of JSON text per row, each row distinct; `--data tiled` repeats the
templates' texts exactly, as before 2026-12-06), or `--data uniform` for the compact synthetic rows
of `flywheel.logs.synthetic` (~0.5% of them carry a secret). Each ingest runs in a fresh process (its
peak RSS is its own); with `--baseline REV` the same files are ingested by that revision's
`flywheel` (extracted with `git archive`) in the same run, so a regression shows up side by side.
Prints rows/s, `ingest_vs_copy_floor`, `prefilter_hit_rate` (here and on a day of raw demo traffic),
`redaction_s_share` and peak RSS; the last line is one JSON object. The copy floor is timed just
before and just after the ingests and compared by the mean of the two (a shared machine's load drifts).
Both sides are timed from an open connection: the ingest's warehouse is opened (its tables created, and
the imports a process's first Parquet write makes, ~0.35 s) before its clock starts, as the copy floor's
connection is (before 2026-12-07 the ingest's timing held them).

    python benchmarks/bench_ingest.py [--rows 1000000] [--data realistic|uniform] [--format parquet|jsonl]
                                      [--rows-per-file 1000000] [--baseline REV]

`--rows-per-file 25000` writes a day as many small files (one ingest call over them all, as the
`task_logs` asset makes): each file is then one batch, so what overlaps is one file's redaction and
encoding with the next file's validation.
    python benchmarks/bench_ingest.py --memory [--array-mib 200]

`--memory` instead ingests, each in a fresh process, a `.json` array of `--array-mib` MiB of these
records holding one 8 MiB record (a conversation ending in a tool's 8 MiB traceback output), the same array at half the size, the same array without its 8 MiB
record, the 8 MiB record alone among 20 small records (`.jsonl` and `.json` array, each beside the same
file without it: what the record costs where no batch hides it), and a gzip bomb (one line / array record decompressing to 120 MiB between two good ones,
`.jsonl.gz` and `.json.gz`); it prints each one's extra peak RSS over the process after a warm-up
ingest, what the file's size costs (the large array over the half-size one) and what its largest
record costs (the array over the same array without it), each against 2x that record, the batches'
working set that any file of this size costs (the array without the record: bounded by
`jsonl_chunk_bytes` and the batch size, not by the file), the bombs' extra against 2x the line cap
that skips the bomb unheld, and conservation (records read = ingested + quarantined + duplicates).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _peak_rss_mib() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a worker
    started by a driver that once held more would report the driver's peak as its own."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _usage() -> tuple[float, float]:
    """(CPU seconds of this process, all threads; peak RSS MiB)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, _peak_rss_mib()


def worker(code: str, src: str, warehouse: str, out: str, reingest: bool) -> None:
    """One ingest of `src` with the `flywheel` found in folder `code` (today's or a baseline's)."""
    sys.path.insert(0, code)
    from flywheel.logs.ingest import ingest
    from flywheel.warehouse import connect

    assert Path(sys.modules["flywheel"].__file__).is_relative_to(code), sys.modules["flywheel"].__file__
    con = connect(warehouse)  # opened before the clock starts, as the copy floor's connection is (its tables,
    t0, c0 = time.perf_counter(), _usage()[0]  # the imports a first Parquet write makes: ~0.35 s once a process)
    rep = ingest(src, con)
    secs, cpu = time.perf_counter() - t0, _usage()[0] - c0
    res = {"seconds": secs, "cpu_s": cpu, "peak_rss_mib": _usage()[1], "report": rep.to_dict()}
    if reingest:  # idempotent re-ingest: everything is a duplicate
        t0 = time.perf_counter()
        ingest(src, con)
        res["reingest_s"] = time.perf_counter() - t0
    con.close()
    Path(out).write_text(json.dumps(res))


def run_ingest(code: Path, src: Path, work: Path, name: str, reingest: bool = False) -> dict:
    out = work / f"{name}.json"
    subprocess.run([sys.executable, __file__, "--worker", str(code), str(src), str(work / f"{name}.duckdb"),
                    str(out), "1" if reingest else ""], check=True, cwd=work)
    return json.loads(out.read_text())


def baseline_tree(rev: str, into: Path) -> Path:
    """`flywheel/` as of git revision `rev`, extracted under `into`."""
    tar = into / "baseline.tar"
    got = subprocess.run(["git", "archive", "--format=tar", "-o", str(tar), rev, "flywheel"], cwd=ROOT,
                         capture_output=True)
    if got.returncode != 0:
        raise SystemExit(f"--baseline {rev}: {got.stderr.decode().strip()}")
    with tarfile.open(tar) as t:
        t.extractall(into / "baseline", filter="data")
    return into / "baseline"


def generate(data: str, fmt: str, folder: Path, rows: int, seed: int, threads: int, rows_per_file: int) -> Path:
    """The logs to ingest (in this child process: the driver's memory stays small)."""
    sys.path.insert(0, str(ROOT))
    from _floors import TEXT_COLS, connection
    from _mining_data import generate_parquet

    from flywheel.logs.synthetic import generate_parquet_logs

    if data in ("realistic", "tiled"):
        generate_parquet(folder, rows, seed, tiled=data == "tiled", rows_per_file=rows_per_file,
                         chunk=min(500_000, rows_per_file))
    else:
        generate_parquet_logs(folder / "part-0000.parquet", rows, seed)
    if fmt == "jsonl":  # JSON columns nested, as a production logger writes them
        con = connection(threads)
        for f in sorted(folder.glob("*.parquet")):
            cols = con.sql(f"DESCRIBE SELECT * FROM read_parquet('{f}')").fetchall()
            sel = ", ".join(f"json({c}) AS {c}" if c in TEXT_COLS else
                            f"strftime({c}, '%Y-%m-%dT%H:%M:%S.%fZ') AS {c}" if c == "timestamp" else c
                            for c, *_ in cols)
            con.execute(f"COPY (SELECT {sel} FROM read_parquet('{f}')) TO '{f.with_suffix('.jsonl')}' (FORMAT json)")
            f.unlink()
    return folder


def floors(folder: Path, fmt: str, threads: int, checks: bool = True) -> dict:
    """DuckDB alone on the same files: copying them to Parquet, and (Parquet, `checks`) ingest's checks in one pass."""
    from _floors import checks_floor_s, connection, copy_floor_s, parquet_relation

    with tempfile.TemporaryDirectory() as d:
        c0 = _usage()[0]
        if fmt == "jsonl":
            con = connection(threads)
            t0 = time.perf_counter()
            con.execute(f"COPY (SELECT * FROM read_json('{folder}/*.jsonl', format = 'newline_delimited')) "
                        f"TO '{d}/copy.parquet' (FORMAT parquet, COMPRESSION snappy)")
            return {"copy_s": time.perf_counter() - t0, "copy_cpu_s": _usage()[0] - c0, "checks_s": None}
        src = parquet_relation(folder / "*.parquet")
        copy_s = copy_floor_s(src, Path(d) / "copy.parquet", threads)
        copy_cpu = _usage()[0] - c0
        return {"copy_s": copy_s, "copy_cpu_s": copy_cpu, "checks_s": checks_floor_s(src, threads) if checks else None}


def demo_traffic_hit_rate(records: int, seed: int) -> float:
    """Share of a day of raw demo traffic (`flywheel.world.traffic`, default config) the prefilter flags."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flywheel.logs.arrow_ops import PREFILTER, TEXT_COLS
    from flywheel.world.traffic import generate_records

    recs = list(generate_records(__import__("datetime").date(2026, 12, 1), records, seed))
    hit = None
    for c in TEXT_COLS:
        col = pa.array([json.dumps(r[c]) if c in r else None for r in recs], pa.string())
        m = pc.fill_null(pc.match_substring_regex(col, PREFILTER[c]), False)
        hit = m if hit is None else pc.or_(hit, m)
    return pc.sum(hit).as_py() / len(recs)


def _rss_mib(field: str) -> float:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def memory_worker(src: str, warehouse: str, out: str) -> None:
    """Ingest `src` after a warm-up ingest of one small record (imports, DuckDB, threads); the peak RSS
    above the warmed-up process is what the file itself cost."""
    from flywheel.logs.ingest import ingest

    warm = Path(out).with_suffix(".warm.jsonl")
    warm.write_text(Path(src).with_suffix(".first").read_text())
    ingest(warm, warehouse)
    base = _rss_mib("VmRSS")
    rep = ingest(src, warehouse).to_dict()
    Path(out).write_text(json.dumps({"extra_mib": _rss_mib("VmHWM") - base, "base_mib": base, "report": rep}))


def memory_files(folder: Path, array_mib: int, seed: int) -> dict[str, tuple[Path, float]]:
    """The files of `--memory`, each with its largest record held whole (MiB; 0 for a bomb, skipped unheld)."""
    import gzip

    sys.path.insert(0, str(ROOT))
    from _mining_data import make_templates

    t = make_templates(4000, seed).to_pylist()
    recs = [json.dumps({**{k: r[k] for k in ("id", "timestamp", "task_id", "domain", "model")},
                        **{k: json.loads(r[k]) for k in ("messages", "outcome", "reference", "extra")}})
            for r in t]
    folder.mkdir(parents=True, exist_ok=True)
    first = recs[0]
    # the large record is shaped as one would be: a tool's output, a traceback many times over (escaped
    # newlines and quotes), at the end of its conversation
    frame = ('Traceback (most recent call last):\n  File "solution.py", line 12, in <module>\n    print(solve("a\\b"))\n'
             "ValueError: invalid literal for int() with base 10: 'x'\n")
    head = json.loads(recs[1])
    tool = {"role": "tool", "content": frame * ((8 << 20) // (len(frame) + 8))}
    big = json.dumps({**head, "id": "large-1", "messages": [*head["messages"], tool]})

    def array(path: Path, mib: int, with_large: bool = True) -> Path:
        size, i = 0, 0
        with open(path, "w") as f:
            f.write("[")
            while size < mib << 20:
                r = json.loads(recs[i % len(recs)])
                r["id"] = f"m-{i}"
                text = json.dumps(r)
                f.write(("," if i else "") + text)
                if i == 1000 and with_large:
                    f.write("," + big)
                size += len(text) + 1
                i += 1
            f.write("]")
        return path

    def bomb(path: Path, as_array: bool) -> Path:
        last = json.dumps({**json.loads(recs[2]), "id": "after-bomb"})
        with gzip.open(path, "wb", compresslevel=9) as f:
            f.write((("[" + first + ",") if as_array else first + "\n").encode())
            f.write(json.dumps({**json.loads(recs[3]), "id": "bomb"})[:-1].encode() + b', "x": "')
            for _ in range(120):
                f.write(b"a" * 2**20)
            f.write(b'"}' + ((("," + last + "]") if as_array else ("\n" + last + "\n")).encode()))
        return path

    def alone(path: Path, with_large: bool, as_array: bool) -> Path:
        few = [json.dumps({**json.loads(recs[i]), "id": f"few-{i}"}) for i in range(20)]
        few[10:10] = [big] if with_large else []
        path.write_text("[" + ",".join(few) + "]" if as_array else "\n".join(few) + "\n")
        return path

    small = max(map(len, recs[:20])) / 2**20
    files = {"alone_jsonl": (alone(folder / "alone.jsonl", True, False), len(big) / 2**20),
             "alone_jsonl_without_it": (alone(folder / "alone_without.jsonl", False, False), small),
             "alone_array": (alone(folder / "alone.json", True, True), len(big) / 2**20),
             "alone_array_without_it": (alone(folder / "alone_without.json", False, True), small),
             "array_small": (array(folder / "small.json", max(1, array_mib // 2)), len(big) / 2**20),
             "array_large": (array(folder / "large.json", array_mib), len(big) / 2**20),
             "array_large_without_it": (array(folder / "without.json", array_mib, False), max(map(len, recs)) / 2**20),
             "bomb_jsonl_gz": (bomb(folder / "bomb.jsonl.gz", False), 0.0),
             "bomb_json_gz": (bomb(folder / "bomb.json.gz", True), 0.0)}
    for p, _ in files.values():
        p.with_suffix(".first").write_text(first + "\n")
    return files


def memory_main(array_mib: int, seed: int, repeats: int = 3) -> dict:
    from flywheel.logs.options import IngestOptions

    cap = IngestOptions().max_line_bytes / 2**20
    out: dict = {"array_mib": array_mib}
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        files = memory_files(work / "in", array_mib, seed)
        for name, (path, largest) in files.items():
            res = work / f"{name}.out.json"
            runs = []
            for k in range(repeats if name.startswith(("array", "alone")) else 1):  # a peak of 500 MiB moves by +-30 from run to run
                db = work / f"{name}-{k}.duckdb"
                subprocess.run([sys.executable, __file__, "--memory-worker", str(path), str(db), str(res)], check=True,
                               cwd=work)
                runs.append(json.loads(res.read_text()))
            got = sorted(runs, key=lambda g: g["extra_mib"])[len(runs) // 2]  # the median run
            r = got["report"]
            ok = r["lines_read"] == r["ingested"] + r["quarantined"] + r["duplicates"]
            out[name] = {"file_mib": round(path.stat().st_size / 2**20, 1), "largest_record_mib": round(largest, 3),
                         "extra_peak_rss_mib": round(got["extra_mib"], 1), "records_read": r["lines_read"],
                         "ingested": r["ingested"], "quarantined": r["quarantined"], "conserved": ok}
            print(f"{name:14} {out[name]['file_mib']:7.1f} MiB file: +{got['extra_mib']:.0f} MiB peak RSS over the "
                  f"warmed-up process ({got['base_mib']:.0f} MiB); read {r['lines_read']:,} = ingested {r['ingested']:,} "
                  f"+ quarantined {r['quarantined']} + duplicates {r['duplicates']} ({'conserved' if ok else 'NOT conserved'})")
    large = out["array_large"]["extra_peak_rss_mib"]
    grow = large - out["array_small"]["extra_peak_rss_mib"]
    record = large - out["array_large_without_it"]["extra_peak_rss_mib"]
    largest = out["array_large"]["largest_record_mib"]
    out["array_growth_mib"] = round(grow, 1)
    out["largest_record_extra_mib"] = round(record, 1)
    out["array_working_set_mib"] = out["array_large_without_it"]["extra_peak_rss_mib"]
    out["array_within_2x_largest_record"] = max(grow, record) <= 2 * largest
    print(f"{array_mib} MiB array vs {array_mib // 2} MiB: {grow:+.0f} MiB; its {largest:.0f} MiB record vs the same array "
          f"without it: {record:+.0f} MiB (2x that record: {2 * largest:.0f} MiB). What any file costs, the batches "
          f"in flight: +{out['array_working_set_mib']:.0f} MiB")
    for kind in ("jsonl", "array"):  # the 8 MiB record among 20 small ones: what it costs where nothing hides it
        lone = out[f"alone_{kind}"]["extra_peak_rss_mib"] - out[f"alone_{kind}_without_it"]["extra_peak_rss_mib"]
        out[f"lone_record_{kind}_extra_mib"] = round(lone, 1)
        out[f"lone_record_{kind}_within_2x"] = lone <= 2 * largest
    print(f"the {largest:.0f} MiB record among 20 small ones, over the same file without it: "
          f"+{out['lone_record_jsonl_extra_mib']:.0f} MiB as JSON lines, +{out['lone_record_array_extra_mib']:.0f} MiB "
          f"in a JSON array (2x that record: {2 * largest:.0f} MiB)")
    for b in ("bomb_jsonl_gz", "bomb_json_gz"):
        out[b]["within_2x_line_cap"] = out[b]["extra_peak_rss_mib"] <= 2 * cap
    print(f"gzip bombs (120 MiB line): +{out['bomb_jsonl_gz']['extra_peak_rss_mib']:.0f} / "
          f"+{out['bomb_json_gz']['extra_peak_rss_mib']:.0f} MiB (2x the {cap:.0f} MiB line cap: {2 * cap:.0f} MiB)")
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads of the floors (the target is for 2 cores)")
    ap.add_argument("--data", choices=["realistic", "tiled", "uniform"], default="realistic",
                    help="the rows (see above; tiled: realistic rows whose texts repeat exactly)")
    ap.add_argument("--format", choices=["parquet", "jsonl"], default="parquet", help="the input logs' format")
    ap.add_argument("--rows-per-file", type=int, default=1_000_000,
                    help="split the realistic rows into files of this many (a day logged as many small files)")
    ap.add_argument("--baseline", metavar="REV", help="also ingest the same files with this git revision's flywheel")
    ap.add_argument("--memory", action="store_true", help="memory of a large JSON array and gzip bombs (see above)")
    ap.add_argument("--array-mib", type=int, default=200, help="size of --memory's large array")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per array in --memory (median run)")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--memory-worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_worker:
        memory_worker(*args.memory_worker)
        return {}
    if args.memory:
        return memory_main(args.array_mib, args.seed, args.repeats)
    if args.worker:
        worker(*args.worker[:4], bool(args.worker[4]))
        return {}
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        base_code = baseline_tree(args.baseline, work) if args.baseline else None
        t0 = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            src = pool.apply(generate, (args.data, args.format, work / "logs", args.rows, args.seed, args.threads,
                                        args.rows_per_file))
        gen_s = time.perf_counter() - t0
        size_mib = sum(f.stat().st_size for f in src.iterdir()) / 2**20
        n_files = sum(1 for f in src.iterdir() if f.suffix in (".parquet", ".jsonl"))
        # side by side on a shared machine: the copy floor is timed just before and just after the
        # ingests, and compared by the mean of the two, so a load that drifts meanwhile cancels out
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            before = pool.apply(floors, (src, args.format, args.threads, False))
        now = run_ingest(ROOT, src, work, "now", reingest=True)
        base = run_ingest(base_code, src, work, "baseline") if base_code else None
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            floor = pool.apply(floors, (src, args.format, args.threads))
            demo = pool.apply(demo_traffic_hit_rate, (20_000, args.seed))
        samples = [before["copy_s"], floor["copy_s"]]
        floor["copy_s"] = sum(samples) / 2
        floor["copy_cpu_s"] = (before["copy_cpu_s"] + floor["copy_cpu_s"]) / 2
    rep = now["report"]
    rate, copy_rate = rep["lines_read"] / now["seconds"], args.rows / floor["copy_s"]
    hit_rate = rep["prefilter_hits"] / max(1, rep["ingested"])
    red_share = rep["redact_seconds"] / now["seconds"]
    print(f"generated {args.rows:,} {args.data} rows ({size_mib:.0f} MiB {args.format}) in {gen_s:.1f} s")
    print(f"ingest:    {rate:>10,.0f} rows/s  ({now['seconds']:.2f} s, {now['cpu_s']:.2f} CPU-s; ingested "
          f"{rep['ingested']:,}, quarantined {rep['quarantined']:,}, redactions {rep['redactions']:,}); "
          f"peak RSS {now['peak_rss_mib']:.0f} MiB")
    print(f"re-ingest: {rep['lines_read'] / now['reingest_s']:>10,.0f} rows/s  (all duplicates)")
    what = "Parquet -> Parquet" if args.format == "parquet" else "JSONL (read_json) -> Parquet"
    cpu_ratio = floor["copy_cpu_s"] / now["cpu_s"]
    print(f"floor:     {copy_rate:>10,.0f} rows/s  (DuckDB copying the files {what} alone, {floor['copy_s']:.2f} s = mean of "
          f"{samples[0]:.2f} s before and {samples[1]:.2f} s after the ingests, "
          f"{floor['copy_cpu_s']:.2f} CPU-s); ingest_vs_copy_floor {rate / copy_rate:.2f} wall, {cpu_ratio:.2f} in CPU-s "
          "(the fairer figure on a shared machine)")
    if floor["checks_s"]:
        print(f"checks:    {args.rows / floor['checks_s']:>10,.0f} rows/s  (ingest's checks alone in one DuckDB pass "
              f"writing nothing: read, validate JSON, prefilter, hash ids)")
    print(f"redaction: prefilter flags {hit_rate:.2%} of these rows ({demo:.2%} of a day of raw demo traffic); "
          f"{rep['redact_seconds']:.2f} s = {red_share:.1%} of ingest (wall time of the redaction work, most of it "
          "overlapped with validating the next batch)")
    out = {"rows": args.rows, "data": args.data, "format": args.format, "mib": round(size_mib),
           "files": n_files,
           "ingest_rows_per_s": round(rate), "ingest_s": round(now["seconds"], 2),
           "ingest_rows_per_cpu_s": round(rep["lines_read"] / now["cpu_s"]),
           "reingest_rows_per_s": round(rep["lines_read"] / now["reingest_s"]),
           "copy_floor_rows_per_s": round(copy_rate), "ingest_vs_copy_floor": round(rate / copy_rate, 2),
           "ingest_vs_copy_floor_cpu": round(cpu_ratio, 2),
           "checks_floor_rows_per_s": round(args.rows / floor["checks_s"]) if floor["checks_s"] else None,
           "prefilter_hit_rate": round(hit_rate, 4), "prefilter_hit_rate_demo_traffic": round(demo, 4),
           "redaction_s_share": round(red_share, 3), "redactions": rep["redactions"],
           "peak_rss_mib": round(now["peak_rss_mib"]), "copy_floor_samples_s": [round(x, 2) for x in samples],
           "load_avg_1m": round(os.getloadavg()[0], 2)}
    if base:
        b_rate = base["report"]["lines_read"] / base["seconds"]
        print(f"baseline {args.baseline}: {b_rate:>10,.0f} rows/s ({base['seconds']:.2f} s, {base['cpu_s']:.2f} CPU-s), "
              f"ingest_vs_copy_floor {b_rate / copy_rate:.2f}, peak RSS {base['peak_rss_mib']:.0f} MiB; "
              f"today = {rate / b_rate:.2f}x the baseline ({base['cpu_s'] / now['cpu_s']:.2f}x in CPU-s)")
        out["baseline"] = {"rev": args.baseline, "ingest_rows_per_s": round(b_rate), "ingest_s": round(base["seconds"], 2),
                           "ingest_vs_copy_floor": round(b_rate / copy_rate, 2),
                           "peak_rss_mib": round(base["peak_rss_mib"]), "speedup": round(rate / b_rate, 2),
                           "cpu_speedup": round(base["cpu_s"] / now["cpu_s"], 2)}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
