"""The pure decisions of a stream's stages, which `streamfn.client` applies.

When to retry before any output, which failure falls back to the next model,
which model goes to the Responses API, how a paused turn or a cut stream goes on
(`Splice`), how tool calls are checked and repaired, read from text, and traced,
and structured output as it grows. Each is a decision without I/O; the stages
that await live in `streamfn.client`. Users import these names from
`streamfn.core`; this package's modules are private.
"""

__all__: list[str] = []
