# SPDX-License-Identifier: Apache-2.0
"""Compares kiln-bench's records (bench/results/latest.json) with its peers'
(bench/results/peers.json, written by bench/run_peers.sh): prints, per case and thread
count, kiln against the best peer of that case and against JAX, then every pair (kiln's
median time over the peer's; < 1 means kiln is faster); writes bench/RESULTS.md (its
generated section; earlier hand-written sections are kept below) and
bench/results/ratios.png (log-scale chart of kiln / best peer and kiln / JAX; needs
matplotlib, which bench/.venv has). A peer whose result check failed is never the best
peer. Case names match case-insensitively; unmatched names are printed.
Usage: report.py [--kiln FILE] [--peers FILE] [--md FILE] [--png FILE] [--no-write]"""

import argparse
import datetime
import json
import os
import platform
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
# Cases the peers cannot run, said in the report.
PEERLESS = []

# Issue #7's speed targets. kind:
#   "faster": peer time / kiln time >= want (kiln at least `want` times faster);
#   "pct":    kiln's pct_bw record >= want (% of the measured bandwidth);
#   "first":  kiln's first_call / call <= want.
# kiln = (suite, case, impl, metric, threads); peer = (impl, threads), looked up among the
# peers' records and kiln's own (OpenBLAS called directly is an impl of kiln-bench).
TARGETS = [
    ("faster", "EMLX f32[10,10] compiled vs numpy", 15,
     ("emlx", "scalar f32[10,10]", "kiln", "call", 1), ("numpy", 1)),
    ("faster", "EMLX f32[10,10] compiled vs torch.jit.script", 35,
     ("emlx", "scalar f32[10,10]", "kiln", "call", 1), ("torch-script", 1)),
    ("faster", "EMLX f32[10,10] eager no slower than numpy", 1,
     ("emlx", "scalar f32[10,10]", "kiln-eager", "call", 1), ("numpy", 1)),
    ("faster", "exp(-x*x)*sin(x)+0.5x, 1e7 f32, compiled vs numpy", 4,
     ("elementwise", "expsin 1e7", "kiln", "call", 1), ("numpy", 1)),
    ("faster", "cos, 1e7 f32, compiled vs numpy", 2.5,
     ("elementwise", "cos 1e7", "kiln", "call", 1), ("numpy", 1)),
    ("pct", "sum all f32[4096,4096], % of 1-thread bandwidth", 85,
     ("reduction", "sum all 4096x4096", "kiln", "pct_bw", 1), None),
    ("pct", "sum rows f32[4096,4096], % of 1-thread bandwidth", 85,
     ("reduction", "sum rows 4096x4096", "kiln", "pct_bw", 1), None),
    ("pct", "sum cols f32[4096,4096], % of 1-thread bandwidth", 85,
     ("reduction", "sum cols 4096x4096", "kiln", "pct_bw", 1), None),
    ("faster", "EMLX matrix variant f32[10,10] vs numpy", 3,
     ("emlx", "matmul f32[10,10]", "kiln", "call", 1), ("numpy", 1)),
    ("faster", "GEMM f32 1024 within 5% of OpenBLAS, 1 thread", 0.95,
     ("gemm", "f32 1024", "kiln", "call", 1), ("openblas", 1)),
    ("faster", "GEMM f32 1024 within 5% of OpenBLAS, 2 threads", 0.95,
     ("gemm", "f32 1024", "kiln", "call", 2), ("openblas", 2)),
    ("faster", "VGG11 1x3x224x224 vs ONNX Runtime, 1 thread", 1,
     ("vgg", "VGG11 1x3x224x224", "kiln", "call", 1), ("ort", 1)),
    ("faster", "VGG11 1x3x224x224 vs ONNX Runtime, 2 threads", 1,
     ("vgg", "VGG11 1x3x224x224", "kiln", "call", 2), ("ort", 2)),
    ("faster", "VGG11 8x3x32x32 vs ONNX Runtime, 1 thread", 1,
     ("vgg", "VGG11 8x3x32x32", "kiln", "call", 1), ("ort", 1)),
    ("faster", "VGG11 8x3x32x32 vs ONNX Runtime, 2 threads", 1,
     ("vgg", "VGG11 8x3x32x32", "kiln", "call", 2), ("ort", 2)),
    ("faster", "compile \"2D sum\" vs torch.jit.script", 4,
     ("comptime", "2D sum", "kiln", "total", 1), ("torch-script", 1)),
    ("faster", "compile \"Basic cos\" vs torch.jit.script", 4,
     ("comptime", "Basic cos", "kiln", "total", 1), ("torch-script", 1)),
    ("faster", "compile \"Basic grad cos\" vs torch.jit.script", 4,
     ("comptime", "Basic grad cos", "kiln", "total", 1), ("torch-script", 1)),
] + [("faster", f"compile VGG{d} forward f32[16,3,224,224] vs torch.jit.script", 7,
      ("comptime", f"VGG{d}", "kiln", "total", 1), ("torch-script", 1))
     for d in (11, 13, 16, 19)] + [
    ("first", f"first call <= 2x steady state: {s} {c}", 2, (s, c, "kiln", "first_call", t), None)
    for s, c, t in [("emlx", "scalar f32[10,10]", 1), ("emlx", "matmul f32[10,10]", 1),
                    ("elementwise", "cos 1e7", 1), ("elementwise", "expsin 1e7", 1),
                    ("reduction", "sum all 4096x4096", 1), ("gemm", "f32 1024", 1),
                    ("vgg", "VGG11 1x3x224x224", 1), ("vgg", "VGG11 8x3x32x32", 1)]]
