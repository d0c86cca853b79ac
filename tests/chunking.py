"""Ways to cut a byte (or text) stream into chunks, shared by the chunking tests.

One implementation with the public fuzzing strategies (`streamfn.fuzz._bytes`),
which users' own chunking tests use too.
"""

from streamfn.fuzz._bytes import by_sizes, bytewise, split_at

__all__ = ["by_sizes", "bytewise", "split_at"]
