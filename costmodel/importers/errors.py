"""The errors of the importers: one root, `InputFormatError` (a `ValueError`), and one subclass per
format, so a caller can catch every unreadable outside file at once or one format. The messages
name the file and where in it (line and column, YAML key, ONNX node) and the value. These live in
the cost model, below `sweep`: the CLI maps them to its own errors and exit codes (exit 2)."""

from __future__ import annotations

__all__ = ["InputFormatError", "ZooCsvError", "OnnxError", "ZigzagError", "HfConfigError", "KeyedInputError"]


class InputFormatError(ValueError):
    """An outside file (network CSV, ONNX model, ZigZag YAML) that cannot be read or modelled."""


class ZooCsvError(InputFormatError):
    """A network CSV file (the zoo format, `costmodel.importers.zoo_csv`) is unreadable or invalid;
    the message names the file, line and, for a bad cell, the column and value."""


class OnnxError(InputFormatError):
    """An ONNX file (`costmodel.importers.onnx`) is unreadable or has a node we cannot turn into a
    layer; the message names the file and the node."""


class KeyedInputError(InputFormatError):
    """An outside file whose problem sits at a key: ``source`` (the file, or a command-line option),
    ``key`` (the key path), ``value`` (what it holds; None when missing) and ``message`` (what is
    wrong); the text is ``"{source}: {key} = {value!r}: {message}"``."""

    def __init__(self, source: str, key: str, value: object, message: str):
        self.source, self.key, self.value, self.message = source, key, value, message
        super().__init__(f"{source}: {key} = {value!r}: {message}")


class ZigzagError(KeyedInputError):
    """A ZigZag hardware / mapping YAML (`costmodel.importers.zigzag`) we cannot read or model; the
    key is a YAML key path (``memories.rf_16B.size``)."""


class HfConfigError(KeyedInputError):
    """A Hugging Face ``config.json`` (`costmodel.transformer.hf`) we cannot read or model; the key
    is a config field (``num_attention_heads``)."""