BEGIN, END = "<!-- report.py: begin -->", "<!-- report.py: end -->"


def load(path):
    """Records from a JSON array, an object with "records", or JSON lines."""
    if not os.path.exists(path):
        return [], {}
    text = open(path).read().strip()
    if not text:
        return [], {}
    try:
        data = json.loads(text)
    except ValueError:
        data = [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]
    if isinstance(data, dict):
        return list(data.get("records", [])), data
    return list(data), {}


def norm(s):
    return re.sub(r"\s+", " ", str(s).strip().lower())


def seconds(rec, field="median"):
    v = rec.get(field)
    if v is None or rec.get("unit") not in SCALE:
        return None
    return float(v) * SCALE[rec["unit"]]


def fmt_time(sec):
    if sec is None:
        return "-"
    for unit, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if sec >= s:
            return f"{sec / s:.3g} {unit}"
    return f"{sec / 1e-9:.3g} ns"


# kiln's metric -> the peers' metric it is compared with: the steady-state call with the
# peers' calls, comptime's lower + compile with the peers' compile times, the first call of
# a fresh executable with theirs, and time_to_load's whole process with theirs.
KILN_TO_PEER = {"call": "time", "total": "compile", "first_call": "first_call", "wall": "wall"}
# Peers that run op by op, the fair company of kiln's eager mode.
EAGER_PEERS = {"numpy", "torch-eager"}
# Records in peers.json that are kiln's own (the time_to_load process under hyperfine).
NOT_PEERS = {"kiln-hyperfine"}


def is_kiln(rec):
    if not str(rec.get("impl", "kiln")).lower().startswith("kiln"):
        return False
    m = norm(rec.get("metric", "call"))
    if norm(rec.get("suite")) == "comptime":
        return m == "total"
    return m in ("call", "first_call", "wall")


def peer_metric(rec):
    return KILN_TO_PEER.get(norm(rec.get("metric", "call")), "time")


def key(rec, case=None):
    return (norm(rec.get("suite", "")), norm(case if case is not None else rec.get("case", "")),
            int(rec.get("threads", 1) or 1))


def checks(peers):
    """(suite, case, threads, impl) -> the check record of that peer run."""
    return {key(p) + (norm(p.get("impl")),): p for p in peers if norm(p.get("metric")) == "check"}


def check_state(chk, p):
    """'ok', 'failed' or 'unchecked' for a peer's time record."""
    c = chk.get(key(p) + (norm(p.get("impl")),))
    if c is None:  # a check made on 1 thread covers the same program on more
        c = chk.get(key(p)[:2] + (1, norm(p.get("impl"))))
    if c is None:
        # time_to_load programs assert their value themselves (a wrong one fails the run)
        return "ok" if norm(p.get("metric")) == "wall" else "unchecked"
    return "ok" if c.get("ok") else "failed"


