"""The loopback fake provider now lives in the package (`streamfn.fuzz._fake_provider`);
the tests keep importing it by this short name."""

from streamfn.fuzz._fake_provider import *  # noqa: F403
