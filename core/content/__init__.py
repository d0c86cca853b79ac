"""Content beyond text, as data: attachments, citations, provider-run tools, cache points.

Images and documents by URL or bytes, the citations a provider gives for a text
block, provider-run tools (web search, code execution) beside function tools, and
where prompt-cache breakpoints go. Users import these names from `streamfn.core`;
this package's modules are private.
"""

__all__: list[str] = []