def match(kiln, peers):
    """Rows (kiln record, peer record, ratio, check state) and the unmatched names."""
    chk = checks(peers)
    by_key = {}
    for p in peers:
        if norm(p.get("impl")) in NOT_PEERS or norm(p.get("metric")) == "check":
            continue
        by_key.setdefault(key(p) + (norm(p.get("metric")),), []).append(p)
    rows, used, unmatched_kiln = [], set(), []
    for k in kiln:
        cands = by_key.get(key(k) + (peer_metric(k),))
        if not cands:
            if norm(k.get("metric")) in ("call", "total"):
                unmatched_kiln.append(k)
            continue
        for p in cands:
            used.add(id(p))
            ks, ps = seconds(k), seconds(p)
            rows.append((k, p, ks / ps if ks and ps else None, check_state(chk, p)))
    matched = {key(p)[:2] for p in peers if id(p) in used}
    unmatched_peers = [p for p in peers if key(p)[:2] not in matched
                       and norm(p.get("metric")) in ("time", "compile")]
    return rows, unmatched_kiln, unmatched_peers


def best_rows(rows):
    """Per kiln record: (kiln, best peer record or None, ratio, jax record or None, ratio,
    excluded peers). kiln-eager is measured against the eager peers only; peers whose
    check failed never count."""
    groups = {}
    for k, p, ratio, state in rows:
        groups.setdefault(id(k), (k, []))[1].append((p, ratio, state))
    out = []
    for k, cands in groups.values():
        eager = norm(k.get("impl")) == "kiln-eager"
        ok = [(p, r) for p, r, st in cands if st != "failed" and r is not None
              and (not eager or norm(p.get("impl")) in EAGER_PEERS)]
        bad = sorted({p.get("impl") for p, r, st in cands if st == "failed"})
        if not ok:
            continue
        best = min(ok, key=lambda x: seconds(x[0]))
        jax = next(((p, r) for p, r in ok if norm(p.get("impl")) == "jax"), (None, None))
        out.append((k, best[0], best[1], jax[0], jax[1], bad))
    order = {"comptime": 0, "time_to_load": 1, "emlx": 2, "elementwise": 3, "reduction": 4,
             "loop": 5, "gemm": 6, "vgg": 7}
    metric_order = {"total": 0, "call": 0, "wall": 0, "first_call": 1}
    out.sort(key=lambda x: (order.get(norm(x[0].get("suite")), 9), x[0].get("case", ""),
                            metric_order.get(norm(x[0].get("metric")), 2),
                            x[0].get("impl", ""), int(x[0].get("threads", 1))))
    return out


def machine():
    cpu, mem = platform.processor() or platform.machine(), ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                break
    except OSError:
        pass
    osname = platform.system()
    try:
        osname = "Debian " + open("/etc/debian_version").read().strip()
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {mem} memory, {osname}, Linux {platform.release()}"


def versions(meta):
    v = meta.get("versions", {})
    names = [("python", "Python"), ("jax", "jax"), ("jaxlib", "jaxlib"), ("torch", "torch"),
             ("onnxruntime", "onnxruntime"), ("onnx", "onnx"), ("numpy", "numpy")]
    out = [f"{label} {v[k]}" for k, label in names if k in v]
    return ", ".join(out) + " (bench/.venv, from bench/requirements.txt)" if out else "none"


def find(recs, suite, case, impl, metric, threads):
    for r in recs:
        if (norm(r.get("suite")) == norm(suite) and norm(r.get("case")) == norm(case)
                and norm(r.get("impl")) == norm(impl)
                and (metric is None or norm(r.get("metric")) == norm(metric))
                and int(r.get("threads", 1) or 1) == threads):
            return r
    return None


def peer_time(kiln_all, peers, suite, case, impl, threads):
    metric = "compile" if norm(suite) == "comptime" else "time"
    r = find(peers, suite, case, impl, metric, threads) or find(kiln_all, suite, case, impl,
                                                                "call", threads)
    return seconds(r) if r else None


