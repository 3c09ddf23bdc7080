"""The analysis layer: type inference, the reference interpreter, equality and diff, and Relay's
program analyses by their Relay names (``pyir.analysis.all_vars``, ``detect_feature``, ...)."""

from .features import FEATURES, all_vars, bound_vars, detect_feature, free_type_vars, free_vars, well_formed

__all__ = ["FEATURES", "all_vars", "bound_vars", "detect_feature", "free_type_vars", "free_vars",
           "well_formed"]
