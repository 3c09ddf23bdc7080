"""The serialization layer: the binary format (:mod:`pyir.serialize.binary`), the JSON
format (:mod:`pyir.serialize.json_format`), and pickling through the binary format."""

from .binary import FORMAT_VERSION, MAGIC, SYMBOLIC_FORMAT_VERSION, dumps, load, loads, save
from .json_format import from_json, to_json

__all__ = ["dumps", "loads", "save", "load", "to_json", "from_json", "FORMAT_VERSION",
           "SYMBOLIC_FORMAT_VERSION", "MAGIC"]