def targets(kiln_all, peers):
    """Rows: target, wanted, measured, met (True/False/None), floor/limit note."""
    out = []
    for kind, label, want, (s, c, impl, metric, t), peer in TARGETS:
        k = find(kiln_all, s, c, impl, metric, t)
        pend = find(kiln_all, s, c, "kiln", "pending", t) or find(kiln_all, s, c, "kiln",
                                                                  "pending", 1)
        floor = find(kiln_all, s, c, "kiln", "floor", t)
        fl = f"floor {fmt_time(seconds(floor))} ({floor.get('note')})" if floor else ""
        if kind == "faster":
            kt = seconds(k) if k else None
            pt = peer_time(kiln_all, peers, s, c, peer[0], peer[1]) if peer else None
            need = (f">= {want:g}x faster than {peer[0]} ({peer[1]} thr)" if want > 1 else
                    f"no slower than {peer[0]} ({peer[1]} thr)" if want == 1 else
                    f"within {100 * (1 / want - 1):.0f}% of {peer[0]} ({peer[1]} thr)")
            if kt and pt:
                ratio = pt / kt
                got = f"{ratio:.3g}x (kiln {fmt_time(kt)}, {peer[0]} {fmt_time(pt)})"
                met = ratio >= want
                if not met:
                    goal = pt / want
                    fl = (f"needs <= {fmt_time(goal)}; " + fl) if fl else f"needs <= {fmt_time(goal)}"
                    if floor and seconds(floor) and seconds(floor) > pt:
                        # The peer itself beats the floor: it was computed from a rate
                        # (sgemm's) that the peer's own kernels exceed, so it bounds nothing.
                        fl += f"; {peer[0]} runs below this floor (its kernels beat that rate)"
                    elif floor and seconds(floor) and seconds(floor) > goal:
                        fl += "; the floor is above the goal: not reachable on this machine"
            else:
                got, met = "-", None
                fl = ("pending: " + pend.get("note", "")) if pend else \
                    ("kiln not measured" if not kt else f"{peer[0]} not measured")
        elif kind == "pct":
            need = f">= {want:g}%"
            if k:
                got, met = f"{float(k['median']):.1f}%", float(k["median"]) >= want
                bw = find(kiln_all, "machine", "read", "c", "bandwidth", 1)
                if bw:
                    fl = f"read bandwidth {float(bw['median']):.1f} GB/s; " + fl
            else:
                got, met, fl = "-", None, "kiln not measured"
        else:  # first call / steady state
            need = f"<= {want:g}x"
            steady = find(kiln_all, s, c, impl, "call", t)
            if k and steady and seconds(steady):
                ratio = seconds(k) / seconds(steady)
                got = f"{ratio:.2f}x ({fmt_time(seconds(k))} / {fmt_time(seconds(steady))})"
                met, fl = ratio <= want, ""
            else:
                got, met, fl = "-", None, "kiln not measured"
        out.append((label, need, got, met, fl))
    return out


def targets_md(rows):
    L = ["### Issue #7 targets", "",
         "Measured in this run; \"floor\" is the time no implementation can beat here (bytes "
         "over the measured bandwidth, or flops over the measured sgemm rate).", "",
         "| target | wanted | measured | met | floor / limit |", "|---|---|---|---|---|"]
    for label, need, got, met, fl in rows:
        m = "met" if met else "not met" if met is False else "not measured"
        L.append(f"| {label} | {need} | {got} | {m} | {fl} |")
    n_met = sum(1 for r in rows if r[3])
    n_unmet = sum(1 for r in rows if r[3] is False)
    L += ["", f"{n_met} met, {n_unmet} not met, {len(rows) - n_met - n_unmet} not measured.", ""]
    return L


def table(rows):
    head = ["suite", "case", "threads", "kiln", "metric", "kiln median", "peer", "peer median",
            "kiln / peer", "check"]
    body = []
    for k, p, r, st in sorted(rows, key=lambda x: (x[0].get("suite", ""), x[0].get("case", ""),
                                                   x[0].get("threads", 1), x[0].get("impl", ""),
                                                   x[0].get("metric", ""), x[1].get("impl", ""))):
        body.append([k.get("suite", ""), k.get("case", ""), str(k.get("threads", 1)),
                     k.get("impl", "kiln"), k.get("metric", ""), fmt_time(seconds(k)),
                     p.get("impl", ""), fmt_time(seconds(p)), "-" if r is None else f"{r:.3g}",
                     st])
    return head, body


