"""Ingest + failure mining at scale: flywheel (DuckDB SQL) against a straightforward pandas version.

1. Generates `--rows` SIMULATED log rows as Parquet (`_mining_data.py`): a few tens of thousands
   of realistic records from the demo traffic generator (`flywheel.world.traffic`, real tracebacks
   and tool-call conversations) tiled to the requested size with fresh ids and timestamps spread
   over 30 days, each row then made distinct (`--tiled` keeps the exact repeats).
2. In a fresh subprocess (so its peak RSS is its own): `flywheel.logs.ingest` of the whole folder into a
   DuckDB file, one call as the `task_logs` asset makes for a day (until 2026-12-07 one process per 1M-row
   file: each paid its own start and its last batch's redaction alone); then, in others,
   `flywheel.mining.mine` (pass rates, taxonomy, signatures, difficulty history, decontamination,
   near-duplicates, task pool), DuckDB at 2 threads and a 1 GB memory limit.
3. In another subprocess: the same mining in pandas (batched `json.loads`, the taxonomy's Python
   spec per failing row, `groupby`, set-based decontamination, datasketch MinHashLSH), reading
   the same Parquet file.
4. The floor for ingest on the same files (`_floors.py`, as in bench_ingest.py): DuckDB copying
   them Parquet -> Parquet with nothing else, JSON validation alone, the redaction prefilter alone,
   and all of ingest's checks in one pass that writes nothing.
5. Asserts both agree on attempts/passes per (task, model) and on taxonomy counts per
   (domain, model, failure type), prints rows/s and the ratios; the last line is one JSON object.

Side by side on a shared machine: the copy floor is timed just before and just after ingest, and
flywheel's mining just before and just after pandas'; each ratio uses the mean of the two that
bracket what they are compared with (both samples and the load average of each step are printed).

    nice .venv/bin/python benchmarks/bench_mining.py [--rows 5000000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _floors import TEXT_COLS, checks_floor_s, connection, copy_floor_s, parquet_relation, prefilter_sql  # noqa: E402
from _mining_data import data_shape, generate_parquet, parquet_rows, shape_name  # noqa: E402


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


def _cpu_s() -> float:
    """CPU seconds of this process, all threads: on a shared box, wall time depends on the neighbours."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ------------------------------------------------------------------------------------------------
# flywheel worker
# ------------------------------------------------------------------------------------------------


def _connect(warehouse: Path, threads: int):
    import duckdb

    from flywheel.warehouse import configure
    from flywheel.warehouse.tables import ensure_tables

    con = configure(duckdb.connect(str(warehouse)))
    con.execute(f"SET threads = {threads}")
    con.execute("SET memory_limit = '1GB'")
    ensure_tables(con)
    return con


def worker_ingest(parquet: Path, warehouse: Path, out: Path, threads: int) -> None:
    """flywheel ingest (I1's `flywheel.logs.ingest`) in its own process: its own peak RSS."""
    from flywheel.logs.ingest import ingest

    con = _connect(warehouse, threads)
    t0, c0 = time.perf_counter(), _cpu_s()
    rep = ingest(parquet, con)
    out.write_text(json.dumps({
        "ingested": rep.ingested, "quarantined": rep.quarantined, "duplicates": rep.duplicates,
        "lines_read": rep.lines_read, "ingest_s": time.perf_counter() - t0, "ingest_cpu_s": _cpu_s() - c0,
        "ingest_peak_rss_mib": _peak_rss_mib(), "prefilter_hits": rep.prefilter_hits,
        "redact_s": rep.redact_seconds}))


