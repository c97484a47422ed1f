"""Write ``model.onnx``: ResNet-18's stem and first residual block, then a classifier, with the node
names ``torch.onnx.export`` gives torchvision's ResNet-18 (``/conv1/Conv``,
``/layer1/layer1.0/conv1/Conv``, ...), for the commands of docs/networks.md.

    python examples/onnx_model.py [OUT]      # default: model.onnx in the current directory

The shapes are ResNet-18's (He et al., CVPR 2016, Table 1: conv1 7x7/2 with 64 filters, a 3x3/2
max-pool, conv2_x's 3x3 x 64 convolutions at 56 x 56); the classifier here reads the block's 64
channels (ResNet-18's reads 512). No weight data: the weights are declared as external data in a
file that is never written (the importer reads shapes only), so the file is a few kB. Any model
exported to ONNX works the same way.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper


def _weight(name: str, shape: tuple[int, ...]) -> TensorProto:
    """A float32 initializer of ``shape`` whose data live in a file that does not exist."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape), data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(4 * math.prod(shape)))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def resnet18_head() -> onnx.ModelProto:
    """input [1, 3, 224, 224] -> conv1 -> relu -> maxpool -> layer1.0 (conv1, relu, conv2, + the
    block's input, relu) -> global average pool -> flatten -> fc (64 -> 1000)."""
    n = helper.make_node
    b = "/layer1/layer1.0"
    nodes = [
        n("Conv", ["input", "conv1.weight"], ["c1"], name="/conv1/Conv", kernel_shape=[7, 7], strides=[2, 2],
          pads=[3, 3, 3, 3]),
        n("Relu", ["c1"], ["r1"], name="/relu/Relu"),
        n("MaxPool", ["r1"], ["p1"], name="/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Conv", ["p1", "layer1.0.conv1.weight"], ["b1"], name=f"{b}/conv1/Conv", kernel_shape=[3, 3],
          pads=[1, 1, 1, 1]),
        n("Relu", ["b1"], ["b1r"], name=f"{b}/relu/Relu"),
        n("Conv", ["b1r", "layer1.0.conv2.weight"], ["b2"], name=f"{b}/conv2/Conv", kernel_shape=[3, 3],
          pads=[1, 1, 1, 1]),
        n("Add", ["b2", "p1"], ["s"], name=f"{b}/Add"),
        n("Relu", ["s"], ["sr"], name=f"{b}/relu_1/Relu"),
        n("GlobalAveragePool", ["sr"], ["g"], name="/avgpool/GlobalAveragePool"),
        n("Flatten", ["g"], ["f"], name="/Flatten", axis=1),
        n("Gemm", ["f", "fc.weight", "fc.bias"], ["output"], name="/fc/Gemm", transB=1),
    ]
    inits = [_weight("conv1.weight", (64, 3, 7, 7)), _weight("layer1.0.conv1.weight", (64, 64, 3, 3)),
             _weight("layer1.0.conv2.weight", (64, 64, 3, 3)), _weight("fc.weight", (1000, 64)),
             _weight("fc.bias", (1000,))]
    graph = helper.make_graph(nodes, "resnet18_head",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1000])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "model.onnx")
    out.write_bytes(resnet18_head().SerializeToString())
    print(f"wrote {out.resolve()} ({out.stat().st_size:,} bytes): ResNet-18's stem and first block, no weight data")


if __name__ == "__main__":
    main()