def best_table(best):
    head = ["suite", "case", "threads", "kiln", "metric", "kiln median", "best peer",
            "best median", "kiln / best", "jax median", "kiln / jax", "left out (check failed)"]
    body = []
    for k, p, r, j, rj, bad in best:
        body.append([k.get("suite", ""), k.get("case", ""), str(k.get("threads", 1)),
                     k.get("impl", "kiln"), k.get("metric", ""), fmt_time(seconds(k)),
                     p.get("impl", ""), fmt_time(seconds(p)), f"{r:.3g}",
                     fmt_time(seconds(j)) if j else "-", f"{rj:.3g}" if rj else "-",
                     ", ".join(bad) or "-"])
    return head, body


def print_table(head, body):
    w = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
    for r in [head] + body:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))


def chart(best, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing (make bench-env); no chart", file=sys.stderr)
        return False
    if not best:
        return False
    labels = [f"{k['suite']} {k['case']} ({k.get('impl', 'kiln')} {k.get('metric')}, "
              f"{k.get('threads', 1)}t; best: {p['impl']})" for k, p, _, _, _, _ in best]
    ratios = [r for _, _, r, _, _, _ in best]
    jax = [rj for _, _, _, _, rj, _ in best]
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(best) + 1.8))
    ys = range(len(best))
    ax.barh(ys, ratios, color=["tab:green" if r < 1 else "tab:red" for r in ratios],
            label="kiln / best peer")
    jy = [y for y, rj in zip(ys, jax) if rj]
    ax.scatter([rj for rj in jax if rj], jy, marker="D", s=14, color="tab:blue", zorder=3,
               label="kiln / JAX")
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("kiln median time / peer median time (log; < 1: kiln faster)")
    ax.set_title("kiln against the best peer of each case, and against JAX (same run)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def markdown(rows, best, unmatched_kiln, unmatched_peers, meta, png, target_rows,
             kiln_pending=()):
    today = datetime.date.today().isoformat()
    L = [BEGIN, f"## {today}, kiln and its peers (generated by bench/report.py)", "",
         f"Machine: {machine()}.", f"Peers: {versions(meta)}.", "",
         "Commands: `make bench` (`build/bench/kiln-bench` -> `bench/results/latest.json` and "
         "`bench/results/check/`, `bench/run_peers.sh` -> `bench/results/peers.json`, "
         "`bench/report.py`). Peer runs:", ""]
    L += [f"    {c}" for c in meta.get("commands", [])] or ["    (none)"]
    L += ["", "Medians over repetitions after warm-up (fast cases many, big ones few); a ratio "
          "is kiln's median time over the peer's, per case and thread count (< 1: kiln is "
          "faster). Every peer computes from kiln-bench's own inputs and its result is "
          "compared with kiln's once per case (`check`); one that differs is never the best "
          "peer. Compile times (comptime) are on 1 thread: kiln's lower + compile against "
          "`jax.jit(f).lower(*args).compile()` with caches cleared, `torch.compile`'s first "
          "call minus a steady call with empty caches, and `torch.jit.script`.", "",
          "### kiln against the best peer of each case, and against JAX", "",
          "kiln (compiled) is compared with every peer; kiln-eager with the op-by-op peers "
          "(numpy, torch-eager) only.", ""]
    if png:
        L += [f"![kiln / best peer and kiln / JAX]({png})", ""]
    head, body = best_table(best)
    L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    L += ["| " + " | ".join(r) + " |" for r in body]
    L += [""]
    L += targets_md(target_rows)
    L += ["### Every pair", ""]
    head, body = table(rows)
    L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    L += ["| " + " | ".join(r) + " |" for r in body]
    failed = sorted({f"{p.get('suite')} {p.get('case')} ({p.get('impl')}, "
                     f"{p.get('threads')} thr): {p.get('note', '')}"
                     for p in meta.get("records", []) if norm(p.get("metric")) == "check"
                     and not p.get("ok")})
    if failed:
        L += ["", "Peer results that differ from kiln's (left out of the best peer):", ""]
        L += [f"- {f}" for f in failed]
    if unmatched_kiln:
        L += ["", "kiln cases without a peer:", ""]
        L += [f"- {k.get('suite')} {k.get('case')} ({k.get('impl', 'kiln')}, "
              f"{k.get('threads', 1)} threads): {fmt_time(seconds(k))}" for k in unmatched_kiln]
    if unmatched_peers:
        names = sorted({f"{p.get('suite')} {p.get('case')} ({p.get('impl')})"
                        for p in unmatched_peers})
        L += ["", "Peer cases that kiln did not report in this run:", ""]
        L += [f"- {n}" for n in names]
    pend = [r for r in kiln_pending if r]
    if pend:
        L += ["", "Pending cases (kiln could not run them yet):", ""]
        L += [f"- {r.get('suite')} \"{r.get('case')}\": {r.get('note', '')}" for r in pend]
    if PEERLESS:
        L += ["", "Cases without a peer by design:", ""]
        L += [f"- {s} \"{c}\": {why}" for s, c, why in PEERLESS]
    missing = meta.get("missing", [])
    if missing:
        L += ["", "Peers missing or cut short in this run:", ""] + [f"- {m}" for m in missing]
    L += ["", END]
    return "\n".join(L) + "\n"


