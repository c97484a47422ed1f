#!/bin/bash
# Exact commands used (AccelForge 1.0.467 in /tmp/af_venv, Python 3.12.1).
# Setup:
#   ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/af_venv && /tmp/af_venv/bin/pip install accelforge
#   cd /tmp/af_venv/lib/python3.12/site-packages/hwcomponents_cacti/cacti && rm -rf obj_dbg && make
#   apt-get update && apt-get install -y graphviz
set -e
cd "$(dirname "$0")"
P=/tmp/af_venv/bin/python
$P run_ffm.py --tokens 256  --mode fused   --jobs 2              # smoke test
$P run_ffm.py --tokens 2048 --mode fused   --jobs 2              # main result (tpu_v4i as shipped, GLB 128 MiB)
$P run_ffm.py --tokens 2048 --mode unfused --jobs 2              # MainMemory keeps All
$P run_ffm.py --tokens 2048 --mode fused   --jobs 2 --glb-mib 8  # variant: GLB shrunk -> tiled fusion
$P run_ffm.py --tokens 2048 --mode fused   --jobs 2 --glb-mib 1
$P run_ffm.py --tokens 2048 --bits 16 --mode fused   --jobs 2    # Llama-3 model-level precision
$P run_ffm.py --tokens 2048 --bits 16 --mode unfused --jobs 2
python3 summarize.py > results/summary.txt
