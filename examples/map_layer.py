"""Map one ResNet-18 layer on the Eyeriss-like accelerator with SALSA, print the loop nest and its
cost, then evaluate the mapping found (energy per memory level).

    python examples/map_layer.py                  # prints only; writes no file

The same layer from the command line:
    sweep map --arch eyeriss_like --network resnet18 --layer layer1.0.conv1 --mapper salsa \\
        --param iterations=300 --json
"""

from sweep import api

layer = api.load_layer("resnet18", "layer1.0.conv1")       # K=64 C=64 OY=OX=56 FY=FX=3
res = api.map_layer(layer, "eyeriss_like", "salsa", objective="energy", seed=0, iterations=300)
print(res.loop_nest)
print(f"energy {res.energy_pj:.7g} pJ, latency {res.latency_cycles:.7g} cycles, "
      f"EDP {res.edp:.7g} pJ x cycles, {res.evaluations} evaluations")

cost = api.evaluate(layer, "eyeriss_like", res)            # the reference model on that mapping
for operand, levels in cost.breakdown["operands"].items():
    print(operand, ", ".join(f"{lv['memory']} {lv['energy_pj']:.4g} pJ" for lv in levels))
