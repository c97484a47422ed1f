"""The errors of the importers: one root, `InputFormatError` (a `ValueError`), and one subclass per
format, so a caller can catch every unreadable outside file at once or one format. The messages
name the file and where in it (line and column, YAML key, ONNX node) and the value. These live in
the cost model, below `sweep`: the CLI maps them to its own errors and exit codes (exit 2)."""

from __future__ import annotations

__all__ = ["InputFormatError", "ZooCsvError", "OnnxError", "ZigzagError"]


class InputFormatError(ValueError):
    """An outside file (network CSV, ONNX model, ZigZag YAML) that cannot be read or modelled."""


class ZooCsvError(InputFormatError):
    """A network CSV file (the zoo format, `costmodel.importers.zoo_csv`) is unreadable or invalid;
    the message names the file, line and, for a bad cell, the column and value."""


class OnnxError(InputFormatError):
    """An ONNX file (`costmodel.importers.onnx`) is unreadable or has a node we cannot turn into a
    layer; the message names the file and the node."""


class ZigzagError(InputFormatError):
    """A ZigZag hardware / mapping YAML (`costmodel.importers.zigzag`) we cannot read or model.

    Attributes: ``source`` (the file, or a command-line option), ``key`` (the YAML key path, e.g.
    ``memories.rf_16B.size``), ``value`` (what it holds) and ``message`` (what is wrong); the text
    is ``"{source}: {key} = {value!r}: {message}"``."""

    def __init__(self, source: str, key: str, value: object, message: str):
        self.source, self.key, self.value, self.message = source, key, value, message
        super().__init__(f"{source}: {key} = {value!r}: {message}")
