"""Compare two result trees (folders of `sweep run` / `sweep tune` result directories) row by row.

    python scripts/compare_results.py BEFORE AFTER

For every result directory in BEFORE and every table in it (rows, layers, problems, a tune
directory's trials, references, held-out table and best_params.toml): the column names and their
order must be equal, and the rows, sorted on every compared column, must be equal as strings;
measured columns (``wall_s``, ``solver_s``, any ``*_s``, ``code_version``, trial timestamps, the
driver id, the per-layer ``wall_s`` inside a trial's ``layer_detail``) are left out. Each
manifest's ``config_hash`` must be equal too. Prints one line per table and ends with
"ALL IDENTICAL" (exit 0) or "DIFFERENCES FOUND" (exit 1). Used to show that a refactor changes no
result (the rows are the contract).
"""
import json, sys
from pathlib import Path
import pandas as pd

A, B = Path(sys.argv[1]), Path(sys.argv[2])
MEASURED = {"wall_s", "solver_s", "code_version", "datetime_start", "datetime_complete", "duration_s",
            "seconds", "driver"}
ok = True
for camp in sorted(p.name for p in A.iterdir() if p.is_dir()):
    for tab in sorted(p for p in (A / camp).iterdir()):
        name = tab.name
        if name in ("drivers", "manifest.json", "study.journal", "plots", "fragments.log", "designs",
                    "report.html") or name.startswith("."):
            continue   # (the catalog, the writer lock, .tmp, .foreign, .damaged, what `sweep report` writes)
        if name.endswith(".toml"):
            same = tab.read_text() == (B / camp / name).read_text()
            print(f"{camp}/{name}: {'identical' if same else 'DIFFERENT'}"); ok &= same; continue
        a = pd.read_parquet(tab); b = pd.read_parquet(B / camp / name)
        cols_a, cols_b = list(a.columns), list(b.columns)
        if cols_a != cols_b:
            print(f"{camp}/{name}: COLUMNS DIFFER\n  {cols_a}\n  {cols_b}"); ok = False; continue
        keep = [c for c in cols_a if c not in MEASURED and not c.endswith("_s")]
        if "layer_detail" in keep:   # sweep tune rows: per-layer JSON carries a measured wall_s
            strip = lambda s: json.dumps([{k: v for k, v in d.items() if k != "wall_s"} for d in json.loads(s)])
            a["layer_detail"] = a["layer_detail"].map(strip); b["layer_detail"] = b["layer_detail"].map(strip)
        a = a[keep].astype(str).sort_values(keep).reset_index(drop=True)
        b = b[keep].astype(str).sort_values(keep).reset_index(drop=True)
        same = a.equals(b)
        ntask = a["task_id"].nunique() if "task_id" in a else "-"
        print(f"{camp}/{name}: {len(a)} rows, {ntask} task_ids, {len(keep)} columns compared: "
              f"{'identical' if same else 'DIFFERENT'}")
        if not same:
            ok = False
            diff = a.compare(b) if a.shape == b.shape else None
            print(diff.head(20) if diff is not None else (a.shape, b.shape))
    ma = json.loads((A / camp / "manifest.json").read_text()); mb = json.loads((B / camp / "manifest.json").read_text())
    same = ma.get("config_hash") == mb.get("config_hash")
    print(f"{camp}/manifest config_hash: {'identical' if same else 'DIFFERENT'} {ma.get('config_hash', '')[:16]}")
    ok &= same
print("ALL IDENTICAL" if ok else "DIFFERENCES FOUND")
sys.exit(0 if ok else 1)
