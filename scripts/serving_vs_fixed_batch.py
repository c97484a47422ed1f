"""The request answer against the fixed-batch answer for the same designs: each design of a serving
campaign ranked by its goodput per mm^2 (the campaign's result) and by the step figures a fixed-batch
search ranks it by (a 2,048-token prefill's TTFT and a decode step's time per output token at batch
16, context 2,048, fused, per mm^2; `sweep.api.map_step`, the same mapper and seed as the cost
tables), with the largest batch each design's memory holds at that context.

    sweep run campaigns/llm_serving_requests.toml
    python scripts/serving_vs_fixed_batch.py campaigns/llm_serving_requests.toml results/llm_serving_requests
"""

from __future__ import annotations

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaign")
    ap.add_argument("results")
    ap.add_argument("--json")
    a = ap.parse_args()

    import pandas as pd

    from costmodel.loopnest.physics import design_area_mm2
    from sweep import api
    from sweep.kinds.load import load_campaign

    c = load_campaign(a.campaign)
    rows = api.load_results(a.results).rows
    ok = rows[rows["status"] == "ok"]
    best = ok.sort_values("goodput_rps", ascending=False).drop_duplicates("design")
    model = c.search.model["name"]
    out = []
    for d in c.architectures.designs:
        acc = d.accelerator()
        area = float(design_area_mm2(acc))
        fig = {"design": d.label, "note": d.note, "area_mm2": area}
        pre = api.map_step(model, acc, c.search.mapper, "latency", phase="prefill", seq=2048, fusion="fused")
        dec = api.map_step(model, acc, c.search.mapper, "latency", phase="decode", batch=16, context=2048, fusion="fused")
        fig.update(ttft_2048_s=pre.llm["ttft_s"], tpot_b16_s=dec.llm["time_per_token_s"],
                   decode_tokens_per_s_per_mm2=dec.llm["tokens_per_s"] / area, max_batch_ctx2048=dec.llm["max_batch"])
        g = best[best["design"] == d.label]
        fig["goodput_rps"] = float(g["goodput_rps"].iloc[0]) if len(g) else None
        fig["goodput_per_mm2"] = fig["goodput_rps"] / area if fig["goodput_rps"] is not None else None
        out.append(fig)
    df = pd.DataFrame(out)
    for k, asc in (("goodput_per_mm2", False), ("decode_tokens_per_s_per_mm2", False), ("ttft_2048_s", True)):
        df[f"rank_{k}"] = df[k].rank(ascending=asc, method="min").astype(int)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.to_string(index=False))
    if a.json:
        df.to_json(a.json, orient="records", indent=1)


if __name__ == "__main__":
    main()