def worker_flywheel(warehouse: Path, out: Path, threads: int) -> None:
    """flywheel mining over the ingested warehouse, in its own process."""
    from flywheel.mining import MiningConfig, mine

    con = _connect(warehouse, threads)
    t0, c0 = time.perf_counter(), _cpu_s()
    failures, pool = mine(con, MiningConfig())
    t_mine, c_mine = time.perf_counter() - t0, _cpu_s() - c0
    peak = _peak_rss_mib()
    stats = con.execute("SELECT task_id, model, attempts, passes FROM task_stats").fetchall()
    tax = con.execute("SELECT domain, model, failure_type, n FROM failure_summary").fetchall()
    sigs = con.execute("SELECT count(DISTINCT signature_hash) FROM failure_cases").fetchall()[0][0]
    out.write_text(json.dumps({
        "mine_s": t_mine, "mine_cpu_s": c_mine, "steps": failures.step_seconds,
        "steps_cpu": failures.step_cpu_seconds, "mine_failures_s": failures.seconds, "task_pool_s": pool.seconds,
        "mine_peak_rss_mib": peak, "pool": pool.pool, "decontaminated": pool.decontaminated,
        "near_duplicates": pool.near_duplicates, "signatures": sigs,
        "stats": [list(r) for r in stats], "taxonomy": [list(r) for r in tax],
    }))


def worker_copy(parquet: Path, out: Path, threads: int) -> None:
    """The copy floor alone (`_floors.copy_floor_s`), timed again on the other side of ingest."""
    with tempfile.TemporaryDirectory() as d:
        c0 = _cpu_s()
        s = copy_floor_s(parquet_relation(parquet / "part-*.parquet"), Path(d) / "copy.parquet", threads)
        out.write_text(json.dumps({"copy_s": s, "copy_cpu_s": _cpu_s() - c0}))


