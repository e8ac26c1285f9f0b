"""Per setting of an adaroll bench run directory: the bound, every mean, bamdp's gap and its
smallest paired difference to another allocator (95 % half-width)."""
import collections, csv, gzip, json, os, sys

import numpy as np

d = sys.argv[1]
rows = json.load(open(f"{d}/summary.json"))
rows = rows["rows"] if isinstance(rows, dict) else rows
ep = collections.defaultdict(dict)
for r in csv.DictReader(gzip.open(f"{d}/episodes.csv.gz", "rt") if os.path.exists(f"{d}/episodes.csv.gz") else open(f"{d}/episodes.csv")):
    ep[(r["setting"], r["allocator"])][int(r["episode"])] = float(r["utility"])
by = collections.defaultdict(dict)
for r in rows: by[r["setting"]][r["allocator"]] = r
for st, rs in by.items():
    b = rs.get("bamdp"); bound = b.get("bound")
    line = f"{st:45s} bound={bound if bound is None else round(bound,3)} "
    for a, r in rs.items(): line += f"{a[:6]}={r['mean_utility']:.3f} "
    if bound: line += f"gap={100*(bound-b['mean_utility'])/bound:.2f}% "
    worst = []
    for a in rs:
        if a in ("bamdp","uniform","oracle"): continue
        diff = np.array([ep[(st,"bamdp")][i]-ep[(st,a)][i] for i in sorted(ep[(st,a)])])
        m = diff.mean(); h = 1.96*diff.std(ddof=1)/np.sqrt(len(diff))
        worst.append((m, a, h))
    m,a,h = min(worst); line += f"min(bamdp-x)={m:+.3f}±{h:.3f}({a[:6]})"
    print(line)