def write_md(path, section):
    old = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + section.rstrip("\n") + old[old.index(END) + len(END):]
    else:  # insert after the title, keeping the earlier sections below
        lines = old.split("\n", 1)
        new = lines[0] + "\n\n" + section + ("\n" + lines[1].lstrip("\n") if len(lines) > 1 else "")
    open(path, "w").write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default=os.path.join(HERE, "results/latest.json"))
    ap.add_argument("--peers", default=os.path.join(HERE, "results/peers.json"))
    ap.add_argument("--md", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--png", default=os.path.join(HERE, "results/ratios.png"))
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    a = ap.parse_args()

    kiln_all, _ = load(a.kiln)
    kiln = [r for r in kiln_all if is_kiln(r)]
    kiln_pending = [r for r in kiln_all if norm(r.get("metric")) == "pending"]
    peers, meta = load(a.peers)
    meta.setdefault("records", peers)
    if not kiln:
        print(f"report: no kiln records in {a.kiln} (run build/bench/kiln-bench first)",
              file=sys.stderr)
    rows, uk, up = match(kiln, peers)
    best = best_rows(rows)
    print("kiln against the best peer of each case, and against JAX:")
    print_table(*best_table(best))
    if uk:
        print("\nkiln cases without a peer: " +
              "; ".join(sorted({f"{k.get('suite')} {k.get('case')}" for k in uk})))
    if up:
        print("peer cases without kiln: " +
              "; ".join(sorted({f"{p.get('suite')} {p.get('case')}" for p in up})))
    for p in peers:
        if norm(p.get("metric")) == "check" and not p.get("ok"):
            print(f"check failed: {p.get('suite')} {p.get('case')} ({p.get('impl')}, "
                  f"{p.get('threads')} thr): {p.get('note')}")
    for m in meta.get("missing", []):
        print(f"missing peer: {m}")
    for r in kiln_pending:
        print(f"pending: {r.get('suite')} \"{r.get('case')}\" ({r.get('note', '')})")
    target_rows = targets(kiln_all, peers)
    print("\nissue #7 targets:")
    print_table(["target", "wanted", "measured", "met", "floor / limit"],
                [[l, n, g, "met" if m else "NOT MET" if m is False else "-", f]
                 for l, n, g, m, f in target_rows])
    if a.no_write:
        return 0
    png = None
    if chart(best, a.png):
        png = os.path.relpath(a.png, os.path.dirname(os.path.abspath(a.md)))
        print(f"report: wrote {a.png}")
    write_md(a.md, markdown(rows, best, uk, up, meta, png, target_rows, kiln_pending))
    print(f"report: wrote {a.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
