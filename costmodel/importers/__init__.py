"""Readers of outside formats into model objects, one module per format, named for what it reads,
and the one TOML writer.

* `costmodel.importers.zoo_csv`: network CSV files (the zoo's format, and user files) -> `Network`;
* `costmodel.importers.onnx`: ONNX models (Conv / Gemm / MatMul nodes) -> `Network`;
* `costmodel.importers.zigzag`: a ZigZag hardware YAML + mapping YAML -> our accelerator TOML
  (`sweep import zigzag`);
* `costmodel.importers.toml_out`: every TOML file dse-sweep writes (through `tomli_w`);
* `costmodel.importers.errors`: `InputFormatError` (a ValueError) and one subclass per format.

The lowest layer (the cost model), so the zoo (`costmodel.zoo`, the data and its registry) and the
CLI both use it; it never imports `sweep`: the CLI maps these errors to its own (exit 2).
Submodules are imported on use (``from costmodel.importers.onnx import read_onnx``): the onnx and
yaml packages load only when a file of theirs is read.
"""

from costmodel.importers.errors import InputFormatError, OnnxError, ZigzagError, ZooCsvError

__all__ = ["InputFormatError", "OnnxError", "ZigzagError", "ZooCsvError"]
