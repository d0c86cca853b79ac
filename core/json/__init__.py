"""JSON as the core reads it: schemas, structured output, and JSON still arriving.

JSON Schema from a type or a dict, the small validator tool calls and answers are
checked with, structured output's one schema per request, tool arguments parsed a
few characters at a time, JSON equality, and the shape and step budget that bound
what a client's JSON can cost. Users import these names from `streamfn.core`; this
package's modules are private.
"""

__all__: list[str] = []
