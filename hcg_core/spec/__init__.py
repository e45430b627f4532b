"""Stage 1 artefacts: the domain spec's YAML form and its validation."""

from .validate import validate_graph, validate_spec
from .yaml_io import parse_call, spec_from_dict, spec_from_yaml, spec_to_dict, spec_to_yaml

__all__ = [
    "parse_call",
    "spec_from_dict",
    "spec_from_yaml",
    "spec_to_dict",
    "spec_to_yaml",
    "validate_graph",
    "validate_spec",
]
