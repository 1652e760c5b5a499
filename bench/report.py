#!/usr/bin/python3
"""Compares kiln-bench's records (bench/results/latest.json) with its peers'
(bench/results/peers.json, written by bench/run_peers.sh): prints the ratio table (kiln's
median time over each peer's, per case and thread count; < 1 means kiln is faster), writes
bench/RESULTS.md (its generated section; earlier hand-written sections are kept below) and
bench/results/ratios.png (log-scale bar chart; needs python3-matplotlib, skipped otherwise).
Case names match case-insensitively; unmatched names are printed.
Usage: report.py [--kiln FILE] [--peers FILE] [--md FILE] [--png FILE] [--no-write]"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
# Cases kiln registers as pending, with the issue that brings them.
PENDING = [("comptime", "Basic grad cos", "#8 (autodiff)")]
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


# kiln's metric compared with the peers' times: the steady-state call, and for comptime the
# total of lower + compile (against torch.jit.script + its optimizing calls).
COMPARED = {"call", "time"}
COMPARED_COMPTIME = {"total"}


def is_kiln(rec):
    if not str(rec.get("impl", "kiln")).lower().startswith("kiln"):
        return False
    m = norm(rec.get("metric", "call"))
    return m in (COMPARED_COMPTIME if norm(rec.get("suite")) == "comptime" else COMPARED)


def key(rec, case=None):
    return (norm(rec.get("suite", "")), norm(case if case is not None else rec.get("case", "")),
            int(rec.get("threads", 1) or 1))


def match(kiln, peers):
    """Rows (kiln record, peer record, ratio) and the unmatched names on each side."""
    by_key = {}
    for p in peers:
        by_key.setdefault(key(p), []).append(p)
    rows, used, unmatched_kiln = [], set(), []
    for k in kiln:
        cands = by_key.get(key(k))
        if not cands:  # "step f32[10,10] eager" -> "step f32[10,10]"
            stripped = re.sub(r"\s*[,(]?\s*(eager|compiled)\)?\s*$", "", norm(k.get("case", "")))
            cands = by_key.get(key(k, stripped))
        if not cands:
            unmatched_kiln.append(k)
            continue
        for p in cands:
            used.add(id(p))
            ks, ps = seconds(k), seconds(p)
            rows.append((k, p, ks / ps if ks and ps else None))
    matched = {key(p)[:2] for p in peers if id(p) in used}
    unmatched_peers = [p for p in peers if key(p)[:2] not in matched]
    return rows, unmatched_kiln, unmatched_peers


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


def versions():
    out = [f"Python {platform.python_version()}"]
    for mod in ("numpy", "torch"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except Exception:
            pass
    try:
        pj = json.load(open(os.path.join(HERE, "node_modules/onnxruntime-node/package.json")))
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
        out.append(f"onnxruntime-node {pj['version']} (node {node.strip()}, CPU)")
    except Exception:
        pass
    return ", ".join(out)


def table(rows):
    head = ["suite", "case", "threads", "kiln", "kiln median", "peer", "peer median",
            "kiln / peer"]
    body = []
    for k, p, r in sorted(rows, key=lambda x: (x[0].get("suite", ""), x[0].get("case", ""),
                                                x[0].get("threads", 1), x[0].get("impl", ""),
                                                x[1].get("impl", ""))):
        body.append([k.get("suite", ""), k.get("case", ""), str(k.get("threads", 1)),
                     k.get("impl", "kiln"), fmt_time(seconds(k)), p.get("impl", ""),
                     fmt_time(seconds(p)), "-" if r is None else f"{r:.3g}"])
    return head, body


def print_table(head, body):
    w = [max(len(str(r[i])) for r in [head] + body) for i in range(len(head))]
    for r in [head] + body:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)))


def chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing (make deps: python3-matplotlib); no chart",
              file=sys.stderr)
        return False
    rows = [x for x in rows if x[2]]
    if not rows:
        return False
    labels = [f"{k['suite']} {k['case']} ({k.get('impl', 'kiln')} / {p['impl']}, "
              f"{k.get('threads', 1)}t)" for k, p, _ in rows]
    ratios = [r for _, _, r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(rows) + 1.5))
    colors = ["tab:green" if r < 1 else "tab:red" for r in ratios]
    ax.barh(range(len(rows)), ratios, color=colors, left=0)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("kiln median time / peer median time (log; < 1: kiln faster)")
    ax.set_title("kiln vs peers, same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def markdown(rows, kiln, unmatched_kiln, unmatched_peers, missing, commands, png):
    today = datetime.date.today().isoformat()
    L = [BEGIN, f"## {today}, kiln and its peers (generated by bench/report.py)", "",
         f"Machine: {machine()}.", f"Peers: {versions()}.", "",
         "Commands: `make bench` (`build/bench/kiln-bench` -> `bench/results/latest.json`, "
         "`bench/run_peers.sh` -> `bench/results/peers.json`, `bench/report.py`). Peer runs:",
         ""]
    L += [f"    {c}" for c in commands] or ["    (none)"]
    L += ["", "Medians over repetitions after warm-up (fast cases many, big ones few); the "
          "ratio is kiln's median time over the peer's, per case and thread count (< 1: kiln "
          "is faster).", ""]
    if png:
        L += [f"![kiln / peer ratios]({png})", ""]
    head, body = table(rows)
    L += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    L += ["| " + " | ".join(r) + " |" for r in body]
    if unmatched_kiln:
        L += ["", "kiln cases without a peer:", ""]
        L += [f"- {k.get('suite')} {k.get('case')} ({k.get('impl', 'kiln')}, "
              f"{k.get('threads', 1)} threads): {fmt_time(seconds(k))}" for k in unmatched_kiln]
    if unmatched_peers:
        names = sorted({f"{p.get('suite')} {p.get('case')} ({p.get('impl')})"
                        for p in unmatched_peers})
        L += ["", "Peer cases that kiln did not report in this run:", ""]
        L += [f"- {n}" for n in names]
    L += ["", "Pending cases:", ""]
    L += [f"- {s} \"{c}\": comes with issue {i}" for s, c, i in PENDING]
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
    peers, meta = load(a.peers)
    if not kiln:
        print(f"report: no kiln records in {a.kiln} (run build/bench/kiln-bench first)",
              file=sys.stderr)
    rows, uk, up = match(kiln, peers)
    head, body = table(rows)
    print_table(head, body)
    if uk:
        print("\nkiln cases without a peer: " +
              "; ".join(sorted({f"{k.get('suite')} {k.get('case')}" for k in uk})))
    if up:
        print("peer cases without kiln: " +
              "; ".join(sorted({f"{p.get('suite')} {p.get('case')}" for p in up})))
    for m in meta.get("missing", []):
        print(f"missing peer: {m}")
    for s, c, i in PENDING:
        print(f"pending: {s} \"{c}\" ({i})")
    if a.no_write:
        return 0
    png = None
    if chart(rows, a.png):
        png = os.path.relpath(a.png, os.path.dirname(os.path.abspath(a.md)))
        print(f"report: wrote {a.png}")
    write_md(a.md, markdown(rows, kiln, uk, up, meta.get("missing", []),
                            meta.get("commands", []), png))
    print(f"report: wrote {a.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