def worker_floor(parquet: Path, out: Path, threads: int) -> None:
    """What ingest cannot go below on this data and machine (`_floors`): DuckDB copying the files
    Parquet -> Parquet, and the two passes over every byte of text that ingest must make -- JSON
    validation and the redaction prefilter -- each timed alone, then all checks in one pass."""
    src = parquet_relation(parquet / "part-*.parquet")
    con = connection(threads)
    res = {}
    with tempfile.TemporaryDirectory() as d:
        c0 = _cpu_s()
        res["copy_s"] = copy_floor_s(src, Path(d) / "copy.parquet", threads)
        res["copy_cpu_s"] = _cpu_s() - c0
    t0 = time.perf_counter()
    con.execute(f"SELECT count(*) FROM {src} WHERE json_valid(messages) AND json_valid(outcome) "
                "AND json_valid(reference)").fetchall()
    res["json_valid_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.execute(f"SELECT count(*) FROM {src} WHERE {prefilter_sql(TEXT_COLS)}").fetchall()
    res["prefilter_s"] = time.perf_counter() - t0
    res["checks_s"] = checks_floor_s(src, threads, ("messages", "outcome", "reference"), TEXT_COLS)
    res["text_bytes"] = con.execute(f"SELECT sum(length(messages) + length(outcome) + coalesce(length(reference), 0) "
                                    f"+ coalesce(length(extra), 0)) FROM {src}").fetchall()[0][0]
    out.write_text(json.dumps(res))


# ------------------------------------------------------------------------------------------------
# pandas worker: the straightforward implementation of the same mining
# ------------------------------------------------------------------------------------------------


def worker_pandas(parquet: Path, out: Path) -> None:
    import pandas as pd
    from datasketch import MinHash, MinHashLSH

    from flywheel.mining import MiningConfig
    from flywheel.mining.pool import heldout_prompts
    from flywheel.mining.taxonomy import classify, judged_passed
    from flywheel.mining.textsim import ngrams

    cfg = MiningConfig()
    t_all, c_all = time.perf_counter(), _cpu_s()
    stats_parts, fail_parts, latest_parts = [], [], []
    t_read = 0.0
    batches = (b for f in sorted(parquet.glob("part-*.parquet"))
               for b in pq.ParquetFile(f).iter_batches(batch_size=250_000))
    for batch in batches:
        t0 = time.perf_counter()
        df = batch.to_pandas()
        t_read += time.perf_counter() - t0
        outcomes = df["outcome"].map(json.loads)
        df["passed"] = outcomes.map(judged_passed)
        judged = df[df["passed"].notna()].copy()
        judged["passed"] = judged["passed"].astype(bool)
        stats_parts.append(judged.groupby(["task_id", "domain", "model"])["passed"].agg(["size", "sum"]))
        fmask = df["passed"].eq(False)
        fails = df.loc[fmask, ["task_id", "domain", "model", "timestamp", "messages"]].copy()
        fo = outcomes[fmask]
        cls = [classify(d, o, json.loads(m)) for d, o, m in zip(fails["domain"], fo, fails["messages"], strict=True)]
        fails["failure_type"] = [c[0] for c in cls]
        fails["exception_type"] = [c[1] for c in cls]
        fails["signature"] = [c[2] for c in cls]
        fail_parts.append(fails.drop(columns=["messages"]))
        latest_parts.append(df.sort_values(["timestamp", "id"]).groupby("task_id").tail(1)[
            ["task_id", "timestamp", "id", "model", "messages", "reference"]])
    stats = pd.concat(stats_parts).groupby(level=[0, 1, 2]).sum().reset_index()
    stats.columns = ["task_id", "domain", "model", "attempts", "passes"]
    fails = pd.concat(fail_parts, ignore_index=True)
    taxonomy = fails.groupby(["domain", "model", "failure_type"]).size().reset_index(name="n")
    sigs = fails["signature"].dropna().nunique()
    # task pool for the model of the most recent record
    last_rows = pd.concat(latest_parts).sort_values(["timestamp", "id"])
    model = last_rows["model"].iloc[-1] if len(last_rows) else None
    cur = stats[(stats["model"] == model) & (stats["passes"] < stats["attempts"])].copy()
    latest = last_rows.groupby("task_id").tail(1).set_index("task_id")
    cur = cur[cur["task_id"].isin(latest.index)]

    def user_prompt(m: str) -> str | None:
        users = [x.get("content") for x in json.loads(m) if x.get("role") == "user"]
        return users[-1] if users else None

    def has_ref(domain: str, ref: str | None) -> bool:
        r = json.loads(ref) if ref else {}
        need = {"math": ("answer",), "code": ("entry_point", "test"), "agent": ("tools", "initial_state", "goal")}
        return domain in need and all(r.get(k) is not None for k in need[domain])

    cur["prompt"] = [user_prompt(latest.at[t, "messages"]) for t in cur["task_id"]]
    cur["has_ref"] = [has_ref(d, latest.at[t, "reference"]) for t, d in zip(cur["task_id"], cur["domain"], strict=True)]
    cur["reason"] = np.where((cur["passes"] > 0) & (cur["attempts"] >= cfg.min_attempts), "frontier",
                             np.where(cur["has_ref"], "failure_with_reference", None))
    cur = cur[cur["reason"].notna() & cur["prompt"].notna()]
    held = [ngrams(p, cfg.decontam_ngram) for _, _, p in heldout_prompts()]
    overlap = []
    for p in cur["prompt"]:
        g = ngrams(p, cfg.decontam_ngram)
        overlap.append(max((len(g & h) / len(g) for h in held), default=0.0) if g else 0.0)
    cur["overlap"] = overlap
    decontaminated = int((cur["overlap"] >= cfg.decontam_threshold).sum())
    cur = cur[cur["overlap"] < cfg.decontam_threshold].sort_values(["attempts", "task_id"], ascending=[False, True])
    # near-duplicates: greedy, most attempts first; a task similar to a kept one is dropped
    lsh = MinHashLSH(threshold=cfg.near_dup_threshold, num_perm=128)
    kept: dict[str, set[str]] = {}
    dropped = 0
    for t, p in zip(cur["task_id"], cur["prompt"], strict=True):
        sh = ngrams(p, cfg.near_dup_ngram)
        mh = MinHash(num_perm=128)
        mh.update_batch([s.encode() for s in sh])
        if any(len(sh & kept[o]) / len(sh | kept[o]) >= cfg.near_dup_threshold for o in lsh.query(mh)):
            dropped += 1
            continue
        kept[t] = sh
        lsh.insert(t, mh)
    keep = list(kept)
    pool = cur[cur["task_id"].isin(set(keep))]
    pool = pool.groupby("domain").head(cfg.max_pool_per_domain)
    # persist the results, as flywheel does in its warehouse tables
    fails.to_parquet(out.with_suffix(".failure_cases.parquet"))
    stats.to_parquet(out.with_suffix(".task_stats.parquet"))
    pool.drop(columns=["has_ref"]).to_parquet(out.with_suffix(".task_pool.parquet"))
    t_all, c_all = time.perf_counter() - t_all, _cpu_s() - c_all
    out.write_text(json.dumps({
        "mine_s": t_all, "mine_cpu_s": c_all, "read_s": t_read, "peak_rss_mib": _peak_rss_mib(), "pool": len(pool),
        "decontaminated": decontaminated, "near_duplicates": dropped, "signatures": int(sigs),
        "stats": stats[["task_id", "model", "attempts", "passes"]].values.tolist(),
        "taxonomy": taxonomy.values.tolist(),
    }, default=int))


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------


def _run_worker(args: list[str], env: dict[str, str]) -> None:
    subprocess.run([sys.executable, __file__, *args], check=True, env=env)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=None, help="keep files here (default: a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="reuse workdir/logs/*.parquet if they hold --rows rows")
    ap.add_argument("--tiled", action="store_true",
                    help="repeat the templates' texts exactly (the data before 2026-12-06; see _mining_data.py)")
    ap.add_argument("--worker", choices=["ingest", "flywheel", "pandas", "floor", "copy"], help=argparse.SUPPRESS)
    ap.add_argument("--parquet", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--warehouse", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker == "ingest":
        worker_ingest(a.parquet, a.warehouse, a.out, a.threads)
        return {}
    if a.worker == "flywheel":
        worker_flywheel(a.warehouse, a.out, a.threads)
        return {}
    if a.worker == "pandas":
        worker_pandas(a.parquet, a.out)
        return {}
    if a.worker == "floor":
        worker_floor(a.parquet, a.out, a.threads)
        return {}
    if a.worker == "copy":
        worker_copy(a.parquet, a.out, a.threads)
        return {}

    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench_mining_"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(a.threads), "POLARS_MAX_THREADS": str(a.threads)}
    try:
        parquet = work / "logs"
        t0 = time.perf_counter()
        shape = shape_name(a.tiled)
        if a.reuse and parquet.exists() and parquet_rows(parquet) == a.rows and data_shape(parquet) == shape:
            print(f"reusing {parquet} ({a.rows:,} rows)")
        else:
            generate_parquet(parquet, a.rows, a.seed, tiled=a.tiled)
            size = sum(f.stat().st_size for f in parquet.glob("*.parquet")) / 2**20
            print(f"generated {a.rows:,} rows ({size:.0f} MiB Parquet) in {time.perf_counter() - t0:.1f}s")
        shutil.rmtree(work / "warehouse_data", ignore_errors=True)
        wh = work / "warehouse.duckdb"
        wh.unlink(missing_ok=True)
        (work / "warehouse.duckdb.wal").unlink(missing_ok=True)
        # Timed side by side on a shared machine whose load swings: each measurement sits between two of
        # what it is compared with (copy floor, ingest, copy floor; flywheel mining, pandas, flywheel
        # mining) and is compared with their mean, so a load that drifts during the run cancels out.
        loads = {"start": os.getloadavg()[0]}
        _run_worker(["--worker", "copy", "--parquet", str(parquet), "--out", str(work / "copy.json"),
                     "--threads", str(a.threads)], env)
        copy_before = json.loads((work / "copy.json").read_text())
        # one ingest call over the folder, as a day's `task_logs` partition is ingested (see the module doc)
        _run_worker(["--worker", "ingest", "--parquet", str(parquet), "--warehouse", str(wh),
                     "--out", str(work / "ingest.json"), "--threads", str(a.threads)], env)
        ing = json.loads((work / "ingest.json").read_text())
        loads["ingest"] = os.getloadavg()[0]
        _run_worker(["--worker", "floor", "--parquet", str(parquet), "--out", str(work / "floor.json"),
                     "--threads", str(a.threads)], env)
        floor = json.loads((work / "floor.json").read_text())
        floor["copy_samples_s"] = [copy_before["copy_s"], floor["copy_s"]]
        floor["copy_s"] = (copy_before["copy_s"] + floor["copy_s"]) / 2
        floor["copy_cpu_s"] = (copy_before["copy_cpu_s"] + floor["copy_cpu_s"]) / 2
        runs = []
        for k, who in enumerate(("flywheel", "pandas", "flywheel")):
            name = f"fw{k}.json" if who == "flywheel" else "pd.json"
            _run_worker(["--worker", who, "--parquet" if who == "pandas" else "--warehouse",
                         str(parquet if who == "pandas" else wh), "--out", str(work / name),
                         *(["--threads", str(a.threads)] if who == "flywheel" else [])], env)
            loads[f"{who}{k}"] = os.getloadavg()[0]
            runs.append(json.loads((work / name).read_text()))
        fw_runs, pdr = (runs[0], runs[2]), runs[1]
        fw = {**ing, **fw_runs[1]}
        for key in ("mine_s", "mine_cpu_s"):
            fw[key + "_samples"] = [r[key] for r in fw_runs]
            fw[key] = sum(fw[key + "_samples"]) / 2
        fw["mine_peak_rss_mib"] = max(r["mine_peak_rss_mib"] for r in fw_runs)
        fw["peak_rss_mib"] = max(fw["ingest_peak_rss_mib"], fw["mine_peak_rss_mib"])
    finally:
        if a.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    # the two implementations must agree on what was mined
    def by_key(rows: list, k: int) -> dict:
        return {tuple(r[:k]): tuple(int(x) for x in r[k:]) for r in rows}

    assert fw["ingested"] + fw["quarantined"] + fw["duplicates"] == fw["lines_read"] == a.rows
    assert by_key(fw["stats"], 2) == by_key(pdr["stats"], 2), "pass rates differ between flywheel and pandas"
    assert by_key(fw["taxonomy"], 3) == by_key(pdr["taxonomy"], 3), "taxonomy counts differ"
    assert fw["signatures"] == pdr["signatures"], (fw["signatures"], pdr["signatures"])
    assert fw["decontaminated"] == pdr["decontaminated"], (fw["decontaminated"], pdr["decontaminated"])

    tax = defaultdict(int)
    for d, _m, t, n in fw["taxonomy"]:
        tax[(d, t)] += n
    ingest_rps = a.rows / fw["ingest_s"]
    speedup = pdr["mine_s"] / fw["mine_s"]
    print(f"{'':28}{'flywheel':>12}{'pandas':>12}{'ratio':>9}")
    print(f"{'mining seconds':28}{fw['mine_s']:12.2f}{pdr['mine_s']:12.2f}{speedup:8.1f}x   (flywheel before and "
          f"after pandas: {fw['mine_s_samples'][0]:.2f}, {fw['mine_s_samples'][1]:.2f} s)")
    print(f"{'mining CPU seconds':28}{fw['mine_cpu_s']:12.2f}{pdr['mine_cpu_s']:12.2f}"
          f"{pdr['mine_cpu_s'] / fw['mine_cpu_s']:8.1f}x")
    print(f"{'mining rows/s':28}{a.rows / fw['mine_s']:12,.0f}{a.rows / pdr['mine_s']:12,.0f}")
    print(f"{'  of which parquet decode s':28}{'':>12}{pdr['read_s']:12.2f}")
    print(f"{'peak RSS MiB (mining)':28}{fw['mine_peak_rss_mib']:12.0f}{pdr['peak_rss_mib']:12.0f}")
    print(f"{'peak RSS MiB (ingest)':28}{fw['ingest_peak_rss_mib']:12.0f}")
    print(f"{'task pool / decontam / dups':28}{fw['pool']:>5}/{fw['decontaminated']}/{fw['near_duplicates']:<4}"
          f"{pdr['pool']:>6}/{pdr['decontaminated']}/{pdr['near_duplicates']}")
    print(f"flywheel mining steps, wall s: {fw['steps']}, task_pool {fw['task_pool_s']:.2f}")
    print(f"flywheel mining steps, CPU s: {fw['steps_cpu']}")
    print(f"ingest: {a.rows:,} rows in {fw['ingest_s']:.2f}s ({fw['ingest_cpu_s']:.2f} CPU s) = {ingest_rps:,.0f} rows/s "
          f"({fw['quarantined']} quarantined, {fw['duplicates']} duplicates); the redaction prefilter flags "
          f"{fw['prefilter_hits'] / a.rows:.2%} of the rows, redaction takes {fw['redact_s'] / fw['ingest_s']:.1%} of ingest")
    copy_rps = a.rows / floor["copy_s"]
    print(f"ingest floor on this data ({floor['text_bytes'] / a.rows:,.0f} bytes of JSON text per row): DuckDB copying "
          f"the files Parquet -> Parquet alone {floor['copy_s']:.2f}s (mean of {floor['copy_samples_s'][0]:.2f} s before "
          f"and {floor['copy_samples_s'][1]:.2f} s after ingest) = {copy_rps:,.0f} rows/s "
          f"(ingest = {ingest_rps / copy_rps:.2f}x of it; in CPU-s {floor['copy_cpu_s']:.1f} vs {fw['ingest_cpu_s']:.1f} = "
          f"{floor['copy_cpu_s'] / fw['ingest_cpu_s']:.2f}x); JSON validation alone {floor['json_valid_s']:.2f}s, "
          f"redaction prefilter alone {floor['prefilter_s']:.2f}s")
    checks_rps = a.rows / floor["checks_s"]
    print(f"the checks alone in one pass, writing nothing (read every column, validate JSON, prefilter, hash ids): "
          f"{floor['checks_s']:.2f}s = {checks_rps:,.0f} rows/s; the 1,000,000 rows/s target would need "
          f"{a.rows / 1e6:.2f}s for all of ingest")
    print("load average (1 min) after each step: " + ", ".join(f"{k} {v:.1f}" for k, v in loads.items()))
    print(f"agreement: {len(fw['stats']):,} (task, model) pass rates and {len(fw['taxonomy'])} taxonomy cells identical")
    result = {
        "rows": a.rows, "rows_shape": shape, "threads": a.threads,
        "ingest_rows_per_s": round(ingest_rps), "ingest_s": round(fw["ingest_s"], 2),
        "copy_floor_rows_per_s": round(copy_rps), "ingest_vs_copy_floor": round(ingest_rps / copy_rps, 2),
        "ingest_vs_copy_floor_cpu": round(floor["copy_cpu_s"] / fw["ingest_cpu_s"], 2),
        "checks_floor_rows_per_s": round(checks_rps),
        "prefilter_hit_rate": round(fw["prefilter_hits"] / a.rows, 4),
        "redaction_s_share": round(fw["redact_s"] / fw["ingest_s"], 3),
        "json_bytes_per_row": round(floor["text_bytes"] / a.rows),
        "mining_s": round(fw["mine_s"], 2), "pandas_mining_s": round(pdr["mine_s"], 2),
        "mining_speedup_vs_pandas": round(speedup, 1),
        "mining_cpu_ratio_vs_pandas": round(pdr["mine_cpu_s"] / fw["mine_cpu_s"], 1),
        "ingest_cpu_s": round(fw["ingest_cpu_s"], 2), "mining_cpu_s": round(fw["mine_cpu_s"], 2),
        "pandas_mining_cpu_s": round(pdr["mine_cpu_s"], 2),
        "peak_rss_mib": round(fw["peak_rss_mib"]), "ingest_peak_rss_mib": round(fw["ingest_peak_rss_mib"]),
        "mining_peak_rss_mib": round(fw["mine_peak_rss_mib"]), "pandas_peak_rss_mib": round(pdr["peak_rss_mib"]),
        "failures": sum(tax.values()), "task_pool": fw["pool"], "decontaminated": fw["decontaminated"],
        "near_duplicates": fw["near_duplicates"],
        "copy_floor_samples_s": [round(x, 2) for x in floor["copy_samples_s"]],
        "mining_s_samples": [round(x, 2) for x in fw["mine_s_samples"]],
        "load_avg_1m": {k: round(v, 2) for k, v in loads.items()},
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
