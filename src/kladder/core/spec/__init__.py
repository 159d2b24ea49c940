"""What a kernel's author knows: argument shapes as symbols, dtypes, dim ranges and tiles,
the widths real models use, accepted configs, production shapes, tolerances, and what one rung
needs in a part of its own.

A Spec never holds a failing point. Every field is normalised once, at construction (a str
or a list becomes a tuple, a torch dtype its name), then validated: each field by its row of a
table (SPEC_FIELDS, TENSOR_FIELDS, ...), then the rules that relate fields. Every problem is
collected, and one SpecError lists them all, each naming the field, what was given and the fix.

The package: fields.py (the core's fields: Dim, Tensor, Out, Size, Config, Invariant, Tolerance),
parts.py (the rung parts and a `when`'s predicates), validation.py (the tables and rules), core.py
(kl.Spec). Every public name is here: `from kladder.core.spec import X` reads it from one place.
"""
from ..problems import Problem, SpecError, where_text
from ..problems import shown as _shown  # noqa: F401  (read as kladder.core.spec._shown)
from .fields import (DTYPES, FLOAT_DTYPES, PRODUCT, symbol_dims, symbol_size, Dim, VALUE_KINDS, DEFAULT_FLOAT_VALUES, LAYOUTS, NONFINITE_POLICIES, Tensor,
                     Invariant, Size, Config, Out, Tolerance, DEFAULT_TOLERANCES, BACKWARD, GRADIENT, declared_at, grad_name,
                     upstream_name)
from .parts import (Expect, BOOLS, DTYPE_KEY, is_dtype_key, EDGE_SCAN, EDGES_KEPT, is_predicate, when_holds, PredicateError, predicate_edges,
                    when_sizes, when_text, Flag, Calls, COLLECTIVE_REFERENCES, Collective, Repetition, Toolchain, InModel,
                    Modes, PART_CLASSES, MOVED)
from .validation import (Rule, REFERENCE_FIX, SPEC_FIELDS, MODES_FIELDS, REPETITION_FIELDS, TOOLCHAIN_FIELDS,
                         INMODEL_FIELDS, PARTS, TENSOR_FIELDS, TILE_FIX, DIM_FIELDS, COLLECTIVE_FIELDS, EXPECT_FIELDS,
                         FLAG_FIELDS, CALLS_FIELDS, INVARIANT_FIELDS, validate, DTYPE_HINTS, launcher_defaults, when_keys,
                         WHEN_FORMS, specifier_problem, GRADS_FIX, POINT_TIMEOUT_S, representable_range)
from .core import Spec

__all__ = ["Problem", "SpecError", "where_text", "DTYPES", "FLOAT_DTYPES", "PRODUCT", "symbol_dims", "symbol_size", "Dim", "VALUE_KINDS", "DEFAULT_FLOAT_VALUES",
           "LAYOUTS", "NONFINITE_POLICIES", "Tensor", "Invariant", "Size", "Config", "Out", "Tolerance",
           "DEFAULT_TOLERANCES", "BACKWARD", "GRADIENT", "declared_at", "grad_name", "upstream_name", "Expect", "BOOLS", "DTYPE_KEY", "is_dtype_key", "EDGE_SCAN",
           "EDGES_KEPT", "is_predicate", "when_holds", "PredicateError", "predicate_edges", "when_sizes", "when_text",
           "Flag", "Calls", "COLLECTIVE_REFERENCES", "Collective", "Repetition", "Toolchain", "InModel", "Modes",
           "PART_CLASSES", "MOVED", "Rule", "REFERENCE_FIX", "SPEC_FIELDS", "MODES_FIELDS", "REPETITION_FIELDS",
           "TOOLCHAIN_FIELDS", "INMODEL_FIELDS", "PARTS", "TENSOR_FIELDS", "TILE_FIX", "DIM_FIELDS", "COLLECTIVE_FIELDS",
           "EXPECT_FIELDS", "FLAG_FIELDS", "CALLS_FIELDS", "INVARIANT_FIELDS", "validate", "DTYPE_HINTS",
           "launcher_defaults", "when_keys", "WHEN_FORMS", "specifier_problem", "GRADS_FIX", "POINT_TIMEOUT_S",
           "representable_range", "Spec"]
