"""Transformers: models from their Hugging Face config.json (the bundled ones in ``models/``, any
user's file), one builder of a prefill or decode step's operations, parameter counting, and one
chip's share of a step split over chips.

Modules: `config` (`TransformerConfig`, the shapes), `hf` (the config.json reader), `catalog` (the
bundled models; which model a name, file or step means), `params` (weights and parameter counts),
`attention` (masks, fusion, the score / context matmuls), `mla` (DeepSeek's latent attention),
`ffn` (dense FFN, experts, shared experts), `ops` (the vector operations, what is not costed),
`step` (a step's parameters), `shard` (tensor / pipeline / expert parallelism), `build` (the step).
"""

from costmodel.transformer.attention import ATTENTION, CAUSAL_BLOCK, FUSION, causal_blocks
from costmodel.transformer.build import WORKLOAD_PARAMS, build_transformer, parse_step_name
from costmodel.transformer.catalog import (config_of, file_info, is_config_file, list_transformers, resolve_model,
                                           transformer_config, transformer_info)
from costmodel.transformer.config import MODEL_KINDS, TransformerConfig
from costmodel.transformer.ffn import experts_touched
from costmodel.transformer.hf import read_hf_config
from costmodel.transformer.params import activated_params, param_count
from costmodel.transformer.step import PHASES, WEIGHT_BITS

__all__ = ["TransformerConfig", "list_transformers", "transformer_config", "transformer_info", "parse_step_name",
           "param_count", "activated_params", "build_transformer", "experts_touched", "MODEL_KINDS", "PHASES",
           "WEIGHT_BITS", "WORKLOAD_PARAMS", "ATTENTION", "CAUSAL_BLOCK", "FUSION", "causal_blocks", "config_of",
           "resolve_model", "read_hf_config", "file_info", "is_config_file"]
