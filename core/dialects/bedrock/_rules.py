"""What the Bedrock models that are not Claude accept in a request through Converse
(after the Claude rules; first match wins)."""

from __future__ import annotations

from typing import Final

from streamfn.core.catalogue._capability_spec import Capabilities, CapabilityRule

__all__ = ["CONVERSE_RULES"]

#: Converse has no seed; top_k goes through additionalModelRequestFields (Claude only).
#: https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-call.html
_CONVERSE_SAMPLING = ("temperature", "top_p", "stop")

# fmt: off
CONVERSE_RULES: Final[tuple[CapabilityRule, ...]] = (
    # -- other Bedrock models: Converse's own knobs, no thinking. Structured output rides on
    # a forced tool, which Converse takes from Claude and Nova only ("SpecificToolChoice:
    # only supported by Anthropic Claude 3 and Amazon Nova models", botocore's model); so
    # is prompt caching (cachePoint).
    # https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html
    CapabilityRule(apis=("bedrock",), family=r"amazon\.nova", capabilities=Capabilities(
        sampling=_CONVERSE_SAMPLING, thinking=False, structured_output="tool")),
    CapabilityRule(apis=("bedrock",), family=r"", capabilities=Capabilities(
        sampling=_CONVERSE_SAMPLING, thinking=False, structured_output="none",
        cache_breakpoints=0)),
)
# fmt: on
